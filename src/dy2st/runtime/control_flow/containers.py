"""Python lists, dicts and sets that a tensor loop would change in place: refused with a clear error.

A tensor loop traces its body once (or a few times) while the graph is built, so ``outs.append(h)``
inside it appends a value that only exists inside the loop's region, once per trace rather than
once per iteration. Using the list afterwards used to fail deep in the optimizer. Before the body
is traced, ``snapshot_containers`` records every list, dict and set the loop's functions can reach
through their closures (the variables of the enclosing function) or names as module globals;
``check_unchanged`` then raises a
``GraphBuildError`` at the loop's line naming the first one the trace changed.

A container the loop *carries* (a list of arrays rebound or updated leaf by leaf) is never changed
in place: the loop traces its body on a fresh copy bound to the variable, so it passes the check.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dy2st.errors import GraphBuildError, SourceLocation

_CONTAINERS = (list, dict, set)
_DY2ST_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_MAX_DEPTH = 4  # loop functions are wrapped a few times by the runtime (for, break, flags)
_NOTE = (
    "a tensor loop runs its body once, while the graph is built, so it cannot grow a Python "
    "container: write into a preallocated array instead (a = np.zeros(...) before the loop, "
    "a[i] = v in it), or loop over a Python range and np.stack the list after the loop"
)


@dataclass
class _Snapshot:
    name: str
    container: Any
    contents: list  # what the container held: items, (key, value) pairs, or set members


def _contents(container: Any) -> list:
    if isinstance(container, dict):
        return list(container.items())
    return list(container)


def snapshot_containers(functions: list[Callable[..., Any]]) -> list[_Snapshot]:
    """The lists, dicts and sets reachable through the closures of ``functions`` or named as
    globals by them, and their contents."""
    collector = _Collector()
    for fn in functions:
        collector.visit(fn, 0)
    return collector.snapshots


class _Collector:
    """Walks loop functions and the functions they close over, snapshotting user containers."""

    def __init__(self) -> None:
        self.snapshots: list[_Snapshot] = []
        self.seen: set[int] = set()

    def record(self, name: str, value: Any) -> None:
        if id(value) not in self.seen:
            self.seen.add(id(value))
            self.snapshots.append(_Snapshot(name, value, _contents(value)))

    def visit(self, fn: Any, depth: int) -> None:
        if not isinstance(fn, types.FunctionType) or id(fn) in self.seen or depth > _MAX_DEPTH:
            return
        self.seen.add(id(fn))
        users = not fn.__code__.co_filename.startswith(_DY2ST_DIR)  # dy2st's own boxes are fine
        for name, value in _closure_values(fn):
            if not isinstance(value, _CONTAINERS):
                self.visit(value, depth + 1)
            elif users:
                self.record(name, value)
        if users:
            for name, value in _global_containers(fn):
                self.record(name, value)


def _global_containers(fn: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """Module-level containers ``fn`` names (``LOG.append(v)``, ``STATE["n"] += 1``): changed by
    a trace, they would change once, not once per iteration."""
    for name in fn.__code__.co_names:
        value = fn.__globals__.get(name)
        if isinstance(value, _CONTAINERS):
            yield name, value


def _closure_values(fn: types.FunctionType) -> Iterator[tuple[str, Any]]:
    """(name, value) of each bound variable ``fn`` closes over."""
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            yield name, cell.cell_contents
        except ValueError:  # an empty cell: a variable not bound yet
            continue


def _unchanged(snapshot: _Snapshot) -> bool:
    now = _contents(snapshot.container)
    if isinstance(snapshot.container, set):
        return set(now) == set(snapshot.contents)
    if len(now) != len(snapshot.contents):
        return False
    if isinstance(snapshot.container, dict):
        return all(k is k0 or k == k0 for (k, _), (k0, _) in zip(now, snapshot.contents)) and all(
            v is v0 for (_, v), (_, v0) in zip(now, snapshot.contents)
        )
    return all(a is b for a, b in zip(now, snapshot.contents))


def _restore(snapshot: _Snapshot) -> None:
    container = snapshot.container
    if isinstance(container, list):
        container[:] = snapshot.contents
    elif isinstance(container, dict):
        container.clear()
        container.update(snapshot.contents)
    else:
        container.clear()
        container.update(snapshot.contents)


_IF_NOTE = (
    "both branches of a tensor 'if' are traced while the graph is built, so a change to a Python "
    "container in a branch would happen whichever branch runs: assign arrays in the branches "
    "(y = ...) and change the container after the 'if'"
)


def check_unchanged(snapshots: list[_Snapshot], loc: SourceLocation | None, construct: str = "loop") -> None:
    """Raise if tracing a tensor loop (or the branches of a tensor ``if``) changed one of the
    snapshotted containers in place.

    The containers are put back as they were first, so that a build that goes on without this
    loop (unrolling it, ``rolling.py``) changes them as eager code does.

    Raises:
        GraphBuildError: at the loop's (or if's) line, naming the variable that holds the container.
    """
    for snapshot in snapshots:
        if not _unchanged(snapshot):
            for each in snapshots:  # the trace's changes undone: the error leaves them as they were
                _restore(each)
            kind = type(snapshot.container).__name__
            raise GraphBuildError(
                f"'{snapshot.name}' is a Python {kind} that this tensor {construct} changes in place "
                f"(append, extend, item assignment...); a tensor {construct} cannot change a Python {kind}",
                loc,
                _NOTE if construct == "loop" else _IF_NOTE,
            )
