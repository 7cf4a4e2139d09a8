"""Converted functions called from several threads at once: one graph per signature, and results
equal to eager NumPy's in every thread."""

from __future__ import annotations

import threading
import time

import numpy as np

import dy2st
from eager_parity import same_value

THREADS = 8
STAGINGS: list[tuple[int, ...]] = []  # appended to by Python code, which runs only while a graph is built


def slow_to_build(x, w):
    STAGINGS.append(x.shape)
    time.sleep(0.02)  # a build long enough for every thread to arrive while it runs
    h = np.tanh(x @ w) * 0.5 + 1.0
    if h.sum() > 0:
        h = h + np.sin(h)
    return h.sum(axis=0), h


def run_in_threads(work, count: int = THREADS) -> list:
    """Run ``work(k)`` on ``count`` threads released together; the results in thread order."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def target(k: int) -> None:
        barrier.wait()
        try:
            results[k] = work(k)
        except BaseException as error:  # reported by the main thread
            results[k] = error

    threads = [threading.Thread(target=target, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def inputs(k: int):
    """Thread ``k``'s arguments: two signatures (16 or 24 rows) among the threads."""
    rng = np.random.default_rng(k)
    return rng.standard_normal((16 + 8 * (k % 2), 8)), rng.standard_normal((8, 8))


def test_concurrent_first_calls_build_one_graph_per_signature():
    static = dy2st.to_static(slow_to_build, dynamic=False)  # one graph per signature
    STAGINGS.clear()
    results = run_in_threads(lambda k: static(*inputs(k)))
    assert static.num_graphs == 2
    assert sorted(STAGINGS) == [(16, 8), (24, 8)]
    for k, result in enumerate(results):
        same_value(result, slow_to_build(*inputs(k)), f"thread {k}")


def test_concurrent_first_calls_through_keywords_and_graph_build_one_graph_per_signature():
    static = dy2st.to_static(slow_to_build, dynamic=False)  # one graph per signature

    def work(k: int):
        x, w = inputs(k)
        if k % 4 == 0:
            return static.graph(x, w=w)
        return static(x, w=w)

    run_in_threads(work)
    assert static.num_graphs == 2


def gelu_layers(x, w, b):
    h = x @ w + b  # matmul into a buffer kept across calls
    h = 0.5 * h * (1.0 + np.tanh(0.79788456 * (h + 0.044715 * h * h * h)))  # fused, with scratch tiles
    for i in range(3):
        h[i] += np.sum(h[i + 1])  # updates in place
    # Narrower than x @ w, so no output takes over its buffer: it stays kept across calls.
    return h @ w.T[:, :32], h.max(axis=1)


def test_threads_running_one_graph_at_once_never_share_a_buffer():
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((64, 64)), rng.standard_normal(64)
    static = dy2st.to_static(gelu_layers)
    xs = [rng.standard_normal((256, 64)) for _ in range(THREADS)]
    static(xs[0], w, b)
    (compiled,) = next(iter(static._cache.values()))
    assert compiled.executor.code.persistent_bytes > 0
    assert any(op.name == "fused" for op in compiled.graph.walk())
    expected = [gelu_layers(x, w, b) for x in xs]

    def work(k: int):
        for _ in range(30):
            same_value(static(xs[k], w, b), expected[k], f"thread {k}")

    run_in_threads(work)
    assert static.num_graphs == 1
