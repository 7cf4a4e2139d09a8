"""Tiered execution: a graph starts on the NumPy tier and moves to compiled code when it is ready.

``to_static(backend=...)`` chooses (``docs/compiled-tier.md``):

    "auto"      the default (``DY2ST_BACKEND`` overrides it): graphs run on the NumPy tier at once;
                when Numba is installed and the loops the compiled tier can run have taken
                ``DY2ST_COMPILE_AFTER_MS`` (50 ms) of run time, they are compiled in a background
                thread and the compiled executor is swapped in. A call never waits for the compiler.
    "compiled"  compile when the graph is built, before its first call returns (needs Numba).
    "numpy"     the NumPy tier only.

A loop Numba fails to compile stays on the NumPy tier (the debug log of ``logging.getLogger("dy2st")``
says why); the tier never makes a function fail.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dy2st.backend.numba import numba_available
from dy2st.backend.numba.codegen import CompiledCodeGenerator, CompiledLoop, WatchingCodeGenerator
from dy2st.backend.numba.fused_kernel import CompiledFusedKernel
from dy2st.backend.numba.fused_source import FusedSource
from dy2st.backend.numba.kernel_cache import load_module, machine_entry, numba_type
from dy2st.backend.numba.loop_source import LoopSource
from dy2st.backend.numba.regions import CompiledRegions, compiled_kernels, compiled_loops, compiled_runs
from dy2st.backend.numba.scalar_source import OVERFLOW_MESSAGE, PRELUDE
from dy2st.backend.numba.support import representation
from dy2st.backend.numpy.codegen import generate
from dy2st.backend.numpy.executor import Executor
from dy2st.backend.numpy.fused import build_fused_kernel
from dy2st.ir.core import Graph, Op
from dy2st.ir.printer import describe_op
from dy2st.passes.base import Pass
from dy2st.passes.pipeline import VERIFY_EVERY_PASS

BACKENDS = ("auto", "compiled", "numpy")
BACKEND_ENV = "DY2ST_BACKEND"
COMPILE_AFTER_ENV = "DY2ST_COMPILE_AFTER_MS"
COMPILE_AFTER_MS = 50.0

logger = logging.getLogger("dy2st")


def chosen_backend(backend: str | None) -> str:
    """The backend a function runs on: ``backend``, else ``$DY2ST_BACKEND``, else "auto". Asking for
    "compiled" where Numba is missing is an error now, not at the first call."""
    name = backend if backend is not None else os.environ.get(BACKEND_ENV) or "auto"
    if name not in BACKENDS:
        source = "backend" if backend is not None else BACKEND_ENV
        raise ValueError(f"{source} must be one of {', '.join(map(repr, BACKENDS))}, got {name!r}")
    if name == "compiled" and not numba_available():
        raise ModuleNotFoundError("backend='compiled' needs Numba: pip install 'dy2st[jit]'")
    return name


def tier_passes(backend: str) -> list[Pass]:
    """The passes the compiled tier adds after the NumPy tier's (none without Numba)."""
    return [CompiledRegions()] if backend != "numpy" and numba_available() else []


def make_executor(graph: Graph, writebacks: dict[int, int] | None, backend: str) -> Executor:
    """The executor of an optimized graph on ``backend``."""
    if backend == "numpy" or not (compiled_loops(graph) or compiled_kernels(graph)):
        return Executor(graph, writebacks)
    return TieredExecutor(graph, writebacks, wait=backend == "compiled")


@dataclass
class CompiledRegionsOf:
    """What the compiled tier compiled of one graph, and why it left the rest."""

    loops: dict[Op, CompiledLoop] = field(default_factory=dict)
    kernels: dict[Op, CompiledFusedKernel] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def compile_regions(graph: Graph) -> CompiledRegionsOf:
    """Each loop and fused group the ``compiled-regions`` pass marked, compiled; and why the
    others were not."""
    result = CompiledRegionsOf()
    loops = [(run, LoopSource(run, f"loop_{k}")) for k, run in enumerate(compiled_runs(graph))]
    kernels = [(op, FusedSource(op, f"fused_{k}")) for k, op in enumerate(compiled_kernels(graph))]
    # Loops written alike (the copies of an unrolled outer loop) share one function: compiled once.
    unnamed = {loop.name: loop.source.replace(f"def {loop.name}(", "def loop(") for _, loop in loops}
    shared: dict[str, str] = {}
    for _, loop in loops:
        shared.setdefault(unnamed[loop.name], loop.name)
    try:
        sources = [loop.source for _, loop in loops if shared[unnamed[loop.name]] == loop.name]
        sources += [kernel.source for _, kernel in kernels]
        module = load_module("\n\n".join(sources), PRELUDE)
    except Exception as error:  # a dy2st bug: the NumPy tier still runs the graph
        result.failures.append(f"the generated module failed to load: {type(error).__name__}: {error}")
        logger.debug("compiled tier: %s", result.failures[-1])
        return result
    for run, loop in loops:
        signature = tuple(numba_type(representation(v), v.type.ndim) for v in loop.params)
        functions = _compiled(module, run[0], [(shared[unnamed[loop.name]], signature)], result.failures)
        if functions:
            ((function, entry),) = functions
            compiled = CompiledLoop(function, loop.params, loop.returned, loop.errors, loop.source, run, entry)
            result.loops.update(dict.fromkeys(run, compiled))
    for op, kernel in kernels:
        values = [*kernel.inputs, *op.results]
        signature = (numba_type(np.dtype(np.int64), 0), *(numba_type(representation(v), v.type.ndim) for v in values))
        names = [(f"{kernel.name}_serial", signature), (f"{kernel.name}_parallel", signature)]
        functions = _compiled(module, op, names, result.failures)
        if functions:
            (serial, serial_entry), (parallel, parallel_entry) = functions
            fallback = build_fused_kernel(op).entry
            entries = (serial_entry, parallel_entry)
            result.kernels[op] = CompiledFusedKernel(op, serial, parallel, fallback, kernel.source, entries)
    return result


def _compiled(
    module: Any, op: Op, functions: list[tuple[str, tuple[Any, ...]]], failures: list[str]
) -> list[tuple[Any, Any]]:
    """The module's functions ``functions`` compiled for their signatures, each with the entry of
    that machine code (``machine_entry``) ([] if one fails)."""
    where = f"{describe_op(op)}" + (f" ({op.loc.short})" if op.loc else "")
    started = time.perf_counter()
    compiled = []
    for name, signature in functions:
        try:
            function = getattr(module, name)
            with warnings.catch_warnings():
                # np.dot of a strided view (a column) copies it first: NumPy's matmul does too,
                # and the user did not write this code, so Numba's advice is noise to them.
                warnings.simplefilter("ignore", numba_performance_warning())
                function.compile(signature)
            entry = machine_entry(function, signature, checked=VERIFY_EVERY_PASS)
        except Exception as error:
            message = str(error).splitlines()[0] if str(error) else ""
            failures.append(f"{where}: {type(error).__name__}: {message}")
            logger.debug("compiled tier: %s stays on the NumPy tier: %s", where, failures[-1])
            return []
        compiled.append((function, entry))
    logger.debug("compiled tier: %s compiled in %.3f s", where, time.perf_counter() - started)
    return compiled


def numba_performance_warning() -> type[Warning]:
    """Numba's ``NumbaPerformanceWarning`` (imported only once something compiles)."""
    from numba.core.errors import NumbaPerformanceWarning

    return NumbaPerformanceWarning


class TieredExecutor(Executor):
    """An executor that runs the NumPy tier until its compiled loops are ready, then them.

    Args:
        graph: the optimized graph, its loops marked by the ``compiled-regions`` pass.
        writebacks: as for ``Executor``.
        wait: compile now (``backend="compiled"``) instead of in the background once the marked
            loops have run long enough.

    Attributes:
        tier: "numpy" until the compiled code is swapped in, then "compiled".
        loops: the compiled loops, by op.
        kernels: the compiled fused groups, by op.
        failures: why marked loops were left on the NumPy tier.
    """

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None, wait: bool = False):
        self.tier = "numpy"
        self.loops: dict[Op, CompiledLoop] = {}
        self.kernels: dict[Op, CompiledFusedKernel] = {}
        self.failures: list[str] = []
        self._errors: dict[str, Op] = {}
        self._spent = 0.0
        self._threshold = float(os.environ.get(COMPILE_AFTER_ENV, COMPILE_AFTER_MS)) / 1000
        self._compiler: threading.Thread | None = None
        watching = functools.partial(WatchingCodeGenerator, watch=None if wait else self._watch)
        super().__init__(graph, writebacks, generate(graph, writebacks, generator_cls=watching))
        self._numpy_code = self.code
        if wait:
            self.compile()

    @property
    def compiled_source(self) -> str:
        """The Numba source of the compiled loops and fused groups (empty before they are compiled)."""
        loops = {id(loop): loop for loop in self.loops.values()}.values()  # a sequence's, once
        return "\n\n".join([*(loop.source for loop in loops), *(k.source for k in self.kernels.values())])

    def _watch(self, seconds: float) -> None:
        """Called by the NumPy tier's code after each marked loop: start compiling once they have
        taken ``COMPILE_AFTER_MS`` in all."""
        self._spent += seconds
        if self._spent >= self._threshold and self._compiler is None:
            self._compiler = threading.Thread(target=self.compile, name="dy2st-compile")
            self._compiler.start()

    def wait_compiled(self, timeout: float | None = None) -> bool:
        """Start compiling now if it has not started, wait for it, and say whether the compiled
        code runs (benchmarks and tests use it; calls never need to)."""
        if self._compiler is None:
            self._watch(self._threshold)
        assert self._compiler is not None
        self._compiler.join(timeout)
        return self.tier == "compiled"

    def compile(self) -> None:
        """Compile the marked loops and fused groups and swap in the executor calling them."""
        try:
            regions = compile_regions(self.graph)
            self.failures = regions.failures
            if not regions.loops and not regions.kernels:
                return
            compiled = functools.partial(CompiledCodeGenerator, loops=regions.loops, kernels=regions.kernels)
            code = generate(self.graph, self.writebacks, generator_cls=compiled, variant="compiled")
        except Exception as error:  # a dy2st bug: keep the NumPy tier, which is correct
            self.failures.append(f"{type(error).__name__}: {error}")
            logger.debug("compiled tier: %s stays on the NumPy tier: %s", self.graph.name, self.failures[-1])
            return
        self.loops = regions.loops
        self.kernels = regions.kernels
        self._errors = {message: op for loop in regions.loops.values() for message, op in loop.errors.items()}
        self._codes[code.filename] = code
        self.code = code
        self.function = code.function  # what ``run`` calls from now on
        self.tier = "compiled"

    def recover(self, error: Exception, args: tuple) -> tuple:
        """When compiled code meets a Python int beyond 64 bits, which the eager code holds and
        compiled code cannot, go back to the NumPy tier for good, and run this call there too
        unless the graph had already updated an argument in place (then the error says how to
        run it); any other error names the user's op and line."""
        if self.tier == "compiled" and isinstance(error, OverflowError) and OVERFLOW_MESSAGE in str(error):
            self.demote(f"{type(error).__name__}: {OVERFLOW_MESSAGE}")
            if not self.writebacks:
                try:
                    return self.function(*args)
                except Exception as again:
                    return super().recover(again, args)
        return super().recover(error, args)

    def demote(self, reason: str) -> None:
        """Run the NumPy tier from now on."""
        logger.debug("compiled tier: %s goes back to the NumPy tier: %s", self.graph.name, reason)
        self.failures.append(reason)
        self.code = self._numpy_code
        self.function = self._numpy_code.function
        self.tier = "numpy"

    def failing_op(self, error: BaseException) -> Op | None:
        """The op an error of compiled code names (an index out of bounds, an empty max), else as
        the NumPy tier."""
        message = error.args[0] if isinstance(error, (IndexError, ValueError)) and error.args else None
        found = self._errors.get(message) if isinstance(message, str) else None
        return found if found is not None else super().failing_op(error)
