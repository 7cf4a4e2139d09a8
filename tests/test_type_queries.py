"""``type(v)`` and ``isinstance(v, cls)`` in converted code answer for the value eager code holds:
an array argument is an ``np.ndarray``, ``x[0]`` a NumPy scalar, ``float(x.sum())`` a Python
float, a size an int, a method's ``self`` its class (before, a converted function saw its own
stand-ins and took the other branch, a silent wrong answer)."""

import numbers

import numpy as np
import pytest

import dy2st
from dy2st.errors import GraphBuildError
from eager_parity import assert_like_eager


def array_checks(x):
    return (
        isinstance(x, np.ndarray),
        isinstance(x[0], np.floating),
        isinstance(x[0], float),  # np.float64 is a Python float
        isinstance(x[0], np.ndarray),
        type(x) is np.ndarray,
        type(x[0]) is np.float64,
        type(x.sum()) is np.float64,
        isinstance(x.sum(), np.generic),
        isinstance(x, (list, tuple)),
    )


def number_checks(x):
    v = float(x.sum())
    n = int(x.sum())
    return (
        isinstance(v, float),
        type(v) is float,
        isinstance(n, int),
        type(n) is int,
        isinstance(n, float),
        isinstance(v, numbers.Real),
        isinstance(x[0] > 0, np.bool_),
        isinstance(len(x), int),
        isinstance(x.shape[0], int),
    )


def branches_on_type(x):
    if isinstance(x, np.ndarray):
        return x * 2.0
    return x + 1.0


def normalises_arguments(x, scale):
    # The way library code is written: accept a number or an array.
    if isinstance(scale, (int, float)):
        scale = np.full(x.shape, scale)
    return x * scale


def loop_counter_types(x):
    kinds = 0
    for i in range(x.shape[0]):
        if isinstance(i, int):
            kinds += 1
    return kinds


@pytest.mark.parametrize("fn", [array_checks, number_checks, branches_on_type])
@pytest.mark.parametrize("x", [np.array([1.5, -2.0, 3.0]), np.arange(4.0)])
def test_type_queries_answer_for_the_eager_value(fn, x):
    assert_like_eager(fn, x)


def test_type_queries_with_a_symbolic_size():
    converted = dy2st.to_static(number_checks, dynamic=True)
    for n in (3, 5, 8):
        assert converted(np.ones(n)) == number_checks(np.ones(n))


def test_a_number_or_an_array_argument():
    x = np.arange(3.0)
    assert_like_eager(normalises_arguments, x, 2.0)
    assert_like_eager(normalises_arguments, x, np.array([1.0, 2.0, 3.0]))


def test_a_rolled_loop_counter_is_an_int():
    assert_like_eager(loop_counter_types, np.ones(40))


class Model:
    def __init__(self):
        self.w = np.ones(3)

    @dy2st.to_static
    def kind(self, x):
        return type(self) is Model, isinstance(self, Model), type(self).__name__


WEIGHTS = [np.ones(2), np.zeros(2)]


def reads_a_global_list(x):
    return type(WEIGHTS) is list, isinstance(WEIGHTS, list), x + WEIGHTS[0]


def test_captured_objects_have_their_own_types():
    assert Model().kind(np.ones(3)) == (True, True, "Model")
    assert_like_eager(reads_a_global_list, np.ones(2))


def three_argument_type(x):
    cls = type("Made", (), {"factor": 2.0})
    return x * cls.factor


def test_three_argument_type_makes_a_class():
    assert_like_eager(three_argument_type, np.ones(2))


def kind_depends_on_the_path(x):
    v = x.sum()  # a NumPy scalar
    if x[0] > 0:
        v = 1.0  # a Python float
    return isinstance(v, float), isinstance(v, np.generic), isinstance(v, (np.ndarray, np.float64))


def type_depends_on_the_path(x):
    v = x.sum()
    if x[0] > 0:
        v = 1.0
    return type(v) is float


@pytest.mark.parametrize("x", [np.ones(3), -np.ones(3)])
def test_isinstance_of_a_value_whose_kind_depends_on_the_path(x):
    assert_like_eager(kind_depends_on_the_path, x)


def test_type_of_a_value_whose_kind_depends_on_the_path_is_refused_at_the_users_line():
    with pytest.raises(GraphBuildError, match="depends on which branch") as info:
        dy2st.to_static(type_depends_on_the_path)(np.ones(3))
    assert "test_type_queries.py" in str(info.value)
