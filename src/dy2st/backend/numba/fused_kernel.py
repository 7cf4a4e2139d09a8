"""The compiled kernel of one fused group, called as the NumPy tier's fused kernel is:
``kernel(*inputs, out=None, out_may_overlap=False)``.

It runs the compiled loop when every array input is a C-contiguous, aligned, writeable array of
the group's shape and dtype (and ``out``, when given, one too), for large arrays on every core
or on one, whichever was faster lately (``CoreChoice``: busy cores make parallel calls wait); any
other call (a broadcast input, a strided view, an output that may overlap an input it reads later)
goes to the NumPy tier's tiled kernel, which gives the same values. A group computing one of our
own math functions (``vector_math``) runs compiled only on large arrays
(``OWN_MATH_PARALLEL_ELEMENTS``): on one core NumPy's SIMD loops are faster than ours, so smaller
calls run the NumPy tier's kernel (each result within 4 ulp of the compiled loop's).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from dy2st.backend.numba.support import uses_own_math
from dy2st.ir.core import Op

# Elements from which the parallel loop pays for starting its threads (measured on 2 cores: the
# serial loop is faster below about 30 000 float32 tanh evaluations).
PARALLEL_ELEMENTS = 1 << 16
# Elements from which a group computing our own math functions runs compiled. On one core NumPy's
# SIMD loops are faster than ours (``vector_math``), so the group runs compiled only on every core.
# At 64K float32 elements that saved 16 us of 45 (W1: 0.029 against 0.045 ms on the NumPy tier),
# while a parallel call on a machine whose cores other processes keep busy waits for its threads to
# be scheduled, 4-16 ms (docs/compiled-tier.md): from 1M elements the NumPy tier takes a millisecond
# or more, and two cores save about half of it.
OWN_MATH_PARALLEL_ELEMENTS = 1 << 20


class CoreChoice:
    """Whether a large call runs its loop on every core or on one, from the time recent calls took.

    The two loops give the same bits (each element is computed alone), only their time differs.
    On an idle machine the parallel loop takes half the serial one's; while other processes keep
    the cores busy, a parallel call waits until each of its threads is scheduled, and between
    them: W1 at 4M took 22 ms in parallel against 2.9 ms on one core (load average 5.7,
    docs/performance.md 8.3). The loop whose last call took less time per element runs, and the
    other is tried again every ``RETRY_EVERY`` calls, as the load changes.
    """

    RETRY_EVERY = 16

    def __init__(self) -> None:
        self.seconds_per_element: dict[bool, float | None] = {True: None, False: None}
        self.calls = 0

    def parallel(self) -> bool:
        """Should this call run on every core?"""
        self.calls += 1
        on_every_core, on_one = self.seconds_per_element[True], self.seconds_per_element[False]
        if on_every_core is None or on_one is None:
            return on_every_core is None  # each is measured once first
        faster = on_every_core <= on_one
        return faster if self.calls % self.RETRY_EVERY else not faster

    def record(self, parallel: bool, seconds: float, count: int) -> None:
        """A call of ``count`` elements ran ``parallel`` (or not) in ``seconds``. The first call is
        not counted: it may have started the threads and touched its arrays' memory first."""
        if self.calls > 1:
            self.seconds_per_element[parallel] = seconds / count


class CompiledFusedKernel:
    """A fused group's compiled loops (``serial``, ``parallel``) with the NumPy tier's kernel as
    the way every other call runs."""

    def __init__(self, op: Op, serial: Any, parallel: Any, fallback: Any, source: str, entries: tuple[Any, Any]):
        block = op.regions[0].block
        self.arrays = [arg.type.ndim > 0 for arg in block.args]
        self.dtypes = [arg.type.dtype for arg in block.args]
        self.result_dtypes = [result.type.dtype for result in op.results]
        self.single = len(op.results) == 1
        # Our math functions are slower than NumPy's SIMD loops on one core (``vector_math``): a
        # group using them runs compiled on every core of large arrays, on the NumPy tier below.
        self.serial_pays = not uses_own_math(op)
        self.serial = serial
        self.parallel = parallel
        # Their machine code's entries (``kernel_cache.machine_entry``): ``_arguments`` and
        # ``_outputs`` test the arguments against the compiled signature.
        self.serial_entry, self.parallel_entry = entries
        self.fallback = fallback
        self.source = source
        self.cores = CoreChoice()

    def __call__(self, *inputs: Any, out: Any = None, out_may_overlap: bool = False) -> Any:
        arguments = self._arguments(inputs) if not out_may_overlap else None
        if arguments is None:
            return self.fallback(*inputs, out=out, out_may_overlap=out_may_overlap)
        shape, values = arguments
        if not self.serial_pays and math.prod(shape) < OWN_MATH_PARALLEL_ELEMENTS:
            return self.fallback(*inputs, out=out, out_may_overlap=out_may_overlap)
        outputs = self._outputs(shape, out)
        if outputs is None:
            return self.fallback(*inputs, out=out, out_may_overlap=out_may_overlap)
        count = outputs[0].size
        if count < PARALLEL_ELEMENTS:
            self.serial_entry(count, *values, *outputs)
        else:
            self._run_large(count, values, outputs)
        return outputs[0] if self.single else tuple(outputs)

    def _run_large(self, count: int, values: list[Any], outputs: list[np.ndarray]) -> None:
        """Run the loop on every core or on one, whichever has been faster lately (``CoreChoice``)."""
        parallel = self.cores.parallel()
        start = time.perf_counter()
        (self.parallel_entry if parallel else self.serial_entry)(count, *values, *outputs)
        self.cores.record(parallel, time.perf_counter() - start, count)

    def _arguments(self, inputs: tuple[Any, ...]) -> tuple[tuple[int, ...], list[Any]] | None:
        """The iteration shape and the values the compiled loop takes, or None when an input does
        not fit it."""
        shape = None
        values = []
        for value, is_array, dtype in zip(inputs, self.arrays, self.dtypes):
            if not is_array:
                values.append(value[()] if type(value) is np.ndarray else value)
                continue
            # The machine code is compiled for C-contiguous, aligned, writeable arrays: anything
            # else would make Numba compile another version while the call waits.
            if type(value) is not np.ndarray or value.dtype != dtype or not value.flags.carray:
                return None
            if shape is None:
                shape = value.shape
            elif value.shape != shape:
                return None
            values.append(value)
        return (shape, values) if shape is not None else None

    def _outputs(self, shape: tuple[int, ...], out: Any) -> list[np.ndarray] | None:
        """The arrays the loop writes: ``out`` (None for a result the kernel allocates, as the
        NumPy tier's kernel takes it), or new ones; None where an ``out`` does not fit the loop.
        An ``out`` may be an input: each element is read before it is written."""
        if out is None:
            return [np.empty(shape, dtype) for dtype in self.result_dtypes]
        outs = [out] if self.single else list(out)
        for k, (array, dtype) in enumerate(zip(outs, self.result_dtypes)):
            if array is None:
                outs[k] = np.empty(shape, dtype)
                continue
            if type(array) is not np.ndarray or array.shape != shape or array.dtype != dtype:
                return None
            if not array.flags.carray:  # C-ordered, aligned and writeable, as compiled
                return None
        return outs
