"""Reductions of intermediates round as eager NumPy's do, whatever the memory order.

NumPy gives an elementwise result the memory order of its operands (``order='K'``: ``x.T * 2.0``
is Fortran-ordered) and sums pairwise along whichever axis is contiguous, so a reduction's last
bits depend on the layout of what it reduces. Planned ``out=`` buffers and fused tiles are
C-ordered: they are used only where that is the layout eager NumPy has too. Every case compares
bits with ``assert_like_eager``."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager

RNG = np.random.default_rng(7)


def transposed_sum_0(x):
    return (x.T * 2.0).sum(axis=0)


def transposed_sum_1(x):
    return (x.T * 2.0 + 1).sum(axis=1)


def transposed_mean_keepdims(x):
    return np.mean(np.exp(x.T * 0.1) - 1.0, axis=-1, keepdims=True)


def swapped_chain_sum(x):
    y = np.swapaxes(x, 0, 1) * 3.0
    z = np.tanh(y) + y
    return z.sum(axis=0), z.sum(axis=1), z.sum()


def strided_slice_sums(x):
    y = x[::2, ::3] * 1.5 - 0.25
    return y.sum(axis=0), y.sum(axis=1), np.var(y, axis=0), np.std(y, axis=1)


def reversed_slice_sum(x):
    return (x[::-1, ::-1] * 2.0).sum(axis=1), (x[:, ::-1] + 1.0).sum(axis=0)


def broadcast_column_sum(x, col):
    return ((x.T + col) * 0.5).sum(axis=0), ((x.T + col) * 0.5).sum(axis=1)


def softmax_of_transpose(x):
    e = np.exp(x.T - np.max(x.T, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layernorm_of_transpose(x):
    t = x.T
    mu = np.mean(t, axis=-1, keepdims=True)
    d = t - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5)


def reduced_after_a_branch(x, flag):
    if flag > 0:
        y = x.T * 2.0
    else:
        y = x.T * 3.0
    return y.sum(axis=0)


def reduced_after_a_loop(x, n):
    y = x.T * 1.0
    i = 0
    while i < n:
        y = y * 1.5 + 0.1
        i += 1
    return y.sum(axis=0), y.mean(axis=1)


def three_d_sums(x):
    y = np.transpose(x, (2, 0, 1)) * 2.0
    return y.sum(axis=0), y.sum(axis=1), y.sum(axis=2), y.sum(axis=(0, 2))


def plain_sums(x):
    y = x * 2.0 + 1.0
    return y.sum(axis=0), y.sum(axis=1), y.mean()


def concatenated_sum(x):
    y = np.concatenate([x.T * 2.0, x.T * 3.0])
    return y.sum(axis=0)


def updated_through_a_transpose_while_still_read(x):
    y = x * 1.5
    old = y * 1.0  # simplified to y: the old y stays alive, so the update runs in a copy
    y.T[0] += 1.0  # eagerly a write into y's own buffer: y keeps its memory order
    return y.sum(axis=0), y.sum(axis=1), old


TWO_D = [
    transposed_sum_0,
    transposed_sum_1,
    transposed_mean_keepdims,
    swapped_chain_sum,
    strided_slice_sums,
    reversed_slice_sum,
    softmax_of_transpose,
    layernorm_of_transpose,
    plain_sums,
    concatenated_sum,
    updated_through_a_transpose_while_still_read,
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("fn", TWO_D)
def test_reductions_of_intermediates_match_eager_bits(fn, order, dtype):
    x = np.asarray(RNG.standard_normal((1000, 777)), dtype=dtype, order=order)
    assert_like_eager(fn, x)


@pytest.mark.parametrize("order", ["C", "F"])
def test_one_graph_serves_both_memory_orders(order):
    static = dy2st.to_static(transposed_sum_1)
    x = RNG.standard_normal((1000, 777))
    static(x)  # builds the graph on a C-ordered argument
    assert_like_eager(transposed_sum_1, np.asarray(x, order=order), converted=static)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_broadcasting_and_control_flow(dtype):
    x = RNG.standard_normal((1000, 777)).astype(dtype)
    col = RNG.standard_normal((1000,)).astype(dtype)
    assert_like_eager(broadcast_column_sum, x, col)
    assert_like_eager(reduced_after_a_branch, x, np.array(1))
    assert_like_eager(reduced_after_a_branch, x, np.array(-1))
    assert_like_eager(reduced_after_a_loop, x, np.array(3))


@pytest.mark.parametrize("order", ["C", "F"])
def test_three_dimensional_reductions(order):
    assert_like_eager(three_d_sums, np.asarray(RNG.standard_normal((60, 70, 80)), order=order))


def f_ordered_middle_axis(x):
    return np.tanh(x.sum(axis=1))


def test_a_reduction_keeping_two_axes_is_not_written_into_a_c_ordered_buffer():
    # NumPy orders a reduction's loops by its output's strides too: an out= buffer in C order
    # sums a Fortran-ordered array's middle axis in another order than eager NumPy.
    x = np.asfortranarray(RNG.standard_normal((60, 70, 80)))
    assert_like_eager(f_ordered_middle_axis, x)


def fused_then_reduced(x):
    return (x.T * 2.0 + 1.0).sum(axis=0)


def chain(x):
    return np.tanh(x * 2.0) + x


def test_what_a_reduction_reads_is_not_planned_and_other_work_is():
    graph = dy2st.to_static(fused_then_reduced).graph(np.ones((1000, 777)))
    fused = [op for op in graph.walk() if op.name == "fused"]
    assert len(fused) == 1 and fused[0].attrs.get("eager_layout") and "out_buffer" not in fused[0].attrs
    assert_like_eager(fused_then_reduced, RNG.standard_normal((1000, 777)))
    graph = dy2st.to_static(transposed_sum_0).graph(np.ones((1000, 777)))
    assert not any("out_buffer" in op.attrs for op in graph.walk())
    graph = dy2st.to_static(chain).graph(np.ones((1000, 777)))
    assert not any("eager_layout" in op.attrs for op in graph.walk())


W = RNG.standard_normal((777, 64))


def relu_layer_sum(x):
    return np.sum(np.maximum(x @ W + 1.0, 0.0), axis=0)


def test_a_matmul_result_is_c_ordered_whatever_its_operands_so_it_keeps_its_buffer():
    graph = dy2st.to_static(relu_layer_sum).graph(np.ones((1000, 777)))
    planned = {op.name for op in graph.walk() if "out_buffer" in op.attrs}
    assert "matmul" in planned
    for order in ("C", "F"):
        assert_like_eager(relu_layer_sum, np.asarray(RNG.standard_normal((1000, 777)), order=order))


W_ROWS = RNG.standard_normal((1000, 8))


def normalized_rows_times_w(x):
    e = np.exp(x.T - np.max(x.T, axis=-1, keepdims=True))
    return np.tanh((e / np.sum(e, axis=-1, keepdims=True)) @ W_ROWS)


def test_a_planned_group_that_reduces_rows_of_a_transpose_writes_numpys_values_into_its_buffer():
    graph = dy2st.to_static(normalized_rows_times_w).graph(np.ones((1000, 777)))
    assert any(op.name == "fused" and "out_buffer" in op.attrs for op in graph.walk())
    assert_like_eager(normalized_rows_times_w, RNG.standard_normal((1000, 777)))


def copies_of_a_transpose(x):
    # ndarray.copy() is C-ordered, np.copy and astype keep the operand's (Fortran) order.
    return x.T.copy().sum(axis=0), np.copy(x.T).sum(axis=0), x.T.astype(np.float32).sum(axis=0)


def test_copies_keep_the_memory_order_numpy_gives_them():
    assert_like_eager(copies_of_a_transpose, RNG.standard_normal((1000, 777)))


def arrays_made_in_an_order(x):
    c_copy = np.array(x.T, order="C").sum(0)
    f_copy = np.array(x.T, order="F").sum(1)
    c_of_result = np.asarray(x.T * 2, order="C").sum(0)
    converted = np.array(x.T, dtype=np.float32, order="C").sum(0)
    return c_copy, f_copy, c_of_result, converted


def test_np_array_and_asarray_keep_the_order_they_are_asked_for():
    x = np.random.default_rng(3).standard_normal((300, 200))
    assert_like_eager(arrays_made_in_an_order, x)


def layer_then_reduced(x, w, b):
    h = np.maximum(x @ w + b, 0.0)  # matmul results are C-ordered, b has no memory order
    return h.sum(axis=0)


def test_elementwise_work_on_c_ordered_values_is_planned_before_a_reduction():
    """NumPy lays out an elementwise result of C-ordered operands (and rows, numbers) C-ordered,
    so a planned buffer holds it in eager's order: the reductions read it in the same order."""
    args = (RNG.standard_normal((300, 200)), RNG.standard_normal((200, 250)), RNG.standard_normal(250))
    graph = dy2st.to_static(layer_then_reduced).graph(*args)
    fused = [op for op in graph.walk() if op.name == "fused"]
    assert fused and not any(op.attrs.get("eager_layout") for op in fused)
    assert any("out_buffer" in op.attrs for op in fused)
    assert_like_eager(layer_then_reduced, *args)
    assert_like_eager(layer_then_reduced, np.asfortranarray(args[0]), np.asfortranarray(args[1]), args[2])
