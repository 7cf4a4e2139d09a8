"""Gradients through every control-flow form, against central finite differences in float64.

The functions are written as NumPy users write them; each is called with inputs that take the
different paths (branches, trip counts) so that every path's adjoint runs.
"""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import assert_gradient_matches

import dy2st

rng = np.random.default_rng(1)


def if_elif(x):
    s = x.sum()
    if s > 1.0:
        y = np.exp(x) * s
    elif s > -1.0:
        y = np.sin(x) * x
    else:
        y = x**2 / 3.0
    return y.mean()


@pytest.mark.parametrize("shift", [2.0, 0.0, -2.0])
def test_if_elif_else(shift):
    assert_gradient_matches(if_elif, rng.normal(size=4) * 0.1 + shift / 4)


def ternary(x, y):
    z = x * y if (x > y).all() else x - 2.0 * y
    return (z**2).sum()


@pytest.mark.parametrize("argnums", [0, 1])
def test_ternary(argnums):
    assert_gradient_matches(ternary, np.array([3.0, 4.0]), np.array([1.0, 2.0]), argnums=argnums)
    assert_gradient_matches(ternary, np.array([1.0, 4.0]), np.array([1.5, 2.0]), argnums=argnums)


def newton_sqrt(a):
    x = a / 2 + 0.5
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("a", [0.25, 2.0, 1e4])
def test_while_with_a_data_dependent_trip_count(a):
    """Newton's square root: the trip count depends on ``a``; the gradient is 1 / (2 sqrt(a))."""
    g = dy2st.grad(newton_sqrt)(np.array(a))
    np.testing.assert_allclose(g, 0.5 / np.sqrt(a), rtol=1e-9)
    assert_gradient_matches(newton_sqrt, np.array(a))


def fixed_point(theta, x0):
    """x = cos(theta * x) iterated to a tolerance."""
    x = x0
    delta = np.array(1.0)
    while delta > 1e-13:
        new = np.cos(theta * x)
        delta = np.abs(new - x)
        x = new
    return x


def test_fixed_point_iteration():
    assert_gradient_matches(fixed_point, np.array(0.7), np.array(0.5))
    assert_gradient_matches(fixed_point, np.array(0.7), np.array(0.5), argnums=1, rtol=1e-5)


def with_break(x):
    s = 0.0
    i = 0
    while i < x.shape[0]:
        if x[i] < 0:
            break
        s = s + x[i] * x[i]
        i += 1
    return s


def test_break():
    assert_gradient_matches(with_break, np.array([1.0, 2.0, -1.0, 3.0]))
    assert_gradient_matches(with_break, np.array([1.0, 2.0, 0.5, 3.0]))


def with_continue(x):
    s = np.zeros(())
    for i in range(x.shape[0]):
        if x[i] < 0:
            continue
        s = s + np.sin(x[i]) * x[i]
    return s


def test_continue():
    assert_gradient_matches(with_continue, np.array([1.0, -2.0, 0.5, -1.0, 3.0]))


def early_return(x):
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            return x[i] * x.sum()
    return x.mean()


def test_early_return():
    assert_gradient_matches(early_return, np.array([1.0, 2.5, 3.0]))
    assert_gradient_matches(early_return, np.array([1.0, 0.5, 1.5]))


def nested_loops(A):
    total = 0.0
    n, m = A.shape
    for i in range(n):
        row = 0.0
        for j in range(m):
            row = row + A[i, j] * (j + 1.0)
        total = total + np.tanh(row)
    return total


def test_nested_loops():
    assert_gradient_matches(nested_loops, rng.normal(size=(3, 4)) * 0.3)


def nested_while(x):
    total = np.zeros(())
    i = 0
    while i < x.shape[0]:
        v = x[i]
        while v < 10.0:
            v = v * 1.5 + 0.1
        total = total + v
        i += 1
    return total


def test_nested_while_with_data_dependent_inner_trip_counts():
    assert_gradient_matches(nested_while, np.array([0.5, 2.0, 9.0]))


def rnn(W, U, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return (h**2).sum()


@pytest.mark.parametrize("argnums", [0, 1, 2, 3])
def test_loop_over_rows_rnn(argnums):
    args = (rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=(6, 3)), rng.normal(size=4))
    assert_gradient_matches(rnn, *args, argnums=argnums)


def row_updates(A):
    B = A.copy()
    for i in range(1, A.shape[0]):
        B[i] = B[i] + 0.5 * np.sin(B[i - 1])
    return (B * B).sum()


def test_in_place_updates_in_a_loop():
    assert_gradient_matches(row_updates, rng.normal(size=(5, 3)))


def augmented_updates(x, w):
    y = x.copy()
    for k in range(3):
        y *= w
        y[0] += y[-1]
    return y.sum()


@pytest.mark.parametrize("argnums", [0, 1])
def test_augmented_assignments_in_a_loop(argnums):
    assert_gradient_matches(augmented_updates, rng.normal(size=4), rng.normal(size=4), argnums=argnums)


def loop_over_array(x):
    s = np.zeros(2)
    for row in x:
        s = s * 0.5 + row**2
    return s.sum()


def test_loop_over_an_array():
    assert_gradient_matches(loop_over_array, rng.normal(size=(4, 2)))


def test_cond_inside_a_while_loop():
    def f(x):
        y = x
        k = 0
        while k < 5:
            if y.sum() > 0:
                y = y * 0.9 - 0.3
            else:
                y = np.sin(y) + 0.2
            k += 1
        return (y**2).sum()

    assert_gradient_matches(f, np.array([0.4, 0.6]))


def test_a_loop_whose_adjoint_reads_nothing_from_the_forward_pass():
    """The tape then only counts iterations (a pop of no values)."""

    def f(x, A):
        s = 0.0
        for i in range(3):
            s = s + x[1]
            A[0, 0] = A[0, 0] + s
        return A.sum()

    g = dy2st.grad(f)(np.arange(4.0), np.ones((2, 2)))
    np.testing.assert_array_equal(g, [0.0, 6.0, 0.0, 0.0])


def test_sizes_known_only_at_run_time_inside_a_loop():
    """``out[:i]`` has a size that changes every iteration: the backward code reads each
    iteration's size from its own values, not from the last one the forward loop left."""

    def f(x):
        out = np.zeros(len(x))
        for i in range(1, len(x)):
            out[i] = out[:i].sum() * 0.5 + x[i] * out[:i].mean()
        return out.sum() + x[x > 0.5].mean()

    assert_gradient_matches(f, np.array([1.0, 0.3, 2.0, -1.0, 0.7, 0.9]))


def test_masked_reductions_of_a_data_dependent_size():
    def f(x):
        y = x[x > 0.0]
        return (y - y.mean()).var() + y.std() * 2.0 + np.sort(x).sum()

    assert_gradient_matches(f, np.array([1.0, -0.3, 2.0, -1.0, 0.7, 0.9]))
