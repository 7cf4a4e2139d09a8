"""``to_static`` and ``StaticFunction``: convert once, build a graph per input signature, run it.

A call binds the arguments, flattens them into array leaves plus a structure (the cache key: the
shape and dtype of each array, the value of each Python constant), finds or builds the graph for
that key, reads the captured global arrays afresh, runs the compiled graph and rebuilds the result.

Calls passing every parameter positionally as an ndarray take a fast path (``build_fast_call``): the key is
the (shape, dtype) of each argument and everything else is precomputed per graph, so a call costs
about a microsecond on top of the graph's own work (see docs/performance.md).
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from dy2st.backend.numpy.executor import Executor
from dy2st.backend.numpy.lowering import numpy_passes
from dy2st.errors import UnsupportedSyntaxError
from dy2st.frontend.convert import convert_code
from dy2st.ir.core import Graph
from dy2st.ir.verifier import verify
from dy2st.passes import optimize
from dy2st.passes.pipeline import VERIFY_EVERY_PASS
from dy2st.runtime.captures import GlobalSource
from dy2st.runtime.functions import converted_function, register_wrapper_type
from dy2st.runtime.pytree import flatten, unflatten
from dy2st.runtime.staging import Program, trace


@dataclass
class CompiledProgram:
    """A staged, optimized and compiled graph for one input signature."""

    program: Program
    graph: Graph
    executor: Executor


# Returned by a generated fast call when an argument, capture or guard no longer fits its graph.
_CHANGED = object()


def _positional_arity(signature: inspect.Signature) -> int:
    """How many arguments a call passing every parameter positionally has (-1: no such call,
    because of ``*args``, ``**kwargs`` or keyword-only parameters)."""
    kinds = {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD}
    if any(p.kind not in kinds for p in signature.parameters.values()):
        return -1
    return len(signature.parameters)


def build_fast_call(compiled: CompiledProgram, arity: int) -> Callable[[tuple[Any, ...]], Any]:
    """Generate the call of one compiled program for ``arity`` positional ndarray arguments.

    Everything that does not depend on the argument values is baked in: how each capture is
    read (a module global is one dict lookup), the type each capture must still have, whether
    guards exist, how outputs are returned. The function returns ``_CHANGED`` when an argument is
    not exactly an ndarray, a capture was rebound to an array of another type, or a guarded
    Python global changed; the caller then takes the general path. Example, two args, one global::

        def fast_call(args):
            x0, x1 = args
            if type(x0) is not ndarray or type(x1) is not ndarray:
                return CHANGED
            c0 = ns0.get('W')
            if not isinstance(c0, ndarray) or c0.shape != S0 or (c0.dtype is not D0 and c0.dtype != D0):
                return CHANGED
            return run(x0, x1, c0)[0]
    """
    program = compiled.program
    names = {
        "ndarray": np.ndarray,
        "CHANGED": _CHANGED,
        "run": compiled.executor.run,
        "unflatten": unflatten,
        "treedef": program.output_treedef,
        "guards_hold": program.guards_hold,
    }
    xs = [f"x{i}" for i in range(arity)]
    lines = ["def fast_call(args):"]
    if xs:
        lines += [
            f"    {', '.join(xs)}, = args",
            f"    if {' or '.join(f'type({x}) is not ndarray' for x in xs)}:",
            "        return CHANGED",
        ]
    cs = []
    for i, (source, value) in enumerate(zip(program.capture_sources, program.graph.captures)):
        c = f"c{i}"
        cs.append(c)
        if isinstance(source, GlobalSource):
            names[f"ns{i}"] = source.namespace
            lines.append(f"    {c} = ns{i}.get({source.name!r})")
        else:
            names[f"read{i}"] = source.read
            lines.append(f"    {c} = read{i}()")
        names[f"S{i}"], names[f"D{i}"] = value.type.shape, value.type.dtype
        lines += [
            f"    if not isinstance({c}, ndarray) or {c}.shape != S{i}"
            f" or ({c}.dtype is not D{i} and {c}.dtype != D{i}):",
            "        return CHANGED",
        ]
    if program.guards:
        lines += ["    if not guards_hold():", "        return CHANGED"]
    call = f"run({', '.join(xs + cs)})"
    if program.output_treedef == ("A",):
        lines.append(f"    return {call}[0]")
    else:
        lines.append(f"    return unflatten(treedef, {call}[:{program.num_results}])")
    exec(_fast_call_code("\n".join(lines) + "\n"), names)
    fast_call: Any = names["fast_call"]
    fast_call.__code__ = fast_call.__code__.replace(co_filename=f"<dy2st fast call {compiled.graph.name}>")
    return cast(Callable[[tuple[Any, ...]], Any], fast_call)


@functools.lru_cache(maxsize=256)
def _fast_call_code(source: str) -> types.CodeType:
    """The compiled fast-call source. Graphs with the same arity and captures share the text, and
    compiling it again cost 0.15 ms, a twentieth of a warm first call."""
    return compile(source, "<dy2st fast call>", "exec")


class StaticFunction:
    """A function converted by ``to_static``; call it like the original.

    Attributes:
        fn: the original Python function.
        code: the transformed Python source (what ``dy2st dump`` prints).
    """

    def __init__(self, fn: Callable[..., Any], *, fallback: bool = False, optimize: bool = True):
        if isinstance(fn, (staticmethod, classmethod)):
            raise TypeError("apply @to_static below @staticmethod/@classmethod")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.fallback = fallback
        self.optimize = optimize
        self.signature = inspect.signature(fn)
        self._cache: dict[tuple[Any, ...], list[CompiledProgram]] = {}
        self._fell_back = False
        self._fast_calls: dict[tuple[Any, ...], Callable[[tuple[Any, ...]], Any]] = {}
        self._positional_arity = _positional_arity(self.signature)

    # --- introspection -------------------------------------------------------------------
    @property
    def code(self) -> str:
        """The transformed Python source of the function."""
        return convert_code(self.fn).source

    def graph(self, *args: Any, optimize: bool = True, **kwargs: Any) -> Graph:
        """The graph for this input signature (after the optimizing passes unless ``optimize=False``)."""
        key, arguments, _ = self._bind(args, kwargs)
        if not optimize:
            return self._stage(arguments).graph
        return self._compiled(key, arguments).graph

    def executor_source(self, *args: Any, **kwargs: Any) -> str:
        """The Python source the backend generated for this input signature."""
        key, arguments, _ = self._bind(args, kwargs)
        return self._compiled(key, arguments).executor.source

    @property
    def num_graphs(self) -> int:
        """How many graphs are cached (one per input signature seen)."""
        return sum(len(v) for v in self._cache.values())

    # --- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Fast path: every parameter given positionally as an ndarray. The key is the tuple of
        # (shape, dtype) pairs, which is all the signature holds for such a call, so no binding
        # or flattening is needed; the generated call checks the argument types itself.
        if not kwargs and len(args) == self._positional_arity:
            result = self._call_fast((), args)
            if result is not _CHANGED:
                return result
        return self._call_slow(args, kwargs)

    def _call_bound(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``obj.method(*args)``: the same fast path, keyed also by the instance (each instance
        has graphs of its own, and the cache keeps it alive, so its id stays unique)."""
        if not kwargs and len(args) + 1 == self._positional_arity:
            result = self._call_fast((id(instance),), args)
            if result is not _CHANGED:
                return result
        return self._call_slow((instance, *args), kwargs, bound=True)

    def _call_fast(self, prefix: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        """Run the fast call keyed by ``prefix`` and the (shape, dtype) of each argument, or
        return ``_CHANGED`` when there is none (or a capture or guard changed)."""
        try:
            fast = self._fast_calls.get((*prefix, *[(a.shape, a.dtype) for a in args]))
        except AttributeError:  # not arrays
            return _CHANGED
        return _CHANGED if fast is None else fast(args)

    def _call_slow(self, args: tuple[Any, ...], kwargs: dict[str, Any], bound: bool = False) -> Any:
        if self._fell_back:
            return self.fn(*args, **kwargs)
        key, arguments, leaves = self._bind(args, kwargs)
        try:
            compiled, captured = self._lookup(key, arguments)
        except UnsupportedSyntaxError as e:
            if not self.fallback:
                raise
            warnings.warn(f"dy2st: running {self.fn.__qualname__} eagerly (fallback=True): {e}", stacklevel=3)
            self._fell_back = True
            return self.fn(*args, **kwargs)
        arrays = args[1:] if bound else args
        if (
            not kwargs
            and len(args) == self._positional_arity
            and len(leaves) == len(arrays)
            and all(type(a) is np.ndarray for a in arrays)
        ):
            fast_key: tuple[Any, ...] = tuple([(a.shape, a.dtype) for a in arrays])
            if bound:  # only when the instance itself holds no array leaves (len(leaves) above)
                fast_key = (id(args[0]), *fast_key)
            self._fast_calls[fast_key] = build_fast_call(compiled, len(arrays))
        program = compiled.program
        outputs = compiled.executor.run(*leaves, *captured)
        return unflatten(program.output_treedef, outputs[: program.num_results])

    def __get__(self, instance: Any, owner: type | None = None) -> StaticFunction | BoundStaticFunction:
        if instance is None:
            return self
        return BoundStaticFunction(self, instance)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        leaves: list[Any] = []
        key = tuple(flatten(v, leaves) for v in bound.arguments.values())
        return key, bound.arguments, leaves

    def _lookup(self, key: tuple[Any, ...], arguments: dict[str, Any]) -> tuple[CompiledProgram, list[Any]]:
        for compiled in self._cache.get(key, ()):
            program = compiled.program
            captured = [source.read() for source in program.capture_sources]
            if program.captures_match(captured) and program.guards_hold():
                return compiled, captured
        compiled = self._compiled(key, arguments)
        return compiled, [source.read() for source in compiled.program.capture_sources]

    def _stage(self, arguments: dict[str, Any]) -> Program:
        return trace(converted_function(cast(types.FunctionType, self.fn)), self.signature, arguments, self.fn.__name__)

    def _compiled(self, key: tuple[Any, ...], arguments: dict[str, Any]) -> CompiledProgram:
        for compiled in self._cache.get(key, ()):
            captured = [source.read() for source in compiled.program.capture_sources]
            if compiled.program.captures_match(captured) and compiled.program.guards_hold():
                return compiled
        program = self._stage(arguments)
        graph = program.graph
        if VERIFY_EVERY_PASS:
            verify(graph)
        if self.optimize:
            graph = optimize(graph, passes=numpy_passes())
        compiled = CompiledProgram(program, graph, Executor(graph, program.writebacks))
        self._cache.setdefault(key, []).append(compiled)
        return compiled

    def __repr__(self) -> str:
        return f"<dy2st.StaticFunction {self.fn.__qualname__}>"


class BoundStaticFunction:
    """A ``StaticFunction`` bound to an instance (``obj.method``)."""

    __slots__ = ("static", "instance")

    def __init__(self, static: StaticFunction, instance: Any):
        self.static = static
        self.instance = instance

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.static._call_bound(self.instance, args, kwargs)

    def graph(self, *args: Any, optimize: bool = True, **kwargs: Any) -> Graph:
        return self.static.graph(self.instance, *args, optimize=optimize, **kwargs)

    @property
    def code(self) -> str:
        return self.static.code


# A to_static function called from converted code runs converted, inside the caller's graph.
register_wrapper_type(StaticFunction, lambda f: converted_function(f.fn))
register_wrapper_type(BoundStaticFunction, lambda f: types.MethodType(converted_function(f.static.fn), f.instance))


def to_static(
    fn: Callable[..., Any] | None = None, *, fallback: bool = False, optimize: bool = True
) -> StaticFunction | Callable[[Callable[..., Any]], StaticFunction]:
    """Convert ``fn`` into a static-graph function with the same results.

    Usable as ``@to_static``, ``@to_static(fallback=True)`` or ``to_static(fn)``.

    Args:
        fn: a plain Python function (or method) over NumPy arrays.
        fallback: if the function uses syntax dy2st cannot convert, run it eagerly with a
            warning instead of raising ``UnsupportedSyntaxError``.
        optimize: run the optimizing passes on each graph (on by default).
    """
    if fn is None:
        return lambda f: StaticFunction(f, fallback=fallback, optimize=optimize)
    return StaticFunction(fn, fallback=fallback, optimize=optimize)
