"""``while`` and ``for`` loops and ``dy2st.while_loop``: same results as eager NumPy.

Tensor-dependent loops run with different iteration counts (zero included) through one cached
graph (``num_graphs == 1``); Python-valued loops are unrolled while the graph is built.
"""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st import GraphBuildError, UnsupportedSyntaxError
from eager_parity import assert_like_eager
from test_control_flow_if import assert_same, check_same_graph, line_of, op_names

X = np.linspace(-1.0, 2.0, 6).astype(np.float32)
M = np.arange(12, dtype=np.float32).reshape(4, 3) / 5


# --- while ---------------------------------------------------------------------------------------
def counted_while(x, n):
    i = 0
    acc = np.zeros_like(x)
    while i < n:
        acc = acc + x * i
        i += 1
    return acc, i


def test_while_with_a_tensor_bound_runs_any_count_through_one_graph():
    static = check_same_graph(counted_while, *[(X, np.array(n)) for n in (0, 1, 5)])
    assert op_names(static, X, np.array(3)).count("while_loop") == 1


def test_a_python_int_carried_by_a_tensor_loop_becomes_an_int64_tensor():
    static = dy2st.to_static(counted_while)
    graph = static.graph(X, np.array(3), optimize=False)
    loop = next(op for op in graph.walk() if op.name == "while_loop")
    assert [str(v.type) for v in loop.results] == ["f32[6]", "i64[]"]


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-6 * a:
        x = 0.5 * (x + a / x)
    return x


def test_tolerance_loop_on_a_0d_array():
    check_same_graph(newton_sqrt, (np.array(2.0),), (np.array(1e6),), (np.array(1.0),))


def python_while(x, n):
    while n > 0:
        x = x * 2
        n -= 1
    return x


def test_python_while_is_unrolled():
    static = dy2st.to_static(python_while, static_argnames="n")
    assert_same(static(X, 3), python_while(X, 3))
    assert "while_loop" not in op_names(static, X, 3)
    assert op_names(static, X, 3).count("multiply") == 3


def test_a_while_on_a_number_input_is_one_graph_for_every_count():
    static = dy2st.to_static(python_while)
    for n in (0, 1, 3, 7):
        assert_same(static(X, n), python_while(X, n))
    assert "while_loop" in op_names(static, X, 3)
    assert static.num_graphs == 2  # n=0 as a constant, then n an input


def becomes_tensor_midway(x, t):
    k = 0
    while k < 2 or x.sum() < t:  # Python for two iterations, then a tensor condition
        x = x + 1
        k = k + 1
    return x, k


def test_a_condition_that_becomes_a_tensor_stages_the_remaining_iterations():
    static = check_same_graph(becomes_tensor_midway, (X, np.float32(5)), (X, np.float32(40)))
    names = op_names(static, X, np.float32(5))
    assert names.count("while_loop") == 1


def while_else(x, n):
    i = 0
    while i < n:
        x = x + 1
        i += 1
    else:
        x = x * 10
    return x


def test_while_else_without_break_runs_the_else_block_after_the_loop():
    check_same_graph(while_else, (X, np.array(2)), (X, np.array(0)))


def if_inside_while(x, n):
    i = 0
    total = np.float32(0)
    while i < n:
        if x[i] > 0:
            t = x[i] * 2
        else:
            t = -x[i]
        total = total + t
        i += 1
    return total


def test_an_if_inside_a_tensor_loop_becomes_a_cond_in_its_body():
    static = check_same_graph(if_inside_while, (X, np.array(6)), (X, np.array(2)))
    names = op_names(static, X, np.array(6))
    assert names.index("while_loop") < names.index("cond")


def nested_while(x, n, m):
    i = 0
    s = x * 0
    while i < n:
        j = 0
        while j < m:
            s = s + x * (i + j)
            j += 1
        i += 1
    return s


def test_nested_tensor_loops():
    check_same_graph(nested_while, (X, np.array(2), np.array(3)), (X, np.array(3), np.array(0)))


def in_place_in_while(a, n):
    i = 0
    while i < n:
        a[i] = a[i] * 2 + 1
        i += 1
    return a.sum()


def test_in_place_updates_in_a_tensor_loop_are_carried_and_reach_the_caller():
    static = dy2st.to_static(in_place_in_while)
    for n in (0, 2, 5):
        a_eager, a_static = np.arange(6.0), np.arange(6.0)
        assert_same(static(a_static, np.array(n)), in_place_in_while(a_eager, np.array(n)))
        np.testing.assert_array_equal(a_static, a_eager)
    assert static.num_graphs == 1


def first_assigned_in_body(x, n):
    i = 0
    while i < n:
        last = x * i
        i += 1
    return last


def test_a_variable_first_assigned_in_the_body_and_used_after_the_loop():
    check_same_graph(first_assigned_in_body, (X, np.array(3)), (X, np.array(1)))


def scalar_becomes_f32(x, n):
    i = 0
    s = 0
    while i < n:
        s = s + x[i]
        i += 1
    return s


def test_a_python_number_takes_the_dtype_the_body_gives_it():
    static = check_same_graph(scalar_becomes_f32, (X, np.array(4)), (X, np.array(1)))
    assert static(X, np.array(2)).dtype == np.float32


# --- for ---------------------------------------------------------------------------------------------
def for_range_tensor(x, n):
    acc = x * 0
    for i in range(n):
        acc = acc + x * i
    return acc


def test_for_over_range_of_a_tensor_is_a_while_loop():
    static = check_same_graph(for_range_tensor, *[(X, np.array(n)) for n in (0, 1, 4)])
    assert "while_loop" in op_names(static, X, np.array(4))


def for_range_python(x, n):
    acc = x * 0
    for i in range(n):
        acc = acc + x * i
    return acc


def test_for_over_a_python_range_is_unrolled():
    static = dy2st.to_static(for_range_python, static_argnames="n")
    assert_same(static(X, 3), for_range_python(X, 3))
    assert "while_loop" not in op_names(static, X, 3)


def test_for_over_the_range_of_a_number_input_is_a_while_loop():
    static = dy2st.to_static(for_range_python)
    for n in (0, 1, 3, 6):
        assert_same(static(X, n), for_range_python(X, n))
    assert "while_loop" in op_names(static, X, 3)
    assert static.num_graphs == 2  # n=0 as a constant, then n an input


def for_range_start_stop_step(x, start, stop):
    acc = x * 0
    for i in range(start, stop, -2):
        acc = acc + x * i
    for j in range(start, stop):
        acc = acc - j
    return acc


def test_range_with_start_and_negative_step():
    check_same_graph(for_range_start_stop_step, *[(X, np.array(a), np.array(b)) for a, b in ((7, 0), (3, 3), (2, 5))])


def loop_target_used_after(x, n):
    i = -1
    for i in range(n):
        x = x + i
    return x, i


def test_the_loop_target_keeps_its_last_value():
    check_same_graph(loop_target_used_after, (X, np.array(4)), (X, np.array(2)))


def rows_of_tensor(m):
    total = np.zeros(3, dtype=np.float32)
    for row in m:
        total = total + row * row
    return total


def test_for_over_the_rows_of_a_tensor_is_a_while_loop():
    static = check_same_graph(rows_of_tensor, (M,), (M * 2,))
    assert "while_loop" in op_names(static, M)


def enumerate_rows(m):
    total = np.zeros(3, dtype=np.float32)
    for k, row in enumerate(m):
        total = total + row * k
    return total


def test_enumerate_over_a_tensor():
    check_same_graph(enumerate_rows, (M,), (-M,))


def zip_tensors(m, w):
    total = np.zeros(3, dtype=np.float32)
    for row, weight in zip(m, w):
        total = total + row * weight
    return total


def test_zip_of_tensors_stops_at_the_shortest():
    check_same_graph(zip_tensors, (M, np.array([1.0, 2.0, 3.0], np.float32)), (M, np.ones(3, np.float32)))


def python_list_loop(x, scales):
    for s in scales:
        x = x * s
    return x


def test_for_over_a_python_list_is_unrolled():
    static = dy2st.to_static(python_list_loop)
    assert_same(static(X, [1.0, 2.0, 3.0]), python_list_loop(X, [1.0, 2.0, 3.0]))
    assert "while_loop" not in op_names(static, X, [1.0, 2.0])


def for_else(x, n):
    for i in range(n):
        x = x + i
    else:
        x = -x
    return x


def test_for_else_without_break():
    check_same_graph(for_else, (X, np.array(3)), (X, np.array(0)))


def rnn(xs, h, w, u, length):
    for t in range(length):
        h = np.tanh(xs[t] @ w + h @ u)
    return h


def test_rnn_over_a_tensor_number_of_time_steps():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, 3)).astype(np.float32)
    h = np.zeros(4, np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    u = rng.standard_normal((4, 4)).astype(np.float32)
    check_same_graph(rnn, (xs, h, w, u, np.array(5)), (xs, h, w, u, np.array(2)))


def tuple_state(x, n):
    state = (x, x.sum())
    for _ in range(n):
        state = (state[0] * 0.5, state[1] + state[0].sum())
    return state


def test_a_tuple_valued_variable_is_carried_leaf_by_leaf():
    check_same_graph(tuple_state, (X, np.array(3)), (X, np.array(0)))


# --- dy2st.while_loop -------------------------------------------------------------------------------
def test_public_while_loop_is_eager_on_concrete_values():
    result = dy2st.while_loop(lambda v: v[0] < 5, lambda v: (v[0] + 1, v[1] * 2), (0, np.float32(1)))
    assert result == (5, np.float32(32))


def public_while_loop(x, n):
    return dy2st.while_loop(lambda v: v[0] < n, lambda v: (v[0] + 1, v[1] + x), (0, x * 0))


def test_public_while_loop_stages_inside_a_converted_function():
    static = check_same_graph(public_while_loop, (X, np.array(3)), (X, np.array(0)))
    assert "while_loop" in op_names(static, X, np.array(3))


# --- errors ---------------------------------------------------------------------------------------------
def dtype_changes(x, n):
    i = 0
    acc = x
    while i < n:
        acc = acc * 2.0 + np.float64(1)
        i += 1
    return acc


def test_a_carried_variable_whose_dtype_changes_is_an_error():
    with pytest.raises(GraphBuildError) as info:
        dy2st.to_static(dtype_changes)(X, np.array(3))
    assert info.value.message == "'acc' is f32[6] before the loop but f64[6] after an iteration of its body"
    assert info.value.loc.lineno == line_of(dtype_changes, "while i < n")


def shape_changes(x, n):
    for _ in range(n):
        x = np.concatenate([x, x])
    return x


def rank_changes(x, n):
    for _ in range(n):
        x = np.stack([x, x])
    return x


def test_a_carried_variable_whose_size_changes_gets_a_size_of_the_loops_own():
    static = dy2st.to_static(shape_changes)
    for n in (0, 1, 3):
        np.testing.assert_array_equal(static(X, np.array(n)), shape_changes(X, n))
    assert static.num_graphs == 1
    assert "f32[u" in str(static.graph(X, np.array(2)))
    with pytest.raises(GraphBuildError, match=r"'x' is f32\[6\] before the loop but f32\[2,6\] after an iteration"):
        dy2st.to_static(rank_changes)(X, np.array(2))


def with_in_tensor_loop(x, n):
    i = 0
    while i < n:
        with open(__file__):
            x = x + 1
        i += 1
    return x


def test_with_under_a_tensor_loop_is_unsupported():
    with pytest.raises(UnsupportedSyntaxError) as info:
        dy2st.to_static(with_in_tensor_loop)(X, np.array(2))
    assert f"a 'with' statement (line {line_of(with_in_tensor_loop, 'with open')})" in info.value.message
    assert info.value.loc.lineno == line_of(with_in_tensor_loop, "while i < n")


def test_with_under_a_python_loop_runs():
    assert_same(dy2st.to_static(with_in_tensor_loop)(X, 2), with_in_tensor_loop(X, 2))


def range_of_float(x, n):
    for i in range(n):
        x = x + i
    return x


def test_range_of_a_float_tensor_is_an_error_like_python():
    with pytest.raises(GraphBuildError, match=r"range\(\) needs integer bounds, got a tensor f64\[\]"):
        dy2st.to_static(range_of_float)(X, np.array(2.0))


# --- early exits lowered by the early-exit converters, staged here ------------------------------------
def first_positive(x):
    for v in x:
        if v > 0:
            return v * 2
    return x[0] * 0


def test_return_from_inside_a_loop_over_tensor_rows():
    check_same_graph(first_positive, (np.array([-1.0, 2.0, 3.0]),), (np.array([-1.0, -2.0, -3.0]),))


def find_index(x, n):
    i = 0
    while i < n:
        if x[i] > 1:
            return i, x[i]
        i += 1
    return -1, x[0]


def test_return_of_a_tuple_from_inside_a_tensor_while():
    check_same_graph(find_index, (np.array([0.0, 2.0, 3.0]), np.array(3)), (np.array([0.0, 0.5, 0.1]), np.array(3)))


def error_in_body(x, n):
    i = 0
    while i < n:
        x = x @ np.ones((5, 6))
        i += 1
    return x


def test_an_error_inside_a_loop_body_points_at_the_users_line():
    with pytest.raises(GraphBuildError) as info:
        dy2st.to_static(error_in_body)(X, np.array(2))
    assert info.value.loc.lineno == line_of(error_in_body, "x = x @ np.ones")
    assert "matmul" in info.value.message


G = np.zeros(5)


def update_global_in_loop(x, n):
    i = 0
    while i < n:
        G[i] = x[i] * 2
        i += 1
    return G.sum()


def test_a_global_array_updated_in_a_tensor_loop_is_carried_and_written_back():
    static = dy2st.to_static(update_global_in_loop)
    x = np.arange(5.0)
    for n in (3, 5):
        G[:] = 0
        want = update_global_in_loop(x, np.array(n))
        want_g = G.copy()
        G[:] = 0
        assert_same(static(x, np.array(n)), want)
        np.testing.assert_array_equal(G, want_g)
    assert static.num_graphs == 1


def bad_body_structure(x, n):
    return dy2st.while_loop(lambda v: v[0] < n, lambda v: (v[0] + 1,), (0, x))


def test_while_loop_body_must_return_the_structure_of_loop_vars():
    with pytest.raises(GraphBuildError, match="body_fn returned a different structure than loop_vars"):
        dy2st.to_static(bad_body_structure)(X, np.array(2))


def python_value_changes_in_tensor_loop(x, n):
    mode = "start"
    i = 0
    while i < n:
        mode = "running"
        x = x + 1
        i += 1
    return x, mode


def test_a_python_value_that_changes_in_a_tensor_loop_is_an_error():
    with pytest.raises(GraphBuildError) as info:
        dy2st.to_static(python_value_changes_in_tensor_loop)(X, np.array(2))
    assert info.value.message == (
        "'mode' is the Python str 'start' before the loop and the Python str 'running' after an iteration "
        "of a tensor loop"
    )
    assert info.value.loc.lineno == line_of(python_value_changes_in_tensor_loop, "while i < n")


def python_value_unchanged_in_tensor_loop(x, n, scale):
    i = 0
    while i < n:
        scale = scale  # rebound to the same Python value: fine
        x = x * scale
        i += 1
    return x


def test_a_python_value_rebound_to_itself_in_a_tensor_loop_is_fine():
    check_same_graph(python_value_unchanged_in_tensor_loop, (X, np.array(2), 1.5), (X, np.array(0), 1.5))


def decaying_step(w, g, n):
    step = 0
    while step < n:
        lr = 1.0 / (step + 1)
        w = w - lr * g
        step += 1
    return w


def test_arithmetic_on_a_carried_python_number_promotes_like_python_numbers():
    # step + 1 and 1.0 / (...) are Python numbers in eager code, so w stays float32.
    w, g = np.ones(3, np.float32), np.full(3, 0.5, np.float32)
    static = check_same_graph(decaying_step, (w, g, np.array(3)), (w, g, np.array(0)))
    assert static(w, g, np.array(2)).dtype == np.float32


def count_and_pick(x, n):
    i = 0
    total = 0.0
    while i < n:
        total = total + 1.5
        i += 1
    k = 1 if x.sum() > 0 else 2
    return x * 2, i, total, k


@pytest.mark.parametrize("n", [0, 3])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_python_numbers_carried_by_tensor_control_flow_come_back_as_python_numbers(n, sign):
    static = dy2st.to_static(count_and_pick)
    x = sign * np.ones(2)
    got, want = static(x, np.array(n)), count_and_pick(x, np.array(n))
    assert [type(v) for v in got] == [type(v) for v in want] == [np.ndarray, int, float, int]
    assert got[1:] == want[1:]
    np.testing.assert_array_equal(got[0], want[0])


def weighted_by_a_python_list(x):
    s = 0.0
    for a, w in zip(x, [0.5, 2.0, -1.0]):
        s = s + a * w
    return s


def weights_keep_float32(x):
    out = np.zeros_like(x)
    for i, w in zip(range(len(x)), (1.5, 2.5, 3.5)):
        out[i] = x[i] * w
    return out


def flags_from_a_python_list(x):
    n = 0
    for a, keep in zip(x, [True, False, True]):
        if keep and a > 0:
            n += 1
    return n


@pytest.mark.parametrize("fn", [weighted_by_a_python_list, weights_keep_float32, flags_from_a_python_list])
def test_zip_of_a_tensor_with_a_python_list_of_numbers(fn):
    assert_like_eager(fn, np.array([1.0, -2.0, 3.0], np.float32))


def truth_of_an_array(x):
    if x > 0:
        return x
    return -x


def range_of_a_float(x, f):
    s = 0.0
    for i in range(f):
        s = s + i
    return s


def test_refusals_where_numpy_raises_too_keep_numpys_class():
    with pytest.raises(ValueError, match="ambiguous"):
        dy2st.to_static(truth_of_an_array)(np.ones(3))
    with pytest.raises(TypeError, match="range"):
        dy2st.to_static(range_of_a_float)(np.ones(2), np.array(2.5))


def updated_then_rebound_to_a_new_length(x, k):
    for _ in range(3):
        x[:3] = x[:3] / 3.0
        for _ in range(k):
            x = x[x > -100.0]  # a length of the inner loop's own: x may or may not be the caller's
    return x


def test_a_loop_result_of_a_length_of_its_own_that_may_be_the_callers_array_is_not_updated_blindly():
    # With zero trips, eager code divides the caller's array three times; the graph, carrying x's
    # value only, would have divided it once (a silent difference): the update is refused.
    with pytest.raises(dy2st.GraphBuildError, match="may share memory"):
        dy2st.to_static(updated_then_rebound_to_a_new_length)(np.full(4, 3.0), np.array(0))
