"""Shrink a failing program to a small one that fails the same way (same category and signature).

Greedy and syntax-directed: delete runs of statements (a whole block, then halves, ..., then
single statements), replace an ``if``/``for``/``while`` by its body, drop ``else`` blocks, and
replace expressions by one of their parts (``a and b`` by ``a``, a ternary by a side,
``s * 0.5 + t`` by ``t``, a returned tuple by fewer items). Edits of outer code come first. After
an edit that keeps the failure the search goes on from the same place in the new program's list
of edits, and stops when a whole round of edits fails or the time budget runs out. The calls
are the failing call and those before it (state carries over from call to call).
"""

from __future__ import annotations

import ast
import builtins
import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .program import Program
from .running import Failure, run_program

Path_ = tuple[tuple[str, int | None], ...]  # fields (and list indices) from the module to a node
COMPOUND = (ast.If, ast.For, ast.While)
SECONDS_PER_CANDIDATE_CALL = 5  # deleting a loop counter's update makes some candidates loop forever
BODIES = ("body", "orelse")


@dataclass(frozen=True)
class Slot:
    """Where a node sits: ``parent.name`` or ``parent.name[index]``."""

    parent: ast.AST
    name: str
    index: int | None

    def replace(self, new) -> None:
        """Put ``new`` in the slot: an expression, or a list of statements spliced into a body."""
        if self.index is None:
            setattr(self.parent, self.name, new)
            return
        items = getattr(self.parent, self.name)
        if isinstance(new, list):
            items[self.index : self.index + 1] = new
            _keep_body(self.parent, self.name)
        else:
            items[self.index] = new


@dataclass(frozen=True)
class Edit:
    path: Path_
    change: Callable[[ast.AST, Slot], None]  # applied to the node at ``path`` in a copy


def reduce_program(program: Program, failure: Failure, directory: Path, seconds: float) -> tuple[Program, Failure]:
    """The smallest program found within ``seconds`` that still fails like ``failure``, and how
    it fails."""
    target = (failure.category, failure.signature)
    smallest = (program, failure)
    tried: set[str] = set()

    def fails_alike(source: str) -> bool:
        nonlocal smallest
        if source in tried:
            return False
        tried.add(source)
        candidate = replace(program, source=source, calls=program.calls[: failure.call_index + 1])
        try:
            found = run_program(candidate, directory, SECONDS_PER_CANDIDATE_CALL)
        except Exception:  # the module itself no longer runs (a deleted global its defaults name)
            return False
        if found is None or (found.category, found.signature) != target:
            return False
        smallest = (candidate, found)
        return True

    tree = ast.parse(program.source)
    deadline = time.monotonic() + seconds
    edits, position, failed_in_a_row = _edits(tree), 0, 0
    while failed_in_a_row < len(edits) and time.monotonic() < deadline:
        candidate = _apply(tree, edits[position % len(edits)])
        if not _unbound_names(candidate) and fails_alike(ast.unparse(candidate) + "\n"):
            tree, edits, failed_in_a_row = candidate, _edits(candidate), 0
        else:
            position, failed_in_a_row = position + 1, failed_in_a_row + 1
    return smallest


def _unbound_names(tree: ast.Module) -> set[str]:
    """Names the program reads but never binds: after deleting an assignment, a read on a path
    that never runs still lets eager code run, but no user writes such a program."""
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name)
    return read - bound


def _edits(tree: ast.Module) -> list[Edit]:
    sites = sorted(_walk(tree), key=lambda site: len(site[1]))
    return [edit for kind in (_delete_runs, _unwrap, _drop_else, _simplify) for site in sites for edit in kind(*site)]


def _walk(node: ast.AST, path: Path_ = ()) -> Iterator[tuple[ast.AST, Path_]]:
    yield node, path
    for name, value in ast.iter_fields(node):
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield from _walk(item, (*path, (name, i)))
        elif isinstance(value, ast.AST):
            yield from _walk(value, (*path, (name, None)))


def _apply(tree: ast.Module, edit: Edit) -> ast.Module:
    new = copy.deepcopy(tree)
    node: ast.AST = new
    slot = Slot(new, "", None)
    for name, index in edit.path:
        slot = Slot(node, name, index)
        node = getattr(node, name) if index is None else getattr(node, name)[index]
    edit.change(node, slot)
    return ast.fix_missing_locations(new)


def _keep_body(node: ast.AST, name: str) -> None:
    if name == "body" and not getattr(node, name):
        node.body.append(ast.Pass())  # type: ignore[attr-defined]


# --- the kinds of edits --------------------------------------------------------------------------
def _delete_runs(node: ast.AST, path: Path_) -> Iterator[Edit]:
    """Delete the whole block, then each half, each quarter, ..., each statement."""
    for name in BODIES:
        body = getattr(node, name, None)
        if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
            continue
        size = len(body)
        while size >= 1:
            for start in range(0, len(body), size):
                yield Edit(path, _deleter(name, start, start + size))
            size //= 2


def _deleter(name: str, start: int, stop: int):
    def change(node: ast.AST, slot: Slot) -> None:
        body = getattr(node, name)
        kept = [s for s in body[start:stop] if isinstance(s, (ast.Import, ast.FunctionDef))]
        body[start:stop] = kept  # the function and the imports are never what fails
        _keep_body(node, name)

    return change


def _replacer(new) -> Callable[[ast.AST, Slot], None]:
    return lambda node, slot: slot.replace(copy.deepcopy(new))


def _unwrap(node: ast.AST, path: Path_) -> Iterator[Edit]:
    if isinstance(node, COMPOUND):
        yield Edit(path, _replacer(node.body))
        if isinstance(node, ast.If) and node.orelse:
            yield Edit(path, _replacer(node.orelse))


def _drop_else(node: ast.AST, path: Path_) -> Iterator[Edit]:
    if isinstance(node, COMPOUND) and node.orelse:
        yield Edit(path, lambda node, slot: setattr(node, "orelse", []))


def _simplify(node: ast.AST, path: Path_) -> Iterator[Edit]:
    for part in _parts(node, path):
        yield Edit(path, _replacer(part))


def _parts(node: ast.AST, path: Path_) -> list[ast.expr]:
    if isinstance(node, ast.BoolOp):
        return list(node.values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [node.operand]
    if isinstance(node, ast.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Tuple) and path and path[-1][0] == "value" and len(node.elts) > 1:
        shorter = [node.elts[:i] + node.elts[i + 1 :] for i in range(len(node.elts))]
        return [rest[0] if len(rest) == 1 else ast.Tuple(rest, ast.Load()) for rest in shorter]
    return []
