"""``to_static`` and ``StaticFunction``: convert once, build a graph per input signature, run it.

A call binds the arguments, flattens them into array leaves plus a structure (the cache key: the
shape and dtype of each array, the value of each Python constant), finds or builds the graph for
that key, reads the captured global arrays afresh, runs the compiled graph and rebuilds the result.

Calls passing every parameter positionally as an ndarray take a fast path (``fast_call.py``): the
key is the (shape, dtype) of each argument and everything else is precomputed per graph.

Threads: graphs are built under one process-wide lock, so concurrent first calls with one
signature build its graph once and the others wait for it and use it. A call whose graph is
already cached takes no lock (the fast path is a dict lookup).
"""

from __future__ import annotations

import abc
import contextlib
import functools
import gc
import inspect
import logging
import os
import threading
import time
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast, overload

import numpy as np

from dy2st.backend.numba import numba_available
from dy2st.backend.numba.executor import TieredExecutor, chosen_backend, make_executor, tier_passes
from dy2st.backend.numpy.executor import Executor
from dy2st.backend.numpy.lowering import numpy_passes
from dy2st.deploy.onnx_export import write_onnx
from dy2st.deploy.saving import write_saved
from dy2st.eager_rerun import RerunEagerly, restoring_run
from dy2st.errors import (
    ConversionError,
    TensorValueError,
    UnsupportedSyntaxError,
    hide_internal_frames,
    public_api,
    user_location,
)
from dy2st.fast_call import CHANGED, build_fast_call, key_function, next_use, positional_arity
from dy2st.frontend.convert import convert_code
from dy2st.ir.core import Graph
from dy2st.ir.symbolic import Symbol, numbering_data_dependent_sizes, recording_guards
from dy2st.ir.types import short_dtype_name
from dy2st.ir.verifier import verify
from dy2st.passes import optimize
from dy2st.passes.pipeline import CLEANUP_PIPELINE, VERIFY_EVERY_PASS
from dy2st.runtime import control_flow
from dy2st.runtime.functions import converted_function, register_wrapper_type, unwrap_converted
from dy2st.runtime.pytree import (
    CONSTANT,
    LEAF,
    OBJECT,
    PYTHON_NUMBER,
    TreeDef,
    constant_key,
    is_number_input,
    unflatten,
)
from dy2st.runtime.staging import Program, flatten_argument, symbolic_size_needed, trace
from dy2st.static_args import shifted_past_self, static_parameters

# Held while a graph is staged, optimized and compiled (and while ``.code`` converts). One lock for
# every function: builds are Python-bound, so building two at once would not be faster under the
# GIL, and one lock cannot deadlock when building one function calls another (f's build calling
# g's while another thread's build of g calls f). Reentrant for a build that triggers a build.
_BUILD_LOCK = threading.RLock()


@contextlib.contextmanager
def _without_automatic_collection() -> Iterator[None]:
    """Run a build with CPython's automatic garbage collection off; the first collection after it
    frees what it left in cycles, in one pass over the objects allocated since.

    A build allocates many objects that live as long as it does (syntax trees, the graph), and
    each time enough of them survive, the collector traverses every object in the process: a
    4000-statement function went through nine such collections, a third of its build, and their
    cost grows with whatever else the process holds. A build inside a build (a converted callee)
    leaves the switch to the outer one; a process that turned collection off keeps it off.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass
class CompiledProgram:
    """A staged, optimized and compiled graph for one input signature."""

    program: Program
    graph: Graph
    executor: Executor
    run: Callable[..., Any]  # the executor's run, restoring updated inputs where it may raise midway
    signature: str = ""  # the input signature, readable (``cache_info``)
    build_seconds: float = 0.0
    usage: list[int] = field(default_factory=lambda: [0, 0])  # calls served, last use (``next_use``)
    fast_keys: list[tuple[Any, ...]] = field(default_factory=list)  # its entries in ``_fast_calls``


@dataclass(frozen=True)
class GraphInfo:
    """One cached graph (``StaticFunction.cache_info``).

    Attributes:
        signature: the argument types it was built for (``x: f32[512], flag: i64[]``).
        build_seconds: how long staging, optimizing and compiling it took.
        calls: how many calls it served.
        symbolic: whether it has symbolic sizes (serves many shapes).
    """

    signature: str
    build_seconds: float
    calls: int
    symbolic: bool


@dataclass(frozen=True)
class CacheInfo:
    """What ``StaticFunction.cache_info()`` returns: the graphs kept, and the limit on them."""

    graphs: list[GraphInfo]
    max_graphs: int | None

    @property
    def calls(self) -> int:
        return sum(g.calls for g in self.graphs)


class RetracingWarning(UserWarning):
    """A converted function keeps building new graphs (a new shape or Python value each call)."""


RETRACE_WARNING_GRAPHS = 8
"""How many graphs a function builds before ``RetracingWarning`` says which argument changes."""

STATIC_ENABLED = [os.environ.get("DY2ST_ENABLE_STATIC", "1").lower() not in ("0", "false", "off", "no")]
"""Whether converted functions run their graphs (``enable_static``; the environment variable
``DY2ST_ENABLE_STATIC=0`` starts a process with them off)."""

logger = logging.getLogger("dy2st")


class _StaticSwitch:
    """What ``enable_static`` returns: used as a context manager, it restores the previous state."""

    def __init__(self, previous: bool):
        self.previous = previous

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        STATIC_ENABLED[0] = self.previous


def enable_static(enabled: bool = True) -> _StaticSwitch:
    """Turn graphs on or off for every converted function: with ``False``, each runs its original
    Python function, eagerly, for debugging (prints, breakpoints, exceptions where they happen).
    ``with dy2st.enable_static(False): ...`` does it for a block and restores the previous state.
    The environment variable ``DY2ST_ENABLE_STATIC=0`` starts with graphs off."""
    previous = STATIC_ENABLED[0]
    STATIC_ENABLED[0] = bool(enabled)
    return _StaticSwitch(previous)


def _forget_fast_calls(function: weakref.ref[StaticFunction], instance_id: int) -> None:
    """An instance ``_forget_when_gone`` watched was freed: drop the fast calls keyed by its id."""
    static = function()
    if static is None:
        return
    for key in [k for k in list(static._fast_calls) if k[:1] == (instance_id,)]:
        static._fast_calls.pop(key, None)
    static._watched_instances.discard(instance_id)


def describe_signature(names: list[str], key: tuple[Any, ...]) -> str:
    """``x: f32[512], flag: True, lr: float``: a cache key for people (a Python number that
    is a graph input is shown by its type, a constant by its value)."""
    return ", ".join(f"{name}: {_describe_tree(tree)}" for name, tree in zip(names, key))


def _describe_tree(tree: TreeDef) -> str:
    if tree.kind == LEAF and tree.data is not None:
        shape, dtype, _ = tree.data
        return f"{short_dtype_name(np.dtype(dtype))}[{','.join(str(n) for n in shape)}]"
    if tree.kind == CONSTANT:
        return repr(tree.data.value)
    if tree.kind == PYTHON_NUMBER and isinstance(tree.data, type):
        return tree.data.__name__
    if tree.children:
        return f"{tree.kind}({', '.join(_describe_tree(c) for c in tree.children)})"
    return tree.kind


class _StageTimer:
    """Logs, at DEBUG on the ``dy2st`` logger, how long each stage of a build took."""

    def __init__(self, name: str):
        self.name = name
        self.enabled = logger.isEnabledFor(logging.DEBUG)
        self.last = time.perf_counter()

    def done(self, stage: str) -> None:
        if self.enabled:
            now = time.perf_counter()
            logger.debug("%s: %s took %.2f ms", self.name, stage, (now - self.last) * 1e3)
            self.last = now

    def after_pass(self, pass_name: str, graph: Graph, changed: bool) -> None:
        self.done(f"pass {pass_name} ({'changed' if changed else 'unchanged'})")


class StaticFunction:
    """A function converted by ``to_static``; call it like the original.

    Attributes:
        fn: the original Python function.
        code: the transformed Python source (what ``dy2st dump`` prints).
    """

    @public_api
    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        fallback: bool = False,
        optimize: bool = True,
        dynamic: bool | None = None,
        backend: str | None = None,
        max_graphs: int | None = None,
        static_argnums: int | Iterable[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
    ):
        if isinstance(fn, (staticmethod, classmethod)):
            raise TypeError("apply @to_static below @staticmethod/@classmethod")
        if max_graphs is not None and (not isinstance(max_graphs, int) or max_graphs < 1):
            raise ValueError(f"max_graphs must be a positive int or None, not {max_graphs!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.max_graphs = max_graphs
        self._warned_retracing = False
        self._builds = 0  # graphs built so far, dropped ones included
        self._objects_dropped = 0  # graphs dropped because the object they were built for is gone
        self._watched_instances: set[int] = set()  # ids of instances ``_forget_when_gone`` watches
        self.fallback = fallback
        self.optimize = optimize
        self.dynamic = dynamic
        self.backend = chosen_backend(backend)
        self.signature = inspect.signature(fn)
        # Parameters whose Python numbers are constants of the graph: named static by the user,
        # or needed as values by a build (``_build_graph``); the others' are graph inputs.
        self.static_params = static_parameters(self.signature, static_argnums, static_argnames)
        self._numbers_needed_as_values: set[str] = set()
        # Automatic number inputs (``dynamic=None``): the numbers each parameter held at its first
        # build, and the parameters whose numbers have changed since (graph inputs from then on).
        self._first_numbers: dict[str, tuple[Any, ...]] = {}
        self._varying_numbers: set[str] = set()
        self._number_policy = 0  # bumped when a parameter's numbers become inputs or constants
        self._build_reason: str | None = None  # why the graph about to be built is needed (logging)
        # Graphs for exact argument shapes, by cache key; graphs with symbolic sizes, by the key
        # with every shape reduced to its rank; and for those keys, the shapes seen so far.
        self._cache: dict[tuple[Any, ...], list[CompiledProgram]] = {}
        self._dynamic_cache: dict[tuple[Any, ...], list[CompiledProgram]] = {}
        self._seen_shapes: dict[tuple[Any, ...], list[tuple[int, ...]]] = {}
        self._fell_back = False
        self._fast_calls: dict[tuple[Any, ...], Callable[[tuple[Any, ...]], Any]] = {}
        self._positional_arity = positional_arity(self.signature)
        self._number_constants = self._positional_number_constants()
        self._fast_key = key_function(max(self._positional_arity, 0), self._number_constants)

    # --- introspection -------------------------------------------------------------------
    @property
    @public_api
    def code(self) -> str:
        """The transformed Python source of the function."""
        with _BUILD_LOCK:
            return convert_code(self.fn).source

    @public_api
    def graph(self, *args: Any, optimize: bool = True, **kwargs: Any) -> Graph:
        """The graph for this input signature (after the optimizing passes unless ``optimize=False``)."""
        key, arguments, leaves = self._bind(args, kwargs, numbers=True)
        if not optimize:
            return self._stage(arguments, self._dynamic_dims(key, leaves), self._number_params(arguments)).graph
        return self._compiled(key, arguments, leaves).graph

    @public_api
    def executor_source(self, *args: Any, **kwargs: Any) -> str:
        """The Python source the backend generated for this input signature."""
        key, arguments, leaves = self._bind(args, kwargs, numbers=True)
        return self._compiled(key, arguments, leaves).executor.source

    @public_api
    def compiled_source(self, *args: Any, **kwargs: Any) -> str:
        """The Numba source of the loops the compiled tier compiled for this input signature
        (compiling them now if the background compiler has not yet), or a comment saying why
        there are none."""
        key, arguments, leaves = self._bind(args, kwargs, numbers=True)
        executor = self._compiled(key, arguments, leaves).executor
        if not isinstance(executor, TieredExecutor):
            if self.backend == "numpy":
                return "# backend='numpy': nothing is compiled\n"
            if not numba_available():
                return "# Numba is not installed (pip install 'dy2st[jit]'): nothing is compiled\n"
            return "# no loop of this graph works on scalars and elements only: nothing is compiled\n"
        executor.wait_compiled()
        left = "".join(f"# left on the NumPy tier: {reason}\n" for reason in executor.failures)
        return left + executor.compiled_source

    @public_api
    def save(self, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> None:
        """Write the graph for the signature of ``args`` to ``path``, to run with ``dy2st.load``
        without this function's source (docs/deploy.md). Arrays it reads from globals and
        closures are saved by value. A function converted with ``dynamic=True`` saves a graph
        with symbolic sizes, which serves every size its decisions hold for."""
        self._save(path, args, kwargs, skip=0)

    def _save(self, path: str | os.PathLike[str], args: tuple[Any, ...], kwargs: dict[str, Any], skip: int) -> None:
        program, graph, arguments = self._cleaned(args, kwargs, symbolic=self.dynamic is True)
        given = self.signature.bind(*args, **kwargs).arguments
        defaults = [name for name in arguments if name not in given]
        write_saved(path, program, graph, arguments, skip, defaults)

    def _cleaned(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], symbolic: bool = False
    ) -> tuple[Program, Graph, dict[str, Any]]:
        """The program staged for these arguments, its graph after the cleanup passes (the form
        saved and exported), and the bound arguments. ``symbolic``: every argument size a symbol
        where the build allows it (as ``to_static(dynamic=True)`` builds), else all static."""
        _, arguments, leaves = self._bind(args, kwargs)
        dynamic = (
            frozenset((i, k) for i, leaf in enumerate(leaves) for k in range(np.ndim(leaf)))
            if symbolic
            else frozenset()
        )
        with _BUILD_LOCK, numbering_data_dependent_sizes():
            while True:
                with recording_guards() as size_guards:
                    try:
                        program = self._stage(arguments, dynamic)
                    except Exception as error:
                        if not dynamic:
                            raise
                        needed = symbolic_size_needed(error)  # else: build it with static sizes
                        dynamic = frozenset() if needed is None else dynamic - _needed_places(needed, leaves, dynamic)
                        continue
                    graph = optimize(program.graph, passes=[cls() for cls in CLEANUP_PIPELINE])
                program.size_guards = list(size_guards)
                return program, graph, arguments

    @public_api
    def export_onnx(self, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> None:
        """Write the graph for the signature of ``args`` to ``path`` as an ONNX model (the
        ``onnx`` extra; docs/onnx.md). Arrays read from globals become initializers, by value.
        A function converted with ``dynamic=True`` exports named dimensions where its graph
        needs no decision about their sizes."""
        program, graph, _ = self._cleaned(args, kwargs, symbolic=self.dynamic is True)
        if program.size_guards:  # an ONNX model cannot check the sizes the graph was built for
            program, graph, _ = self._cleaned(args, kwargs)
        write_onnx(path, program, graph)

    @property
    def num_graphs(self) -> int:
        """How many graphs are cached: one per input signature seen, where a graph with symbolic
        sizes (``to_static(dynamic=...)``) serves every signature its sizes fit."""
        graphs = [*self._cache.values(), *self._dynamic_cache.values()]
        return sum(len(v) for v in graphs)

    # --- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Fast path: every parameter given positionally as an ndarray. The key is the tuple of
        # (shape, dtype) pairs, which is all the signature holds for such a call, so no binding
        # or flattening is needed; the generated call checks the argument types itself.
        # A public API boundary written out rather than decorated with ``public_api``: a wrapper
        # would add a Python call to every call, and ``try`` costs nothing until an error.
        if not STATIC_ENABLED[0]:  # dy2st.enable_static(False): the Python function, eagerly
            return self.fn(*args, **kwargs)
        try:
            if not kwargs and len(args) == self._positional_arity:
                # ``_call_fast`` written out: a frame less on every call
                fast = self._fast_calls.get(self._fast_key(args, self._number_constants))  # type: ignore[arg-type]
                if fast is not None and (result := fast(args)) is not CHANGED:
                    return result
            return self._call_slow(args, kwargs)
        except RerunEagerly:
            pass  # the graph failed midway, the updated arrays restored (eager_rerun)
        except Exception as error:
            hide_internal_frames(error)
            raise  # a bare raise adds no frame of this function back
        return self.fn(*args, **kwargs)

    def _call_bound(self, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``obj.method(*args)``: the same fast path, keyed also by the instance (each instance
        has graphs of its own, and the cache keeps it alive, so its id stays unique)."""
        if not kwargs and len(args) + 1 == self._positional_arity:
            result = self._call_fast((id(instance),), args, self._number_constants[1:])
            if result is not CHANGED:
                return result
        return self._call_slow((instance, *args), kwargs, bound=True)

    def _call_fast(self, prefix: tuple[Any, ...], args: tuple[Any, ...], constants: tuple[bool, ...]) -> Any:
        """Run the fast call keyed by ``prefix`` and ``fast_key(args, constants)``, or return
        ``CHANGED`` when there is none (or a capture or guard changed)."""
        key = key_function(len(args), constants)(args, constants)
        fast = None if key is None else self._fast_calls.get((*prefix, *key))
        return CHANGED if fast is None else fast(args)

    def _call_slow(self, args: tuple[Any, ...], kwargs: dict[str, Any], bound: bool = False) -> Any:
        if self._fell_back:
            return self.fn(*args, **kwargs)
        key, arguments, leaves = self._bind(args, kwargs, numbers=True)
        policy_before = self._number_policy
        try:
            compiled, captured = self._lookup(key, arguments, leaves)
        except UnsupportedSyntaxError as e:
            if not self.fallback:
                raise
            warnings.warn(f"dy2st: running {self.fn.__qualname__} eagerly (fallback=True): {e}", stacklevel=3)
            self._fell_back = True
            return self.fn(*args, **kwargs)
        except Exception as e:
            if getattr(e, "effects_before", False):
                # NumPy raises this error after the function has updated an argument or printed:
                # the Python function raises it after doing so (staging.Program has no such graph).
                return self.fn(*args, **kwargs)
            raise
        if self._number_policy != policy_before:  # the build made some numbers inputs or constants
            key, arguments, leaves = self._bind(args, kwargs, numbers=True)
        compiled.usage[0] += 1
        compiled.usage[1] = next_use()
        positional = args[1:] if bound else args
        constants = self._number_constants[1:] if bound else self._number_constants
        fast_path = not kwargs and len(args) == self._positional_arity
        call_key = key_function(len(positional), constants)(positional, constants) if fast_path else None
        if call_key is not None and len(leaves) == len(inputs := _input_positions(positional, constants)):
            if bound:  # only when the instance itself holds no array leaves (len(leaves) above)
                call_key = (id(args[0]), *call_key)
                self._forget_when_gone(args[0])
            executor = compiled.executor
            direct = executor if compiled.run == executor.run and executor.callable_directly else None
            self._fast_calls[call_key] = build_fast_call(
                compiled.program, compiled.run, len(positional), inputs, compiled.usage, direct
            )
            compiled.fast_keys.append(call_key)
        program = compiled.program
        if program.writebacks and program.runs_eagerly([*leaves, *captured]):
            return self.fn(*args, **kwargs)  # aliased or read-only inputs: see Program.runs_eagerly
        outputs = compiled.run(*leaves, *captured)
        return unflatten(program.output_treedef, outputs[: program.num_results])

    def __get__(self, instance: Any, owner: type | None = None) -> StaticFunction | BoundStaticFunction:
        if instance is None:
            return self
        return BoundStaticFunction(self, instance)

    def _bind(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], numbers: bool = False
    ) -> tuple[tuple[Any, ...], dict[str, Any], list[Any]]:
        """The cache key, bound arguments and leaves of a call. ``numbers``: the Python numbers of
        the parameters ``_number_params`` gives are leaves (graph inputs), keyed by type alone;
        else every Python number is a constant, keyed by value (the graphs that ``save``,
        ``export_onnx`` and the gradients build)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key, leaves = self._key_and_leaves(bound.arguments, self._number_params(bound.arguments) if numbers else ())
        return key, bound.arguments, leaves

    def _key_and_leaves(self, arguments: dict[str, Any], numbers: Iterable[str]) -> tuple[tuple[Any, ...], list[Any]]:
        """The cache key and leaves of bound ``arguments``, the Python numbers of the parameters
        ``numbers`` being leaves. Objects (a method's instance) are held weakly: the graphs built
        for one must not keep it alive (``_drop_dead``)."""
        leaves: list[Any] = []
        key = tuple(
            flatten_argument(value, leaves, name in numbers, weak_objects=True) for name, value in arguments.items()
        )
        return key, leaves

    def _number_params(self, arguments: dict[str, Any]) -> frozenset[str]:
        """The parameters whose Python numbers are graph inputs (docs/daily-use.md): with
        ``dynamic=None``, those whose numbers changed between builds; with ``dynamic=True``, all;
        with ``dynamic=False``, none; never those named static or a build needed as values."""
        return frozenset(name for name in arguments if self._number_input(name))

    def _number_input(self, name: str) -> bool:
        if self._numbers_fixed(name) or self.dynamic is False:
            return False
        return self.dynamic is True or name in self._varying_numbers

    def _numbers_fixed(self, name: str) -> bool:
        """Are the parameter's numbers constants whatever the calls pass: named static, or
        needed as values by a build?"""
        return name in self.static_params or name in self._numbers_needed_as_values

    def _number_policy_changed(self) -> None:
        """Some parameter's numbers became inputs or constants: calls bind anew (``_call_slow``)
        and the fast path keys them anew."""
        self._number_policy += 1
        self._number_constants = self._positional_number_constants()
        self._fast_key = key_function(max(self._positional_arity, 0), self._number_constants)

    def _notice_changing_numbers(self, arguments: dict[str, Any]) -> bool:
        """Record the numbers of each parameter at a build (automatic number inputs); those that
        differ from its first build's become graph inputs. Returns whether any did."""
        if self.dynamic is not None:
            return False
        changed = False
        for name, value in arguments.items():
            if self._numbers_fixed(name) or name in self._varying_numbers:
                continue
            numbers = _numbers_key(value)
            first = self._first_numbers.setdefault(name, numbers)
            if numbers and first != numbers:
                self._varying_numbers.add(name)
                changed = True
        if changed:
            self._number_policy_changed()
        return changed

    def _positional_number_constants(self) -> tuple[bool, ...]:
        """For each named positional parameter, whether a Python number there is a constant (the
        fast path's key holds its value) rather than a graph input (its type)."""
        return tuple(
            not self._number_input(name) for name in list(self.signature.parameters)[: max(self._positional_arity, 0)]
        )

    def _find(self, key: tuple[Any, ...], leaves: list[Any]) -> tuple[CompiledProgram, list[Any]] | None:
        """The cached graph for ``key`` (or one with symbolic sizes that fit ``leaves``) whose
        captures and guards still hold, with the captured arrays read for this call; None on a miss."""
        candidates = self._cache.get(key, ())
        if not candidates and self._dynamic_cache:
            dynamic = self._dynamic_cache.get(rank_key(key), ())
            candidates = [c for c in dynamic if c.program.sizes_fit(leaves)]
        for compiled in candidates:
            program = compiled.program
            captured = [source.read() for source in program.capture_sources]
            if program.captures_match(captured) and program.guards_hold():
                return compiled, captured
        if candidates and logger.isEnabledFor(logging.DEBUG):  # why the next build happens
            self._build_reason = candidates[-1].program.why_not_usable(
                [source.read() for source in candidates[-1].program.capture_sources]
            )
        return None

    def _lookup(
        self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any]
    ) -> tuple[CompiledProgram, list[Any]]:
        """The graph for ``key`` with the captured arrays read for this call, built on a miss."""
        found = self._find(key, leaves)
        if found is not None:
            return found
        with _BUILD_LOCK:
            # Another thread may have built it while this one waited for the lock.
            found = self._find(key, leaves)
            if found is not None:
                return found
            compiled = self._build(key, arguments, leaves)
        return compiled, [source.read() for source in compiled.program.capture_sources]

    def _dynamic_dims(self, key: tuple[Any, ...], leaves: list[Any]) -> frozenset[tuple[int, int]]:
        """The (array leaf, axis) sizes to make symbolic in a graph built for this call.

        ``dynamic=True``: all of them. ``dynamic=False``: none. By default (automatic dynamic
        shapes), those that differ from the sizes of the first call with the same ranks and dtypes,
        so that the second size seen in a dimension builds a graph serving every size.
        """
        shapes = [np.shape(leaf) for leaf in leaves]
        if self.dynamic is True:
            return frozenset((i, k) for i, shape in enumerate(shapes) for k in range(len(shape)))
        if self.dynamic is False:
            return frozenset()
        first = self._seen_shapes.setdefault(rank_key(key), shapes)
        return frozenset((i, k) for i, (a, b) in enumerate(zip(first, shapes)) for k in range(len(a)) if a[k] != b[k])

    def _stage(
        self,
        arguments: dict[str, Any],
        dynamic: frozenset[tuple[int, int]] = frozenset(),
        numbers: frozenset[str] = frozenset(),
    ) -> Program:
        with _BUILD_LOCK, _without_automatic_collection():
            return trace(
                converted_function(cast(types.FunctionType, self.fn)),
                self.signature,
                arguments,
                self.fn.__name__,
                dynamic,
                numbers=numbers,
            )

    def _compiled(self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any]) -> CompiledProgram:
        return self._lookup(key, arguments, leaves)[0]

    def _build(self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any]) -> CompiledProgram:
        """Build and cache the graph for ``key`` (``_build_graph``), timed and logged; then warn
        once when the function has built many graphs, and drop the least recently used graph
        beyond ``max_graphs``."""
        self._drop_dead()
        reason = self._build_reason or "a new signature"
        self._build_reason = None
        if self._notice_changing_numbers(arguments):
            reason = f"a new value of {', '.join(sorted(self._varying_numbers))}, now graph inputs"
            key, leaves = self._key_and_leaves(arguments, self._number_params(arguments))
        start = time.perf_counter()
        compiled, key = self._build_graph(key, arguments, leaves)
        self._builds += 1
        compiled.build_seconds = time.perf_counter() - start
        compiled.signature = describe_signature(list(arguments), key)
        compiled.usage[1] = next_use()
        logger.debug(
            "built graph %d of %s for %s (%s) in %.1f ms%s",
            self.num_graphs,
            self.fn.__qualname__,
            compiled.signature,
            reason,
            compiled.build_seconds * 1e3,
            "".join(f"\n  {note}" for note in compiled.graph.notes),
        )
        self._warn_retracing(list(arguments))
        self._evict()
        return compiled

    def _warn_retracing(self, names: list[str]) -> None:
        """Once per function, past ``RETRACE_WARNING_GRAPHS`` graphs: which argument's shape or
        Python value keeps making new ones."""
        if self._warned_retracing or self._builds <= RETRACE_WARNING_GRAPHS:
            return
        self._warned_retracing = True
        keys = [*self._cache, *self._dynamic_cache]
        changing = [k for k in range(len(names)) if len({key[k] for key in keys if k < len(key)}) > 1]
        objects = [names[k] for k in changing if any(key[k].kind == OBJECT for key in keys if k < len(key))]
        what = ", ".join(repr(names[k]) for k in changing) or "its arguments"
        message = (
            f"dy2st: {self.fn.__qualname__} has built {self._builds} graphs, one per new shape or "
            f"Python value of {what}: each call with a new one builds again. Python floats and ints are "
            "graph inputs unless named in static_argnums/static_argnames or needed while the graph is "
            "built (a shape, an axis, math.exp(v)): pass values that change from call to call that way, "
            "or as NumPy arrays, and convert with to_static(dynamic=True) for changing sizes"
        )
        if objects or self._objects_dropped:
            which = ", ".join(repr(n) for n in objects) or "an object argument (a method's instance)"
            message += (
                f"; {which} is a new object at each call, and each object has graphs of its own: "
                "reuse the object, or pass its arrays as arguments"
            )
        caller = user_location()  # the user's call that built it
        if caller is None:
            warnings.warn(message, RetracingWarning, stacklevel=2)
        else:
            warnings.warn_explicit(message, RetracingWarning, caller.filename, caller.lineno)

    def _forget_when_gone(self, instance: Any) -> None:
        """Drop the fast calls keyed by ``instance``'s id when it is freed: the caches hold it
        weakly, and a new object may then get its id (the graphs built for the old one would
        run for it)."""
        if id(instance) in self._watched_instances:
            return
        try:
            weakref.finalize(instance, _forget_fast_calls, weakref.ref(self), id(instance))
        except TypeError:
            return  # no weak references to it: the caches hold it, so its id is never reused
        self._watched_instances.add(id(instance))

    def _drop_dead(self) -> None:
        """Drop the graphs built for objects that are gone (instances of a converted method used
        and dropped): their keys hold the objects weakly and can never match again."""
        for table in (self._cache, self._dynamic_cache):
            for key in [k for k in table if not all(tree.alive() for tree in k)]:
                self._objects_dropped += 1
                for compiled in table.pop(key):
                    for fast in compiled.fast_keys:
                        self._fast_calls.pop(fast, None)
        for key in [k for k in self._seen_shapes if not all(tree.alive() for tree in k)]:
            del self._seen_shapes[key]

    def _evict(self) -> None:
        """Drop least recently used graphs beyond ``max_graphs``."""
        while self.max_graphs is not None and self.num_graphs > self.max_graphs:
            tables = (self._cache, self._dynamic_cache)
            entries = [(c.usage[1], table, key, c) for table in tables for key, cs in table.items() for c in cs]
            _, table, key, oldest = min(entries, key=lambda entry: entry[0])
            table[key].remove(oldest)
            if not table[key]:
                del table[key]
            for fast in oldest.fast_keys:
                self._fast_calls.pop(fast, None)
            logger.debug(
                "dropped the graph of %s for %s (max_graphs=%d)",
                self.fn.__qualname__,
                oldest.signature,
                self.max_graphs,
            )

    @public_api
    def cache_info(self) -> CacheInfo:
        """The graphs this function keeps: each one's signature, build time and calls served."""
        self._drop_dead()
        graphs = [
            GraphInfo(c.signature, c.build_seconds, c.usage[0], c.program.is_dynamic)
            for table in (self._cache, self._dynamic_cache)
            for cs in table.values()
            for c in cs
        ]
        return CacheInfo(graphs, self.max_graphs)

    @public_api
    def clear_cache(self) -> None:
        """Drop every graph (and the sizes seen so far): the next call builds again."""
        with _BUILD_LOCK:
            self._builds = 0
            self._cache.clear()
            self._dynamic_cache.clear()
            self._fast_calls.clear()
            self._seen_shapes.clear()

    def _build_graph(
        self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any]
    ) -> tuple[CompiledProgram, tuple[Any, ...]]:
        """Stage, optimize and compile the graph for ``key``, and cache it (under ``_BUILD_LOCK``);
        return it with the key it is cached under.

        The Python numbers of ``_number_params`` are graph inputs. A build that needs one as a
        value (``np.zeros(n)``, ``math.exp(lr)``: ``TensorValueError``) is tried again with the
        numbers it was computed from as constants (all of them if that is not known, or if any
        other failure), and those parameters stay constants in this function's later calls, keyed
        by value: number inputs never make a function fail that builds without them.
        """
        numbers = self._number_params(arguments)
        while True:
            try:
                return self._build_for_sizes(key, arguments, leaves, numbers), key
            except Exception as error:
                given = {name for name in numbers if _numbers_key(arguments[name])}
                if not given:
                    raise
                needed = self._numbers_needed(error, arguments, numbers) or given
                logger.debug(
                    "%s needs %s as values while its graph is built: they are constants of its graphs",
                    self.fn.__qualname__,
                    ", ".join(sorted(needed)),
                )
                self._numbers_needed_as_values |= needed
                self._number_policy_changed()
                numbers = self._number_params(arguments)
                key, leaves = self._key_and_leaves(arguments, numbers)

    def _numbers_needed(self, error: Exception, arguments: dict[str, Any], numbers: frozenset[str]) -> set[str]:
        """The parameters whose number inputs the value that ``error`` needed was computed from
        (empty when that is not known)."""
        needed = getattr(error, "needed", None) if isinstance(error, TensorValueError) else None
        if needed is None:
            return set()
        value, block = needed
        positions = block.arguments_reaching(value)
        params, start = set(), 0
        for name, value_given in arguments.items():
            leaves: list[Any] = []
            flatten_argument(value_given, leaves, name in numbers)
            count = len(leaves)
            if name in numbers and any(start <= p < start + count for p in positions):
                params.add(name)
            start += count
        return params

    def _build_for_sizes(
        self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any], numbers: frozenset[str]
    ) -> CompiledProgram:
        """Build the graph for ``key`` and cache it, with the number inputs ``numbers``.

        A graph with symbolic sizes is tried first where ``_dynamic_dims`` asks for one. Sizes the
        build needed as numbers (``SymbolicSizeNeeded``) are made static and the build tried
        again; any other failure of a build with symbolic sizes builds with static ones, so that
        symbolic sizes never make a function fail that builds without them.
        """
        dynamic = self._dynamic_dims(key, leaves)
        with _without_automatic_collection():
            while dynamic:
                try:
                    compiled = self._build_once(arguments, dynamic, numbers)
                except Exception as error:
                    needed = symbolic_size_needed(error)
                    if needed is None:
                        dynamic = frozenset()
                        break
                    dynamic = dynamic - _needed_places(needed, leaves, dynamic)
                    continue
                if compiled.program.is_dynamic:
                    self._dynamic_cache.setdefault(rank_key(key), []).append(compiled)
                    return compiled
                self._cache.setdefault(key, []).append(compiled)
                return compiled
            compiled = self._build_once(arguments, frozenset(), numbers)
        self._cache.setdefault(key, []).append(compiled)
        return compiled

    def _build_once(
        self, arguments: dict[str, Any], dynamic: frozenset[tuple[int, int]], numbers: frozenset[str]
    ) -> CompiledProgram:
        stages = _StageTimer(self.fn.__qualname__)
        with recording_guards() as size_guards, numbering_data_dependent_sizes():
            program = self._stage(arguments, dynamic, numbers)  # converts the source on the first build
            stages.done("convert and stage")
            graph = program.graph
            if VERIFY_EVERY_PASS:
                verify(graph)
            if self.optimize:
                graph = optimize(
                    graph, passes=[*numpy_passes(), *tier_passes(self.backend)], after_each=stages.after_pass
                )
            executor = make_executor(graph, program.writebacks, self.backend)
            stages.done("generate the executor")
            run = restoring_run(executor.run, graph, program.writebacks)
            compiled = CompiledProgram(program, graph, executor, run)
        program.size_guards = list(size_guards)
        return compiled

    def __repr__(self) -> str:
        return f"<dy2st.StaticFunction {self.fn.__qualname__}>"


def rank_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A cache key with each array's shape replaced by its rank: the key of graphs with symbolic
    sizes, which serve every shape of those ranks (and dtypes) that fits them."""
    return tuple(tree.map_leaves(_leaf_rank) for tree in key)


def _leaf_rank(leaf: TreeDef) -> TreeDef:
    if leaf.data is None:
        return leaf
    shape, dtype, scalar = leaf.data
    return TreeDef(LEAF, (), (len(shape), dtype, scalar))


def _input_positions(positional: tuple[Any, ...], constants: tuple[bool, ...]) -> tuple[int, ...]:
    """The positions of the arguments a fast call passes to its graph: ndarrays, and Python
    numbers that are graph inputs (not ``constants``)."""
    return tuple(
        i for i, a in enumerate(positional) if type(a) is np.ndarray or (is_number_input(a) and not constants[i])
    )


def _numbers_key(value: Any) -> tuple[Any, ...]:
    """The Python numbers an argument holds that could be graph inputs, by type and value."""
    leaves: list[Any] = []
    flatten_argument(value, leaves, True)
    return tuple(constant_key(leaf) for leaf in leaves if is_number_input(leaf))


def _needed_places(needed: Any, leaves: list[Any], dynamic: frozenset[tuple[int, int]]) -> set[tuple[int, int]]:
    """The places of the symbols a build needed as numbers (``SymbolicSizeNeeded``)."""
    return {place for s in needed.symbols for place in _places_of(s, leaves, dynamic)}


def _places_of(symbol: Symbol, leaves: list[Any], dynamic: frozenset[tuple[int, int]]) -> set[tuple[int, int]]:
    """The dynamic (leaf, axis) places a symbol was given to (every place of its hint size)."""
    return {(i, k) for i, k in dynamic if leaves[i].shape[k] == symbol.hint}


class _WithBoundArguments(abc.ABC):
    """A converted function with arguments bound in front of the call's own; ``graph``,
    ``code``, ``num_graphs`` and ``executor_source`` are the underlying function's."""

    __slots__ = ("static",)
    static: Converted

    @abc.abstractmethod
    def _with_bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments with the bound ones in front."""

    @public_api
    def graph(self, *args: Any, optimize: bool = True, **kwargs: Any) -> Graph:
        args, kwargs = self._with_bound(args, kwargs)
        return self.static.graph(*args, optimize=optimize, **kwargs)

    @property
    @public_api
    def code(self) -> str:
        return self.static.code

    @property
    def num_graphs(self) -> int:
        return self.static.num_graphs

    @public_api
    def executor_source(self, *args: Any, **kwargs: Any) -> str:
        args, kwargs = self._with_bound(args, kwargs)
        return self.static.executor_source(*args, **kwargs)

    @public_api
    def compiled_source(self, *args: Any, **kwargs: Any) -> str:
        args, kwargs = self._with_bound(args, kwargs)
        return self.static.compiled_source(*args, **kwargs)


class BoundStaticFunction(_WithBoundArguments):
    """A ``StaticFunction`` bound to an instance (``obj.method``)."""

    __slots__ = ("instance",)

    def __init__(self, static: StaticFunction, instance: Any):
        self.static = static
        self.instance = instance

    @public_api
    def save(self, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> None:
        """Write the method's graph for ``args`` to ``path``; the arrays the instance holds are
        saved by value, and the loaded function takes the other arguments (``dy2st.save``)."""
        cast(StaticFunction, self.static)._save(path, (self.instance, *args), kwargs, skip=1)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        static = cast(StaticFunction, self.static)
        if not STATIC_ENABLED[0]:
            return static.fn(self.instance, *args, **kwargs)
        try:  # a public API boundary, written out as in StaticFunction.__call__
            return static._call_bound(self.instance, args, kwargs)
        except RerunEagerly:
            pass
        except Exception as error:
            hide_internal_frames(error)
            raise
        return static.fn(self.instance, *args, **kwargs)

    def _with_bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (self.instance, *args), kwargs

    def __repr__(self) -> str:
        qualname = cast(StaticFunction, self.static).fn.__qualname__
        return f"<dy2st.StaticFunction {qualname} bound to {type(self.instance).__name__}>"


class PartialStaticFunction(_WithBoundArguments):
    """A converted ``functools.partial``: its bound arguments are passed at every call, before the
    call's own, as the partial passes them (arrays among them are graph inputs, Python values
    constants the graph is specialised on)."""

    __slots__ = ("args", "keywords")

    def __init__(self, static: Converted, args: tuple[Any, ...], keywords: dict[str, Any]):
        self.static = static
        self.args = args
        self.keywords = keywords

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:  # a public API boundary, written out as in StaticFunction.__call__
            args, kwargs = self._with_bound(args, kwargs)
            return self.static(*args, **kwargs)
        except Exception as error:
            hide_internal_frames(error)
            raise

    def _with_bound(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (*self.args, *args), {**self.keywords, **kwargs}  # the call's keywords win

    def __repr__(self) -> str:
        return f"<dy2st.StaticFunction partial of {self.static!r}>"


Converted = StaticFunction | BoundStaticFunction | PartialStaticFunction
"""What ``to_static`` returns."""

# A to_static function called from converted code runs converted, inside the caller's graph.
register_wrapper_type(StaticFunction, lambda f: converted_function(f.fn))
register_wrapper_type(BoundStaticFunction, lambda f: types.MethodType(converted_function(f.static.fn), f.instance))
register_wrapper_type(
    PartialStaticFunction,  # its .static is one of these registered types, so it always unwraps
    lambda f: functools.partial(cast(Callable[..., Any], unwrap_converted(f.static)), *f.args, **f.keywords),
)


@overload
def to_static(
    fn: Callable[..., Any],
    *,
    fallback: bool = False,
    optimize: bool = True,
    dynamic: bool | None = None,
    backend: str | None = None,
    max_graphs: int | None = None,
    static_argnums: int | Iterable[int] | None = None,
    static_argnames: str | Iterable[str] | None = None,
) -> Converted: ...


@overload
def to_static(
    fn: None = None,
    *,
    fallback: bool = False,
    optimize: bool = True,
    dynamic: bool | None = None,
    backend: str | None = None,
    max_graphs: int | None = None,
    static_argnums: int | Iterable[int] | None = None,
    static_argnames: str | Iterable[str] | None = None,
) -> Callable[[Callable[..., Any]], Converted]: ...


@public_api
def to_static(
    fn: Callable[..., Any] | None = None,
    *,
    fallback: bool = False,
    optimize: bool = True,
    dynamic: bool | None = None,
    backend: str | None = None,
    max_graphs: int | None = None,
    static_argnums: int | Iterable[int] | None = None,
    static_argnames: str | Iterable[str] | None = None,
) -> Converted | Callable[[Callable[..., Any]], Converted]:
    """Convert ``fn`` into a static-graph function with the same results.

    Usable as ``@to_static``, ``@to_static(fallback=True)`` or ``to_static(fn)``.

    Args:
        fn: a plain Python function over NumPy arrays, or a lambda; also a bound method
            (``to_static(model.forward)`` converts the function and keeps it bound to ``model``), an
            object with a Python ``__call__`` (converted, bound to the object), or a
            ``functools.partial`` (its function converted, its bound arguments passed at every
            call). A function already converted is returned as it is. NumPy functions, ufuncs and
            builtins are refused here: call them inside a converted function instead.
        fallback: if the function uses syntax dy2st cannot convert, run it eagerly with a
            warning instead of raising ``UnsupportedSyntaxError``.
        optimize: run the optimizing passes on each graph (on by default).
        dynamic: which argument sizes the graphs leave symbolic (docs/shapes.md). None (the
            default): a size that changes between calls, so that a stream of lengths builds at
            most two graphs; True: every size from the first call; False: none (one graph per
            shape).
        backend: where graphs run (docs/compiled-tier.md). "auto" (the default, or the
            ``DY2ST_BACKEND`` environment variable): the NumPy tier at once, loops compiled with
            Numba in the background once they have run for a while, when Numba is installed;
            "compiled": compiled before the first call returns; "numpy": never compiled.
        max_graphs: how many graphs to keep; beyond it, the least recently used one is dropped
            (built again if its signature comes back). None: no limit.
        static_argnums, static_argnames: the parameters (positions among the named positional
            parameters, ``self`` included for a method defined with ``@to_static``, excluded for
            ``to_static(obj.method)``; or names) whose values specialise the graph: each new
            value builds a graph. The Python floats and ints (int64-sized) of the other
            parameters are graph inputs, so that one graph serves every value; where a build
            needs one as a value (a shape, ``math.exp``), it is made a constant by itself
            (docs/daily-use.md). Bools are always constants.
    """
    options = dict(
        fallback=fallback,
        optimize=optimize,
        dynamic=dynamic,
        backend=backend,
        max_graphs=max_graphs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
    )
    if fn is None:
        return public_api(lambda f: _convert(f, options))
    return _convert(fn, options)


def _convert(fn: Callable[..., Any], options: dict[str, Any] | None = None) -> Converted:
    """The converted form of ``fn``: a StaticFunction, or one bound to the object ``fn`` belongs to
    or to the arguments of a ``functools.partial``."""
    if isinstance(fn, (StaticFunction, BoundStaticFunction, PartialStaticFunction)):
        return fn  # converted already (its __call__ is dy2st's, not code to convert)
    options = options or {}
    if isinstance(fn, functools.partial):
        return PartialStaticFunction(_convert(fn.func, options), fn.args, fn.keywords)
    if inspect.ismethod(fn) and isinstance(fn.__func__, types.FunctionType):
        return BoundStaticFunction(StaticFunction(fn.__func__, **_past_self(options)), fn.__self__)
    if isinstance(fn, (types.FunctionType, staticmethod, classmethod)):
        return StaticFunction(fn, **options)
    # The class's own __call__, looked up without calling getattr on the object.
    call = next((vars(base)["__call__"] for base in type(fn).__mro__ if "__call__" in vars(base)), None)
    if isinstance(call, types.FunctionType):  # an instance of a class with a Python __call__
        return BoundStaticFunction(StaticFunction(call, **_past_self(options)), fn)
    raise ConversionError(
        f"to_static converts Python functions, and {fn!r} ({type(fn).__name__}) has no Python source to "
        "convert; call it inside a converted function instead (NumPy functions and ufuncs are staged there)"
    )


def _past_self(options: dict[str, Any]) -> dict[str, Any]:
    """The options of a function converted bound to an object: its ``static_argnums`` count the
    parameters after ``self``."""
    return {**options, "static_argnums": shifted_past_self(options.get("static_argnums"))}


@public_api
def save(fn: Callable[..., Any], path: str | os.PathLike[str], *example_args: Any, **example_kwargs: Any) -> None:
    """Write the graph ``fn`` builds for the signature of the example arguments to ``path``: one
    file (docs/deploy.md) that ``dy2st.load`` runs without ``fn``'s source, module or dy2st's
    transformer. Arrays stand for every array of their shape and dtype; Python values are baked
    in, as in ``to_static``; arrays read from globals and closures are saved by value."""
    converted = _convert(fn)
    if isinstance(converted, PartialStaticFunction):
        raise ConversionError("dy2st.save takes a function or a method, not a functools.partial")
    converted.save(path, *example_args, **example_kwargs)


@public_api
def export_onnx(
    fn: Callable[..., Any], path: str | os.PathLike[str], *example_args: Any, **example_kwargs: Any
) -> None:
    """Export the graph ``fn`` builds for the signature of the example arguments as an ONNX
    model (``pip install 'dy2st[onnx]'``; docs/onnx.md): ``cond`` becomes ``If``,
    ``while_loop`` becomes ``Loop``; an op without an ONNX form is an ``OnnxExportError`` naming
    it and the user's line."""
    converted = _convert(fn)
    if not isinstance(converted, StaticFunction):
        raise ConversionError("dy2st.export_onnx takes a function (not a method or a functools.partial)")
    converted.export_onnx(path, *example_args, **example_kwargs)


# The public cond and while_loop, with dy2st's frames hidden from the errors they raise.
cond = public_api(control_flow.cond)
while_loop = public_api(control_flow.while_loop)
