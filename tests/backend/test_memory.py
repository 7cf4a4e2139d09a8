"""Running memory-planned graphs: same results as without the plan, call after call, and the caller
owns what it gets back."""

import threading
import tracemalloc

import numpy as np

import dy2st
from dy2st.backend.numpy.executor import Executor
from dy2st.passes.memory_plan import clear_plan

RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((32, 32), dtype=np.float32)
W2 = RNG.standard_normal((32, 32), dtype=np.float32)
B1 = RNG.standard_normal(32, dtype=np.float32)


def layers(x):
    h = np.maximum(x @ W1 + B1, 0)
    t = np.tanh(h @ W2) * 0.5 + h
    return t - np.mean(t, axis=1, keepdims=True), np.sum(h, axis=0)


def batch(seed):
    return np.random.default_rng(seed).standard_normal((16, 32), dtype=np.float32)


def test_the_plan_is_used_and_results_equal_the_unplanned_graph_bit_for_bit():
    static = dy2st.to_static(layers)
    x = batch(0)
    assert "out=" in static.executor_source(x)
    graph = static.graph(x)
    unplanned_graph = dy2st.to_static(layers).graph(x)
    clear_plan(unplanned_graph)
    unplanned = Executor(unplanned_graph)
    for seed in range(4):  # later calls reuse the buffers: no stale values may leak through
        x = batch(seed)
        planned_results = static(x)
        reference = unplanned(x, W1, B1, W2)
        for got, want, eager in zip(planned_results, reference, layers(x)):
            np.testing.assert_array_equal(got, want)
            assert got.shape == eager.shape and got.dtype == eager.dtype
            np.testing.assert_allclose(got, eager, rtol=1e-5, atol=1e-5)
    assert graph is static.graph(x)


def test_returned_arrays_are_not_reused_by_the_next_call():
    static = dy2st.to_static(layers)
    first, first_sum = static(batch(1))
    kept = first.copy()
    first[...] = 123.0  # the caller owns it: writing must not disturb the next call
    second, second_sum = static(batch(1))
    np.testing.assert_array_equal(second, kept)
    assert not np.shares_memory(first, second) and not np.shares_memory(first_sum, second_sum)
    third, _ = static(batch(2))
    np.testing.assert_array_equal(first, 123.0)
    assert not np.shares_memory(second, third)


def test_inputs_and_captures_are_never_written():
    static = dy2st.to_static(layers)
    x = batch(3)
    before = [a.copy() for a in (x, W1, W2, B1)]
    for _ in range(2):
        static(x)
    for now, then in zip((x, W1, W2, B1), before):
        np.testing.assert_array_equal(now, then)


def chain(x):
    y = np.exp(-x * x)
    return y * 2.0 + 1.0


def test_steady_state_calls_allocate_only_their_results():
    static = dy2st.to_static(chain)
    x = np.linspace(-2, 2, 1 << 18)  # 2 MiB of float64
    static(x)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = static(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_allclose(result, chain(x))
    assert peak < result.nbytes * 1.1, (peak, result.nbytes)


def test_a_call_while_another_thread_holds_the_buffers_runs_unplanned():
    static = dy2st.to_static(layers)
    x = batch(4)
    static(x)
    executor = static._cache[next(iter(static._cache))][0].executor
    assert executor.code.persistent_bytes > 0
    results = []
    with executor._lock:  # as if another thread were inside the planned function
        worker = threading.Thread(target=lambda: results.append(static(x)))
        worker.start()
        worker.join()
    for got, want in zip(results[0], static(x)):
        np.testing.assert_array_equal(got, want)
    assert "out=" not in executor._unplanned.source


def test_dump_memory_prints_the_report(tmp_path, capsys):
    from dy2st.cli import main

    source = tmp_path / "model.py"
    source.write_text("import numpy as np\n\n\ndef mlp(x, w):\n    h = np.maximum(x @ w + 1.0, 0)\n    return h @ w\n")
    assert main(["dump", f"{source}::mlp", "--memory", "--arg", "x=f32[512,256]", "--arg", "w=f32[256,256]"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # x @ w and h @ w are 0.5 MiB each and live together; h takes the first product's place.
    assert lines[0] == "planned peak        1.00 MiB (2 buffers, 0.50 MiB kept across calls)"
    assert lines[1] == "lower bound         1.00 MiB (largest set of simultaneously live values)"


WX = RNG.standard_normal((32, 32)) * 0.3
WH = RNG.standard_normal((32, 32)) * 0.3


def recurrent(xs, h, n):
    bias = np.tanh(xs[0] @ WX)  # planned before the loop and read in every iteration
    for i in range(n):
        z = xs[i] @ WX + h @ WH
        h = np.tanh(z + bias)
    return h * 2.0, bias


def test_a_converted_loop_with_planned_buffers_matches_eager_call_after_call():
    static = dy2st.to_static(recurrent)
    rng = np.random.default_rng(11)
    xs, h = rng.standard_normal((64, 32)), np.zeros(32)
    assert "out=" in static.executor_source(xs, h, np.array(5))
    for steps in (5, 0, 17, 5):  # zero iterations hand back the initial value: a copy of h
        xs = rng.standard_normal((64, 32))
        got, want = static(xs, h, np.array(steps)), recurrent(xs, h, np.array(steps))
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(h, 0.0)
