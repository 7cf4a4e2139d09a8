"""Python builtins on tensors in converted code give what they give eagerly: ``int(x.sum())`` is a
Python int when the graph runs, ``max(a, b)`` the argument Python's comparison picks."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def conversions(x):
    return int(x.sum()), float(x[0]), round(x.mean()), round(x.mean(), 1), int(-x[0]), float(x[0] > 0)


def picks(x):
    return max(x.sum(), 1.0), min(x[0], x[1]), max(x[0], x[1], x[2]), min([x[2], x[0]])


def loop_bound_from_int(x):
    n = int(x.sum())
    total = 0
    for i in range(n):
        total += i
    return total


def round_of_a_carried_float(x):
    n = 0.5
    for i in range(x.shape[0]):
        if x[i] > 0:
            n = n + 1.5
    return round(n)


def int_of_nan(x):
    return int(x.max())


@pytest.mark.parametrize("x", [np.array([2.5, -1.25, 3.0]), np.array([0.5, 0.5, 0.5]), np.array([-3.5, 4.0, 1.0])])
@pytest.mark.parametrize("fn", [conversions, picks])
def test_builtins_match_eager(fn, x):
    assert_like_eager(fn, x)


def test_a_python_int_from_a_tensor_drives_a_loop():
    assert_like_eager(loop_bound_from_int, np.array([1.0, 2.0, 1.5]))


def test_round_of_a_python_number_carried_by_a_tensor_loop():
    assert_like_eager(round_of_a_carried_float, np.array([1.0, -2.0, 1.5]))


def test_int_of_nan_raises_value_error_when_the_graph_runs():
    with pytest.raises(ValueError):
        dy2st.to_static(int_of_nan)(np.array([np.nan]))
    assert dy2st.to_static(int_of_nan)(np.array([2.7])) == 2


def test_max_keeps_the_first_of_unordered_values_as_python_does():
    assert_like_eager(picks, np.array([np.nan, 1.0, 2.0]))
