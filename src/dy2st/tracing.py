"""``dy2st.trace``: graphs recorded by running a function once, with guards (docs/tracing.md).

A traced function is not transformed: dy2st calls the original Python function with symbolic
tensors that also hold the values computed from the call's real arguments, so it works where
the source cannot be read (lambdas, functions made by ``exec``). Python's own control flow runs
as Python; each decision it takes on a tensor's value (``bool()`` of a comparison in an ``if``,
``int()``, ``float()``, ``.item()``, ``operator.index``, ``len()`` of a size that depends on
the values) is baked into the graph. Each is reported by a ``TracerWarning`` naming the file
and line, and the graph outputs the value it was taken on: every call checks that each decision
comes out the same, and when one does not, the function is traced again for those arguments (a
new graph), so a traced function never returns the result of a path the arguments do not take.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dy2st.backend.numba.executor import chosen_backend, make_executor, tier_passes
from dy2st.backend.numpy.executor import Executor
from dy2st.backend.numpy.lowering import numpy_passes
from dy2st.errors import ConversionError, public_api
from dy2st.ir.core import Graph
from dy2st.ir.symbolic import numbering_data_dependent_sizes, recording_guards
from dy2st.passes import optimize
from dy2st.runtime.pytree import flatten, unflatten
from dy2st.runtime.staging import Program
from dy2st.runtime.staging import trace as stage
from dy2st.staging.builder import DECISION_KINDS

_BUILD_LOCK = threading.RLock()
MAX_TRACES = 8
"""Graphs kept per input signature; beyond them a call runs the Python function (with a warning)."""


class TracerWarning(UserWarning):
    """A decision on a tensor's value that ``dy2st.trace`` baked into a graph, or a function
    traced too many times."""


@dataclass
class _Trace:
    """One traced graph: the decisions it was traced under and how to run it."""

    program: Program
    graph: Graph
    executor: Executor

    def run(self, leaves: list[Any]) -> tuple[bool, Any]:
        """Run the graph; (False, None) when a decision comes out otherwise than when it was
        traced (then no argument has been changed)."""
        program = self.program
        written = set(program.writebacks.values())
        arrays = [*leaves, *(source.read() for source in program.capture_sources)]
        given = [a.copy() if i in written else a for i, a in enumerate(arrays)]  # updated once it holds
        outputs = self.executor.run(*given)
        checks = outputs[program.decisions_start :]
        for decision, value in zip(program.decisions, checks):
            if not _same(DECISION_KINDS[decision.kind](value), decision.decided):
                return False, None
        for index in written:
            np.copyto(arrays[index], given[index])
        return True, unflatten(program.output_treedef, outputs[: program.num_results])


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


class TracedFunction:
    """A function converted by ``dy2st.trace``; call it like the original.

    Attributes:
        fn: the original function.
    """

    def __init__(self, fn: Callable[..., Any], backend: str | None = None):
        if not callable(fn):
            raise ConversionError(f"dy2st.trace takes a function, not {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.signature = inspect.signature(fn)
        self.backend = chosen_backend(backend)
        self._cache: dict[tuple[Any, ...], list[_Trace]] = {}
        self._warned_too_many = False

    @property
    def num_graphs(self) -> int:
        """How many graphs were traced (one per input signature and set of decisions)."""
        return sum(len(traces) for traces in self._cache.values())

    @public_api
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(args, kwargs)

    @public_api
    def graph(self, *args: Any, **kwargs: Any) -> Graph:
        """The graph these arguments run (traced now if no graph's decisions hold for them)."""
        key, arguments, leaves = self._bind(args, kwargs)
        for traced in self._cache.get(key, []):
            if traced.run([leaf.copy() if isinstance(leaf, np.ndarray) else leaf for leaf in leaves])[0]:
                return traced.graph
        return self._trace(key, arguments, leaves).graph

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        leaves: list[Any] = []
        key = tuple(flatten(v, leaves) for v in bound.arguments.values())
        return key, bound.arguments, leaves

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key, arguments, leaves = self._bind(args, kwargs)
        traces = self._cache.get(key, [])
        for traced in traces:
            held, result = traced.run(leaves)
            if held:
                return result
        if len(traces) >= MAX_TRACES:
            if not self._warned_too_many:
                self._warned_too_many = True
                warnings.warn(
                    f"dy2st.trace: {self.fn.__qualname__} was traced {MAX_TRACES} times for one input signature "
                    "(its decisions keep coming out differently); it now runs as Python for such calls. "
                    "dy2st.to_static converts its control flow into the graph instead",
                    TracerWarning,
                    stacklevel=3,
                )
            return self.fn(*args, **kwargs)
        traced = self._trace(key, arguments, leaves)
        held, result = traced.run(leaves)
        if not held:  # the function decided otherwise on the same values: it is not deterministic
            return self.fn(*args, **kwargs)
        return result

    def _trace(self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any]) -> _Trace:
        with _BUILD_LOCK, recording_guards(), numbering_data_dependent_sizes():
            program = stage(self.fn, self.signature, arguments, getattr(self.fn, "__name__", "traced"), concrete=True)
            graph = optimize(program.graph, passes=[*numpy_passes(), *tier_passes(self.backend)])
            executor = make_executor(graph, program.writebacks, self.backend)
        for decision in program.decisions:
            _warn_baked(decision, self.fn)
        traced = _Trace(program, graph, executor)
        self._cache.setdefault(key, []).append(traced)
        return traced

    def __repr__(self) -> str:
        return f"<dy2st.TracedFunction {getattr(self.fn, '__qualname__', self.fn)!r}>"


def _warn_baked(decision: Any, fn: Callable[..., Any]) -> None:
    """A TracerWarning at the user's line of a decision baked into a graph."""
    what = {"len": "the length", "item": ".item()", "index": "an index"}.get(decision.kind, f"{decision.kind}()")
    message = (
        f"dy2st.trace baked {what} of a tensor into the graph of {getattr(fn, '__qualname__', fn)} "
        f"(here it was {decision.decided!r}); every call checks it and traces again where it differs"
    )
    loc = decision.loc
    if loc is None:
        warnings.warn(message, TracerWarning, stacklevel=4)
    else:
        warnings.warn_explicit(message, TracerWarning, loc.filename, loc.lineno)


@public_api
def trace(fn: Callable[..., Any] | None = None, *, backend: str | None = None) -> Any:
    """Convert ``fn`` by tracing: run it on the first call's arguments, recording the NumPy
    operations it performs into a graph, with each Python decision taken on a tensor checked by
    the graph on later calls (docs/tracing.md). Usable as ``@dy2st.trace`` or ``dy2st.trace(fn)``.

    Unlike ``to_static``, the function's source is never read or transformed, so lambdas and
    functions made by ``exec`` trace; Python ``if``/``for``/``while`` on tensor values record the
    path taken, and a call whose values would take another path traces a new graph.
    """
    if fn is None:
        return public_api(lambda f: TracedFunction(f, backend))
    return TracedFunction(fn, backend)
