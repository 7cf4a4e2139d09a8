"""In-place updates: eager NumPy vs dy2st on loops of indexed updates, time and peak memory in one table.

    python benchmarks/inplace.py                  # n = 200, 800 and 2000 (a few minutes on 2 cores)
    python benchmarks/inplace.py --quick          # n = 50 and 200, few repeats: a smoke run
    python benchmarks/inplace.py --sizes 200,800

Two kernels that are nothing but indexed updates:

- a recurrence over the rows of the caller's array, ``A[i, :] = 0.5 * A[i - 1, :] + 1.0`` for
  ``i in range(1, n)``, updated in place as eager code updates it;
- a Cholesky factorization written with slices (``L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @
  L[j, :j]) / L[j, j]``), which fills a fresh ``L`` column by column.

Each runs with ``n = A.shape[0]``, a Python int, where dy2st rolls the loop into a ``while_loop``
over a counter (``loop`` column: rolled; docs/shapes.md), and with ``n`` passed as a 0-d integer
array, where the loop is a ``while_loop`` bounded by a tensor (tensor). Times are medians of
alternating repeats after a warm-up (``run.py``'s
method); peak memory is what ``tracemalloc`` sees one steady-state call allocate, plus for dy2st the
buffers its memory plan keeps across calls. "first s" is what the first call spends converting,
building, optimizing and generating the graph, a cost paid once per input signature. "time ratio"
is the ratio of the medians; "best ratio" that of the fastest repeats, which moves less when other
jobs share the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import MIB, _calls_per_repeat, _loop_time, traced_peak  # noqa: E402

import dy2st  # noqa: E402
from dy2st.backend.numpy.target import NUMPY_TARGET  # noqa: E402
from dy2st.passes.memory_plan import memory_report  # noqa: E402


# --- the kernels ------------------------------------------------------------------------------------
def recurrence_over(A, n):
    """Each row from the one before it, in the caller's array."""
    for i in range(1, n):
        A[i, :] = 0.5 * A[i - 1, :] + 1.0
    return A[-1].sum()


def cholesky_over(A, n):
    """The lower-triangular L with L @ L.T == A, one column per step, written with slices."""
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1 :, j] = (A[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]) / L[j, j]
    return L


# Rolled: n is the Python int A.shape[0]. The array-only signature takes dy2st's fast call path,
# as users' kernels do; a Python int argument would add the general path's 10-40 us per call.
def recurrence(A):
    return recurrence_over(A, A.shape[0])


def cholesky(A):
    return cholesky_over(A, A.shape[0])


def _rows(n: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal((n, n))


def _positive_definite(n: int) -> np.ndarray:
    m = np.random.default_rng(1).standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


@dataclass
class Case:
    name: str
    fn: Callable
    make: Callable
    tensor_loop: bool  # fn takes (A, n) with n a 0-d array: the loop is a while_loop

    def arguments(self, n: int) -> tuple:
        return (self.make(n), np.array(n)) if self.tensor_loop else (self.make(n),)


CASES = [
    Case("recurrence A[i, :] = f(A[i - 1, :])", recurrence, _rows, tensor_loop=False),
    Case("recurrence A[i, :] = f(A[i - 1, :])", recurrence_over, _rows, tensor_loop=True),
    Case("cholesky with slices", cholesky, _positive_definite, tensor_loop=False),
    Case("cholesky with slices", cholesky_over, _positive_definite, tensor_loop=True),
]


# --- measuring ---------------------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    n: int
    loop: str
    eager_time: float = 0.0
    converted_time: float = 0.0
    best_ratio: float = 0.0
    eager_peak: int = 0
    converted_peak: int = 0
    first_call: float = 0.0
    skipped: str | None = None


def measure(case: Case, n: int, quick: bool) -> Row:
    row = Row(case.name, n, "tensor" if case.tensor_loop else "rolled")
    args = case.arguments(n)
    static = dy2st.to_static(case.fn)
    try:
        start = time.perf_counter()
        graph = static.graph(*args)
        row.first_call = time.perf_counter() - start
        _check(static, case.fn, args)
    except dy2st.Dy2stError as e:
        row.skipped = f"{type(e).__name__}: {str(e).splitlines()[0].split(': error: ')[-1]}"
        return row
    repeats, min_seconds = (3, 0.01) if quick else (15, 0.2)
    eager, converted = interleaved_samples([case.fn, static], args, repeats, min_seconds)
    row.eager_time, row.converted_time = statistics.median(eager), statistics.median(converted)
    row.best_ratio = min(converted) / min(eager)
    row.eager_peak = traced_peak(case.fn, args)
    row.converted_peak = traced_peak(static, args) + memory_report(graph, NUMPY_TARGET).persistent
    return row


def interleaved_samples(fns, args, repeats: int, min_seconds: float) -> list[list[float]]:
    """Per-call times of each function over ``repeats`` alternating repeats, after a warm-up
    (``run.interleaved_medians``, keeping every sample: the best ratio is steadier under load)."""
    for fn in fns:
        fn(*args)
    number = _calls_per_repeat(fns, args, min_seconds)
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, samples):
            times.append(_loop_time(fn, args, number))
    return samples


def _check(static, fn, args) -> None:
    """Same result and same final arguments as eager NumPy, from the same starting arguments."""
    eager_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    converted_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected, got = fn(*eager_args), static(*converted_args)
    same = np.allclose(got, expected) and all(
        np.array_equal(c, e) for c, e in zip(converted_args, eager_args) if isinstance(e, np.ndarray)
    )
    if not same:
        raise AssertionError(f"{fn.__name__}: converted results differ from eager NumPy")


# --- the table ---------------------------------------------------------------------------------------
COLUMNS = ("kernel", "n", "loop", "eager ms", "dy2st ms", "time ratio", "best ratio", "eager MiB", "dy2st MiB")
COLUMNS += ("mem ratio", "first s")


def cells(row: Row) -> list[str]:
    head = [row.name, str(row.n), row.loop]
    if row.skipped:
        return [*head, f"skipped: {row.skipped}"]
    return [
        *head,
        f"{row.eager_time * 1e3:.2f}",
        f"{row.converted_time * 1e3:.2f}",
        f"{row.converted_time / row.eager_time:.2f}",
        f"{row.best_ratio:.2f}",
        f"{row.eager_peak / MIB:.3f}",
        f"{row.converted_peak / MIB:.3f}",
        f"{row.converted_peak / max(row.eager_peak, 1):.2f}",
        f"{row.first_call:.2f}",
    ]


def print_table(rows: list[Row]) -> None:
    lines = [list(COLUMNS)] + [cells(r) for r in rows]
    full = [line for line in lines if len(line) == len(COLUMNS)]
    widths = [max(len(line[i]) for line in full) for i in range(len(COLUMNS))]
    for line in lines:
        skipped = len(line) < len(COLUMNS)  # kernel, n, loop, then why it did not run
        shown = line[:3] if skipped else line
        text = [c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(shown, widths))]
        print("  ".join(text + line[3:4] if skipped else text).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 50 and 200, few repeats (a smoke run)")
    parser.add_argument("--sizes", metavar="N,N", help="comma-separated sizes (default 200,800,2000)")
    options = parser.parse_args(argv)
    default = [50, 200] if options.quick else [200, 800, 2000]
    sizes = [int(s) for s in options.sizes.split(",")] if options.sizes else default
    rows = []
    for n in sizes:
        for case in CASES:
            rows.append(measure(case, n, options.quick))
            print(f"  measured {case.name}, n = {n}, {rows[-1].loop}", file=sys.stderr, flush=True)
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(f"in-place updates (numpy {np.__version__}; {os.cpu_count()} cpus; OPENBLAS_NUM_THREADS={blas_threads})")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
