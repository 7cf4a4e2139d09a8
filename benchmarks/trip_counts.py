"""Build cost against trip count: loops over a Python ``range`` roll into one ``while_loop``.

    python benchmarks/trip_counts.py            # T = 10, 100, 1000; n = 10, 50, 200
    python benchmarks/trip_counts.py --quick    # small sizes, one repeat: a smoke run

For each kernel and size it prints the first call (convert + build + optimize + run, in this
process, median over fresh ``to_static`` objects), the op count of the optimized graph (every op,
recursively into regions), whether the kernel's loop was rolled (``dy2st dump --ir`` prints the
same decision), and the steady call against eager NumPy (medians, eager and converted calls
alternating, so the ratio is measured under one load). A kernel whose loop rolls keeps its op
count as the trip count grows; bodies that slice with the counter (``A[i, :i]``) roll too, their
slices having data-dependent lengths (docs/shapes.md). "double buffering" writes one buffer and swaps
the names (``a, b = b, a``), which rolls too (a rotation counter, docs/shapes.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import dy2st


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def jacobi_2d(a, steps):
    for _ in range(steps):
        a[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return a


def jacobi_swap(a, b, steps):
    for _ in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a


def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def lu(A):
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1 :, k] = A[k + 1 :, k] / A[k, k]
        A[k + 1 :, k + 1 :] -= np.outer(A[k + 1 :, k], A[k, k + 1 :])
    return A


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1 :, j] = (A[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]) / L[j, j]
    return L


def edit_distance(a, b):
    D = np.zeros((a.shape[0] + 1, b.shape[0] + 1))
    D[:, 0] = np.arange(a.shape[0] + 1)
    D[0, :] = np.arange(b.shape[0] + 1)
    for i in range(1, a.shape[0] + 1):
        for j in range(1, b.shape[0] + 1):
            cost = 0.0 if a[i - 1] == b[j - 1] else 1.0
            D[i, j] = min(D[i - 1, j] + 1.0, D[i, j - 1] + 1.0, D[i - 1, j - 1] + cost)
    return D


def _spd_args(n: int) -> tuple:
    M = np.random.default_rng(0).random((n, n))
    return (M @ M.T + n * np.eye(n),)


def _strings_args(n: int) -> tuple:
    rng = np.random.default_rng(0)
    return rng.integers(0, 4, n), rng.integers(0, 4, n)


def _heat_args(t: int) -> tuple:
    return np.sin(np.linspace(0.0, 3.0, 256)), t


def _jacobi_args(t: int) -> tuple:
    return np.random.default_rng(0).random((64, 64)), t


def _swap_args(t: int) -> tuple:
    a = np.sin(np.linspace(0.0, 3.0, 4096))
    return a, a.copy(), t


def _triangular_args(n: int) -> tuple:
    rng = np.random.default_rng(0)
    return np.tril(rng.random((n, n))) + n * np.eye(n), rng.random(n)


def _lu_args(n: int) -> tuple:
    rng = np.random.default_rng(0)
    return rng.random((n, n)) + n * np.eye(n)


KERNELS: list[tuple[str, Callable, Callable[[int], tuple], str]] = [
    ("heat stencil", heat, _heat_args, "T"),
    ("jacobi 2-D", jacobi_2d, _jacobi_args, "T"),
    ("double buffering", jacobi_swap, _swap_args, "T"),
    ("triangular solve", forward_substitution, _triangular_args, "n"),
    ("LU", lu, lambda n: (_lu_args(n),), "n"),
    ("Cholesky", cholesky, _spd_args, "n"),
    ("edit distance", edit_distance, _strings_args, "n"),
]


def _copies(args: tuple) -> tuple:
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def first_call(fn: Callable, args: tuple, repeats: int) -> tuple[float, dy2st.StaticFunction]:
    times = []
    static = dy2st.to_static(fn)
    for _ in range(repeats):
        static = dy2st.to_static(fn)
        call_args = _copies(args)
        start = time.perf_counter()
        static(*call_args)
        times.append(time.perf_counter() - start)
    return statistics.median(times), static


def steady_ratio(fn: Callable, static: dy2st.StaticFunction, args: tuple, repeats: int) -> tuple[float, float]:
    eager_times, converted_times = [], []
    for _ in range(repeats):
        call_args = _copies(args)
        start = time.perf_counter()
        fn(*call_args)
        eager_times.append(time.perf_counter() - start)
        call_args = _copies(args)
        start = time.perf_counter()
        static(*call_args)
        converted_times.append(time.perf_counter() - start)
    return statistics.median(eager_times), statistics.median(converted_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    options = parser.parse_args()
    trips = [10, 30] if options.quick else [10, 100, 1000]
    sizes = [10, 20] if options.quick else [10, 50, 200]
    repeats = 1 if options.quick else 3
    header = f"{'kernel':<18} {'size':>7} {'first call':>11} {'ops':>6}  {'loop':<9} "
    print(header + f"{'eager':>10} {'dy2st':>10} {'ratio':>6}")
    for name, fn, make_args, axis in KERNELS:
        for size in trips if axis == "T" else sizes:
            args = make_args(size)
            first, static = first_call(fn, args, repeats)
            graph = static.graph(*_copies(args))
            ops = sum(1 for _ in graph.walk())
            rolled = "rolled" if any("rolled into" in note for note in graph.notes) else "unrolled"
            eager, converted = steady_ratio(fn, static, args, max(3, 3 * repeats))
            print(
                f"{name:<18} {axis}={size:<5} {first * 1e3:>9.1f}ms {ops:>6}  {rolled:<9} "
                f"{eager * 1e3:>8.2f}ms {converted * 1e3:>8.2f}ms {converted / eager:>6.2f}"
            )


if __name__ == "__main__":
    main()
