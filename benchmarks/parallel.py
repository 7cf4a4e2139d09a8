"""Does running two independent ops on two threads pay on this machine?

    python benchmarks/parallel.py [--repeats N]

Measures the seed's pair ``Y1 = X1 @ W1; Y2 = X2 @ W2`` and a pair of independent elementwise ops,
one after the other vs. one on a helper thread while the caller's thread runs the other (what an
executor would do). NumPy releases the GIL inside both kernels; matmul is already multithreaded by
BLAS, ufunc loops are not. The figures decide whether the executor schedules ops in parallel
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np


class HelperThread:
    """One long-lived worker thread: ``run(fn, *args)`` hands it a call; ``wait()`` returns the result."""

    def __init__(self):
        self._go = threading.Semaphore(0)
        self._done = threading.Semaphore(0)
        self._job = None
        self._result = None
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            self._go.acquire()
            fn, args = self._job
            self._result = fn(*args)
            self._done.release()

    def run(self, fn, *args):
        self._job = (fn, args)
        self._go.release()

    def wait(self):
        self._done.acquire()
        return self._result


def median_seconds(fn, repeats: int) -> float:
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def compare(label: str, op, a1, b1, a2, b2, helper: HelperThread, repeats: int) -> None:
    def sequential():
        return op(a1, b1), op(a2, b2)

    def parallel():
        helper.run(op, a2, b2)
        first = op(a1, b1)
        return first, helper.wait()

    seq, par = [], []
    for _ in range(3):  # alternate, so both see the same background load
        seq.append(median_seconds(sequential, repeats))
        par.append(median_seconds(parallel, repeats))
    s, p = statistics.median(seq), statistics.median(par)
    print(f"{label:<34} sequential {s * 1e3:8.3f} ms   two threads {p * 1e3:8.3f} ms   speed-up {s / p:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    helper = HelperThread()
    for n in (128, 512, 1024, 2048):
        x1, w1, x2, w2 = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(4))
        compare(f"matmul pair {n}x{n} f32", np.matmul, x1, w1, x2, w2, helper, options.repeats)
        # What the executor runs after memory planning: each product into a buffer kept across calls.
        buffers = {id(x1): np.empty((n, n), np.float32), id(x2): np.empty((n, n), np.float32)}

        def into_buffer(x, w, buffers=buffers):  # bound now: each size has its own buffers
            return np.matmul(x, w, out=buffers[id(x)])

        compare("  same, into planned buffers", into_buffer, x1, w1, x2, w2, helper, options.repeats)
    for n in (1 << 14, 1 << 18, 1 << 22):
        a1, b1, a2, b2 = (rng.standard_normal(n, dtype=np.float32) for _ in range(4))
        compare(f"hypot pair {n} f32", np.hypot, a1, b1, a2, b2, helper, options.repeats)


if __name__ == "__main__":
    main()
