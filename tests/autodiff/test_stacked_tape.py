"""The stacked tape of counted loops (docs/autodiff.md): a rolled ``for ... in range(...)`` saves
each iteration's values as rows of arrays allocated before the loop; loops whose trip count the
data decides keep the list tape. Gradients against central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import assert_gradient_matches, numerical_gradient

import dy2st
from dy2st.ir.opcodes import TAPE_PUSH, TAPE_ROWS_NEW, WHILE_LOOP
from dy2st.ir.symbolic import is_data_dependent, is_symbolic

rng = np.random.default_rng(14)


def stacked_shapes(graph) -> list[tuple]:
    return [op.results[0].type.shape for op in graph.walk() if op.name == TAPE_ROWS_NEW]


def pushes(graph) -> int:
    return sum(op.name == TAPE_PUSH for op in graph.walk())


def rnn(wx, wh, b, xs, h):
    for i in range(xs.shape[0]):
        h = np.tanh(xs[i] @ wx + h @ wh + b)
    return (h * h).sum()


def rnn_args(steps: int, hidden: int = 4):
    return (
        rng.normal(size=(3, hidden)) * 0.5,
        rng.normal(size=(hidden, hidden)) * 0.5,
        rng.normal(size=hidden) * 0.1,
        rng.normal(size=(steps, 3)),
        rng.normal(size=hidden) * 0.1,
    )


def test_the_rnn_saves_its_hidden_state_once_and_recomputes_the_inputs_it_reads():
    args = rnn_args(6)
    for k in range(3):
        assert_gradient_matches(rnn, *args, argnums=k)
    graph = dy2st.grad(rnn, argnums=(0, 1, 2)).graph(*args)
    # The tape is one array: the state each step starts from, and the last state (7 rows); xs[i]
    # is read again. The backward loop keeps the cotangent of each step's pre-activation (6 rows)
    # for the weights' gradients, xs.T @ G and H.T @ G after it.
    assert stacked_shapes(graph) == [(7, 4), (6, 4)]
    assert pushes(graph) == 0


def first_steps(wx, wh, xs, h):
    for i in range(5):
        h = np.tanh(wh @ h + xs[i] @ wx)  # W @ h: the outer product of g and h
    return (h * h).sum()


@pytest.mark.parametrize("argnums", [0, 1])
def test_weight_gradients_summed_after_the_loop_over_part_of_an_input(argnums):
    """The loop reads the first 5 of 8 rows of xs: the sum after the loop takes those rows."""
    wx, wh, _, xs, h = rnn_args(8)
    assert_gradient_matches(first_steps, wx, wh, xs, h, argnums=argnums)
    graph = dy2st.grad(first_steps, argnums=(0, 1)).graph(wx, wh, xs, h)
    assert sorted(stacked_shapes(graph)) == [(5, 4), (6, 4)]  # the cotangent rows and the state


def test_a_trip_count_that_changes_between_calls_is_a_symbolic_row_count():
    grad = dy2st.grad(rnn, argnums=(0, 1))
    for steps in (5, 8, 3, 1):
        args = rnn_args(steps)
        got = grad(*args)
        for k in range(2):
            np.testing.assert_allclose(got[k], numerical_gradient(rnn, args, k), rtol=1e-6, atol=1e-8)
    # The rows are the size of xs (n0): n0 + 1 rows of states, n0 rows of step cotangents.
    tape, cotangents = stacked_shapes(grad.graph(*rnn_args(4)))
    assert is_symbolic(cotangents[0]) and not is_data_dependent(cotangents[0])
    assert tape[0] - cotangents[0] == 1


def count_to(x, n):
    s = x * 1.0
    for i in range(n):
        s = np.sin(s) + 0.1 * i
    return s.sum()


@pytest.mark.parametrize("n", [4, 7, 0, 1])
def test_a_number_input_as_the_bound(n):
    grad = dy2st.grad(count_to)
    x = rng.normal(size=3)
    for m in (5, 6, n):  # the bound becomes a graph input from the second value on
        np.testing.assert_allclose(grad(x, m), numerical_gradient(count_to, (x, m), 0), rtol=1e-6, atol=1e-8)


def from_start(x, n):
    s = x * 1.0
    for i in range(2, n):
        s = s * np.cos(x * i)
    return (s * s).sum()


@pytest.mark.parametrize("n", [6, 2, 1, -3])
def test_a_range_from_a_nonzero_start_including_empty_ones(n):
    assert_gradient_matches(from_start, rng.normal(size=3), n)
    assert_gradient_matches(from_start, rng.normal(size=3), n + 1)


def test_zero_trip_loops():
    args = rnn_args(0)
    got = dy2st.grad(rnn, argnums=(0, 1, 2))(*args)
    assert all(np.all(g == 0) for g in got)
    h = args[4]
    np.testing.assert_allclose(dy2st.grad(rnn, argnums=4)(*args), 2 * h)


def nested(x, w):
    total = 0.0
    for i in range(5):
        y = x * (i + 1) * 0.3
        for j in range(x.shape[0]):
            y = np.tanh(y * w[j] + 0.1)
        total = total + (y * y).sum()
    return total


def test_nested_counted_loops():
    x, w = rng.normal(size=6), rng.normal(size=6)
    assert_gradient_matches(nested, x, w, argnums=0)
    assert_gradient_matches(nested, x, w, argnums=1)
    graph = dy2st.grad(nested).graph(x, w)
    assert len(stacked_shapes(graph)) >= 2 and pushes(graph) == 0
    # The inner loop's tape is made in each iteration of the outer backward loop, which runs
    # the inner loop again (hoisted, it would be copied at each iteration).
    outer_loops = [op for op in graph.body.ops if op.name == WHILE_LOOP]
    assert any(op.name == TAPE_ROWS_NEW for loop in outer_loops for op in loop.regions[1].block.walk())


def with_continue(x, n):
    s = x * 1.0
    for i in range(1, n):
        if i % 3 == 0:
            continue
        s = np.sin(s) * x[i % x.shape[0]]
    return s.sum()


@pytest.mark.parametrize("n", [2, 7, 10])
def test_a_counted_loop_with_continue(n):
    x = np.linspace(0.2, 1.1, 5)
    assert_gradient_matches(with_continue, x, n)
    assert pushes(dy2st.grad(with_continue).graph(x, n)) == 0


def scalars_and_matrices(a, M):
    s = a * 1.0
    P = np.eye(3)
    for i in range(6):
        s = np.sin(s) * 1.5 + (P * M).sum() * 0.01
        P = np.tanh(P @ M + s)
    return s + P.sum()


@pytest.mark.parametrize("argnums", [0, 1])
def test_saved_0d_and_2d_values(argnums):
    a, M = np.array(0.3), rng.normal(size=(3, 3)) * 0.5
    assert_gradient_matches(scalars_and_matrices, a, M, argnums=argnums)
    shapes = stacked_shapes(dy2st.grad(scalars_and_matrices).graph(a, M))
    assert any(len(shape) == 1 for shape in shapes) and any(len(shape) == 3 for shape in shapes)


def carries_an_int(x):
    k = 0
    s = x * 1.0
    for i in range(7):
        k = k + i * 2
        s = s * np.cos(s * k * 0.1) + x
    return (s**2).sum() + k


def test_a_loop_that_carries_an_int():
    x = rng.normal(size=3)
    assert_gradient_matches(carries_an_int, x)
    assert pushes(dy2st.grad(carries_an_int).graph(x)) == 0


def updates_in_place(A, w):
    B = A.copy()
    for i in range(1, B.shape[0]):
        B[i] = np.tanh(B[i - 1] * w) + B[i]
        B[i, 0] *= 0.5
    return (B**2).sum()


@pytest.mark.parametrize("argnums", [0, 1])
def test_in_place_updates_inside_a_counted_loop(argnums):
    A, w = rng.normal(size=(5, 3)), rng.normal(size=3)
    assert_gradient_matches(updates_in_place, A, w, argnums=argnums)
    assert pushes(dy2st.grad(updates_in_place, argnums=argnums).graph(A, w)) == 0


def python_float_carried(x):
    t = 0.5
    for i in range(6):
        t = t * 0.9 + float(x[i % 2]) * 0.1
        x = x * t
    return x.sum()


def test_a_carried_python_float_is_read_back_as_a_python_float():
    x = np.array([0.7, 1.3])
    assert_gradient_matches(python_float_carried, x)
    assert pushes(dy2st.grad(python_float_carried).graph(x)) == 0


def until_converged(x):
    y = x * 1.0
    while np.abs(y).max() > 1e-3:
        y = y * 0.5
    return y.sum()


def until_break(x):
    s = x * 1.0
    for _ in range(20):
        s = np.sin(s)
        if s.sum() < 0.5:
            break
    return s.sum()


@pytest.mark.parametrize("f", [until_converged, until_break])
def test_loops_whose_data_decides_the_trip_count_keep_the_list_tape(f):
    x = np.array([0.8, 0.9, 1.1])
    assert_gradient_matches(f, x)
    graph = dy2st.grad(f).graph(x)
    assert pushes(graph) == 1 and not stacked_shapes(graph)


def test_checkpointed_counted_loops_stack_what_each_iteration_starts_from():
    args = rnn_args(6)
    saved = dy2st.grad(rnn, argnums=1)(*args)
    recomputed = dy2st.grad(rnn, argnums=1, checkpoint=True)
    np.testing.assert_allclose(recomputed(*args), saved, rtol=1e-12)
    assert stacked_shapes(recomputed.graph(*args)) == [(6, 4)]


def test_both_loops_of_the_rnn_gradient_compile_and_agree_with_the_numpy_tier():
    pytest.importorskip("numba")
    from dy2st.backend.numba.executor import TieredExecutor
    from dy2st.backend.numba.support import COMPILED_LOOP, numba_blas_available

    if not numba_blas_available():
        pytest.skip("compiled matrix products need SciPy's BLAS")
    args = rnn_args(30, hidden=8)
    compiled = dy2st.value_and_grad(dy2st.to_static(rnn, backend="compiled"), argnums=(0, 1, 2))
    loops = [op for op in compiled.graph(*args).body.ops if op.name == WHILE_LOOP]
    assert len(loops) == 2 and all(op.attrs.get(COMPILED_LOOP) for op in loops)
    value, grads = compiled(*args)
    executor = compiled._compiled(args, {}, compiled._seeded)[0].executor
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled"
    want_value, want_grads = dy2st.value_and_grad(dy2st.to_static(rnn, backend="numpy"), argnums=(0, 1, 2))(*args)
    np.testing.assert_allclose(value, want_value, rtol=1e-13)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
