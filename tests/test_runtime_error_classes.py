"""An error raised while the graph runs keeps its class: ``except IndexError:`` still catches it,
and it is a Dy2stRuntimeError naming the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.errors import Dy2stRuntimeError


def pick(x, i):
    return x[i] * 2


def test_an_index_out_of_range_is_an_index_error_naming_the_line():
    static = dy2st.to_static(pick)
    with pytest.raises(IndexError) as caught:
        static(np.arange(3.0), np.array(7))
    assert isinstance(caught.value, Dy2stRuntimeError)
    assert "test_runtime_error_classes.py:14" in str(caught.value)
    assert "out of bounds" in str(caught.value)


def caught_inside(x, i):
    try:
        return pick(x, i)
    except IndexError:
        return None


def test_the_caller_catches_it_as_eager_code_would():
    static = dy2st.to_static(pick)
    try:
        static(np.arange(3.0), np.array(9))
    except IndexError:
        caught = True
    else:
        caught = False
    assert caught and caught_inside(np.arange(3.0), 9) is None  # eager behaviour, for reference


def test_a_floating_point_error_keeps_its_class():
    static = dy2st.to_static(lambda_free_divide)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as caught:
        static(np.ones(2), np.zeros(2))
    assert isinstance(caught.value, Dy2stRuntimeError)


def lambda_free_divide(x, y):
    return x / y


def add_a_float_in_place_to_ints(x):
    x += 1.5
    return x


def add_a_list_of_strings(x):
    return x + ["a"]


@pytest.mark.parametrize("fn", [add_a_float_in_place_to_ints, add_a_list_of_strings])
def test_build_errors_where_numpy_raises_a_type_error_are_type_errors(fn):
    with pytest.raises(TypeError):
        fn(np.arange(3))
    with pytest.raises(TypeError) as info:
        dy2st.to_static(fn)(np.arange(3))
    assert isinstance(info.value, dy2st.GraphBuildError)
