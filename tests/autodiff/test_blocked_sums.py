"""Blocked weight cotangents of long counted loops (``autodiff/outer_sums.py``, ``BlockedSums``):
the backward loop keeps the step's cotangent in a ring of ``BLOCK_ROWS`` rows and adds each full
block's products into the weight's gradient (``add_matmul``) instead of keeping a row per step.
Gradients against central finite differences in float64, on both tiers; the graph keeps no array
of the trip count's rows beyond the tape; the peak stays near the tape plus the gradients."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from finite_differences import numerical_gradient

import dy2st
from dy2st.autodiff.outer_sums import BLOCK_ROWS
from dy2st.ir.opcodes import TAPE_ROWS_NEW, WHILE_LOOP
from dy2st.ops.linalg import ADD_MATMUL

rng = np.random.default_rng(2026)


def rnn(wx, wh, b, xs, h):
    for i in range(xs.shape[0]):
        h = np.tanh(xs[i] @ wx + h @ wh + b)
    return (h * h).sum()


def rnn_columns(wx, wh, xs, h):
    """``W @ h``: the weight's cotangent is the outer product of ``g`` and the rows (rows on the
    right)."""
    for i in range(xs.shape[0]):
        h = np.tanh(wx @ xs[i] + wh @ h)
    return np.sum(h**3)


def rnn_args(steps: int, hidden: int = 4, inputs: int = 3):
    return (
        rng.normal(size=(inputs, hidden)) * 0.5,
        rng.normal(size=(hidden, hidden)) * 0.5,
        rng.normal(size=hidden) * 0.1,
        rng.normal(size=(steps, inputs)),
        rng.normal(size=hidden) * 0.1,
    )


def assert_close_to_finite_differences(fn, args, argnums, got):
    for k, gradient in zip(argnums, got):
        want = numerical_gradient(fn, args, k)
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(gradient, want, rtol=1e-6, atol=1e-6 * scale)


def tape_rows(graph) -> list[tuple]:
    return [op.results[0].type.shape for op in graph.walk() if op.name == TAPE_ROWS_NEW]


@pytest.mark.parametrize("steps", [2 * BLOCK_ROWS + 1, 3 * BLOCK_ROWS, 3 * BLOCK_ROWS + 7])
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_blocked_gradients_match_finite_differences(steps, backend):
    if backend == "compiled":
        pytest.importorskip("numba")
    args = rnn_args(steps)
    both = dy2st.value_and_grad(dy2st.to_static(rnn, backend=backend), argnums=(0, 1, 2))
    value, grads = both(*args)
    assert value == pytest.approx(rnn(*args), rel=1e-12)
    assert_close_to_finite_differences(rnn, args, (0, 1, 2), grads)
    graph = both.graph(*args)
    # The forward tape (steps + 1 rows) and the ring: no array of a row per step for g.
    assert sorted(tape_rows(graph)) == sorted([(steps + 1, 4), (BLOCK_ROWS, 4)])
    assert sum(op.name == ADD_MATMUL for op in graph.walk()) == 2
    if backend == "compiled":
        loops = [op for op in graph.body.ops if op.name == WHILE_LOOP]
        assert len(loops) == 2 and all(loop.attrs.get("compiled_loop") for loop in loops)


def test_rows_on_the_right_of_the_outer_product():
    args = rnn_args(2 * BLOCK_ROWS + 5)
    wx, wh, _, xs, h = args
    columns_args = (wx.T.copy(), wh, xs, h)
    grads = dy2st.grad(rnn_columns, argnums=(0, 1))(*columns_args)
    assert_close_to_finite_differences(rnn_columns, columns_args, (0, 1), grads)
    assert sum(op.name == ADD_MATMUL for op in dy2st.grad(rnn_columns, argnums=(0, 1)).graph(*columns_args).walk()) == 2


def test_short_loops_keep_the_rows_and_one_product_after_the_loop():
    args = rnn_args(2 * BLOCK_ROWS)
    graph = dy2st.grad(rnn, argnums=(0, 1, 2)).graph(*args)
    assert sorted(tape_rows(graph)) == sorted([(2 * BLOCK_ROWS + 1, 4), (2 * BLOCK_ROWS, 4)])
    assert not any(op.name == ADD_MATMUL for op in graph.walk())


def test_the_peak_is_the_tape_and_the_gradients_not_a_second_tape():
    steps, hidden = 400, 32
    args = rnn_args(steps, hidden, hidden)
    both = dy2st.value_and_grad(dy2st.to_static(rnn, backend="numpy"), argnums=(0, 1, 2))
    both(*args)
    tracemalloc.start()
    try:
        both(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    tape = (steps + 1) * hidden * 8
    gradients = (2 * hidden * hidden + hidden) * 8
    # Before the ring, the backward loop kept a second array of `steps` rows (102 KB here).
    assert peak < tape + gradients + 4 * BLOCK_ROWS * hidden * 8


def test_add_matmul_adds_to_its_sum_and_repeats_are_not_merged():
    from dy2st.ir.opdefs import get_op

    opdef = get_op(ADD_MATMUL)
    c, a, b = np.ones((2, 2)), np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(opdef.kernel(c, a, b), c + a @ b)
    in_place = c.copy()
    assert opdef.in_place_kernel(in_place, a, b) is in_place
    np.testing.assert_array_equal(in_place, c + a @ b)
    # c + a @ b + a @ b is not c + a @ b: simplification does not merge repeated adds, as it merges
    # a store written twice.
    from dy2st.passes.simplify import _repeated_update, _rules_for

    assert _repeated_update in _rules_for("setitem") and _repeated_update not in _rules_for(ADD_MATMUL)
