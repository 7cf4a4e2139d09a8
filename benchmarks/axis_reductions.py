"""Means, maxima and minima over axes inside a loop: eager, the NumPy tier, the compiled tier and
hand-written Numba.

The kernel takes 100 row blocks of 8 rows of a 64x32 float64 array and writes each block's column
means, column maxima (both along a kept last axis: element by element) and row minima (runs of 32
reduced by NumPy's SIMD reduction, which the compiled tier models in ``extremes``)::

    python benchmarks/axis_reductions.py

Variants take turns, three rounds; each figure is the median of 15 repeats of 20 calls, and the
printed one the median of the rounds.
"""

from __future__ import annotations

import os
import statistics
import time

import numba
import numpy as np

import dy2st

BLOCK_ROWS = 8


def block_stats(x, out):
    for i in range(out.shape[0]):
        j = i % (x.shape[0] - 7)
        block = x[j : j + 8]
        out[i, 0] = block.mean(axis=0)
        out[i, 1] = np.max(block, axis=0)
        out[i, 2, :8] = block.min(axis=1)
    return out


@numba.njit(nogil=True)
def block_stats_numba(x, out):
    for i in range(out.shape[0]):
        j = i % (x.shape[0] - 7)
        for c in range(x.shape[1]):
            total = 0.0
            largest = x[j, c]
            for r in range(BLOCK_ROWS):
                v = x[j + r, c]
                total += v
                largest = largest if largest > v else v
            out[i, 0, c] = total / BLOCK_ROWS
            out[i, 1, c] = largest
        for r in range(BLOCK_ROWS):
            smallest = x[j + r, 0]
            for c in range(1, x.shape[1]):
                v = x[j + r, c]
                smallest = smallest if smallest < v else v
            out[i, 2, r] = smallest
    return out


def median_us(fn, args, calls: int = 20, repeats: int = 15) -> float:
    """The median time of one call, in microseconds."""
    fn(*args)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        times.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(times)


def main() -> None:
    x = np.random.default_rng(0).standard_normal((64, 32))
    out = np.zeros((100, 3, 32))
    variants = {
        "eager": block_stats,
        "numpy": dy2st.to_static(block_stats, backend="numpy"),
        "compiled": dy2st.to_static(block_stats, backend="compiled"),
        "numba": block_stats_numba,
    }
    expected = block_stats(x, out.copy())
    for name in ("numpy", "compiled"):
        assert np.array_equal(variants[name](x, out.copy()), expected), name
    np.testing.assert_allclose(block_stats_numba(x, out.copy()), expected, rtol=1e-15)
    rounds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(3):
        for name, fn in variants.items():
            rounds[name].append(median_us(fn, (x, out)))
    medians = {name: statistics.median(times) for name, times in rounds.items()}
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, median in medians.items():
        print(f"{name:9s} {median:9.1f} us  (rounds {', '.join(f'{t:.1f}' for t in rounds[name])})")
    compiled = medians["compiled"]
    print(
        f"compiled / eager {compiled / medians['eager']:.3f}, / NumPy tier {compiled / medians['numpy']:.3f}, "
        f"/ Numba {compiled / medians['numba']:.1f}"
    )


if __name__ == "__main__":
    main()
