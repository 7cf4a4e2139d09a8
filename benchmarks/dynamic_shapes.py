"""A stream of input lengths: graphs built and time spent, with and without symbolic sizes.

    python benchmarks/dynamic_shapes.py            # 50 lengths per kernel
    python benchmarks/dynamic_shapes.py --quick    # 10 lengths

Each kernel is called once per length (lengths 100, 137, 174, ...), as a program that processes
records of varying size does. For each way of converting it the table gives the graphs built
(``num_graphs``) and the total time of the stream against eager NumPy's (builds included), then
the median steady call at the last length against eager (measured alternating with eager, so
under the same load). ``automatic`` is ``to_static`` as it is (a size that changes becomes
symbolic), ``per shape`` is ``to_static(dynamic=False)`` (one graph per length).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import dy2st


def centered(x, y):
    z = x * 2.0 + y
    return np.sum(z), z[1:] - z[:-1]


def smooth(x):
    n = len(x)
    y = x.copy()
    for i in range(1, n - 1):
        y[i] = 0.5 * x[i] + 0.25 * (x[i - 1] + x[i + 1])
    return y


def running_sum(x):
    out = np.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
        out[i] = s
    return out


def heat(u):
    for _ in range(200):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def normalize_rows(A):
    d = A - A.mean(axis=1, keepdims=True)
    return d / np.sqrt((d * d).sum(axis=1, keepdims=True) + 1e-9)


KERNELS = {
    "centered difference": (centered, lambda n, rng: (rng.standard_normal(n), rng.standard_normal(n))),
    "3-point smooth (loop)": (smooth, lambda n, rng: (rng.standard_normal(n),)),
    "running sum (loop)": (running_sum, lambda n, rng: (rng.standard_normal(n),)),
    "heat stencil T=200": (heat, lambda n, rng: (rng.standard_normal(n),)),
    "normalize rows n x 64": (normalize_rows, lambda n, rng: (rng.standard_normal((n, 64)),)),
}


def stream(fn, lengths, make) -> float:
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for n in lengths:
        fn(*make(n, rng))
    return time.perf_counter() - start


def steady(fns, args, repeats: int = 15) -> list[float]:
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            start = time.perf_counter()
            fn(*copies)
            times[k].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 lengths instead of 50")
    options = parser.parse_args(argv)
    lengths = [100 + 37 * k for k in range(10 if options.quick else 50)]
    print(f"{len(lengths)} lengths from {lengths[0]} to {lengths[-1]}")
    print(f"{'kernel':<24}{'conversion':<12}{'graphs':>7}{'stream ms':>11}{'eager ms':>10}{'ratio':>7}{'steady':>8}")
    for name, (kernel, make) in KERNELS.items():
        eager_stream = stream(kernel, lengths, make)
        last = make(lengths[-1], np.random.default_rng(1))
        for label, dynamic in (("automatic", None), ("per shape", False)):
            converted = dy2st.to_static(kernel, dynamic=dynamic)
            total = stream(converted, lengths, make)
            eager_call, converted_call = steady([kernel, converted], last)
            print(
                f"{name:<24}{label:<12}{converted.num_graphs:>7}{total * 1e3:>11.1f}{eager_stream * 1e3:>10.1f}"
                f"{total / eager_stream:>7.2f}{converted_call / eager_call:>8.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
