"""The NumPy floor under the fused W1 kernel: the same 11 ufuncs, written by hand over blocks.

W1's 4M target (0.012x eager) asks more than NumPy can give: the fused kernel already calls each
ufunc once per 64K-element tile with ``out=`` into cache-resident scratch. This script times that
kernel against a hand-written loop of the same 11 ufunc calls with ``out=`` over the same blocks
(no dy2st involved) and against the eager chain, so the floor is measured, not assumed::

    python benchmarks/ufunc_floor.py              # 4M float32, 9 interleaved repeats
    python benchmarks/ufunc_floor.py --size 65536
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workloads  # noqa: E402

import dy2st  # noqa: E402

BLOCK = 65536


def hand_blocked(x: np.ndarray, out: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    """W1 (``x**3`` as ``x*x*x``) with the fused kernel's ufunc sequence, block by block."""
    for start in range(0, x.size, BLOCK):
        xb, ob = x[start : start + BLOCK], out[start : start + BLOCK]
        a, b = s0[: xb.size], s1[: xb.size]
        np.multiply(xb, xb, out=a)
        np.multiply(a, xb, out=a)
        np.multiply(0.044715, a, out=a)
        np.add(xb, a, out=a)
        np.multiply(0.7978845608, a, out=a)
        np.multiply(0.5, xb, out=b)
        np.tanh(a, out=a)
        np.add(1.0, a, out=a)
        np.multiply(b, a, out=a)
        np.multiply(a, 1.702, out=a)
        np.add(a, 0.25, out=ob)
    return out


def single_ufunc(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """One pass of the cheapest ufunc over the whole array: memory traffic alone."""
    return np.add(x, 0.25, out=out)


def median_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 22)
    parser.add_argument("--repeats", type=int, default=9)
    options = parser.parse_args(argv)
    x = np.random.default_rng(0).standard_normal(options.size, dtype=np.float32)
    out = np.empty_like(x)
    s0, s1 = np.empty(BLOCK, np.float32), np.empty(BLOCK, np.float32)
    static = dy2st.to_static(workloads.gelu_chain)
    assert np.array_equal(static(x), hand_blocked(x, out, s0, s1))  # the same ufuncs, the same bits
    rows = {
        "eager x**3": lambda: workloads.gelu_chain(x),
        "eager x*x*x": lambda: workloads.gelu_chain_cubed(x),
        "dy2st fused": lambda: static(x),
        "hand-blocked 11 ufuncs": lambda: hand_blocked(x, out, s0, s1),
        "one add pass": lambda: single_ufunc(x, out),
    }
    medians = {name: median_ms(fn, options.repeats) for name, fn in rows.items()}
    eager = medians["eager x**3"]
    print(f"W1 floor, {options.size} float32, load {os.getloadavg()[0]:.2f}")
    for name, ms in medians.items():
        print(f"{name:24s} {ms:9.3f} ms  {ms / eager:7.4f}x eager x**3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
