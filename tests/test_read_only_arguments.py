"""A read-only array that the function updates in place fails as eager NumPy fails: a ValueError at
the update's line, naming the array, before the graph runs; or, where eager code may not reach
the update or would do something visible first, by running the Python function."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import same_value


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def assert_like_eager(fn, static, make_args) -> None:
    """``fn`` and ``static`` on fresh arguments from ``make_args()`` (``eager_parity``'s deep copies
    would make read-only arrays writable): the same exception class, or the same result, and the
    same final arguments."""
    eager_args, converted_args = make_args(), make_args()
    outcomes = []
    for function, args in ((fn, eager_args), (static, converted_args)):
        try:
            outcomes.append((function(*args), None))
        except ValueError as error:
            outcomes.append((None, error))
    (expected, expected_error), (actual, actual_error) = outcomes
    if expected_error is not None:
        assert isinstance(actual_error, type(expected_error)), (expected_error, actual_error)
    else:
        assert actual_error is None, actual_error
        same_value(actual, expected)
    for index, (a, e) in enumerate(zip(converted_args, eager_args)):
        same_value(a, e, f"argument {index} after the call")


def line_of(text: str) -> int:
    """The line of this file that holds ``text``."""
    with open(__file__) as source:
        return next(number for number, line in enumerate(source, 1) if text in line)


def bump(x, y):
    z = y * 2.0
    x += 1.0  # bump: the update
    return z


def test_a_read_only_argument_updated_in_place_fails_at_the_update_before_running():
    static = dy2st.to_static(bump)
    for _ in range(2):  # the general path, then again
        x = read_only(np.zeros(3))
        with pytest.raises(ValueError) as caught:
            static(x, np.ones(3))
        error = caught.value
        assert isinstance(error, dy2st.Dy2stRuntimeError)
        assert error.loc.filename == __file__ and error.loc.lineno == line_of("# bump: the update")
        assert "'x'" in error.message and "read-only" in error.message
        assert "x += 1.0" in str(error)
        np.testing.assert_array_equal(x, np.zeros(3))
    assert_like_eager(bump, static, lambda: (read_only(np.zeros(3)), np.ones(3)))
    assert static.num_graphs == 1


def test_the_fast_call_checks_read_only_arguments_only_for_graphs_that_update_them():
    static, pure = dy2st.to_static(bump), dy2st.to_static(lambda_free_double)
    x, y = np.zeros(3), np.ones(3)
    static(x, y)
    pure(x, y)
    key = (x.shape, x.dtype, y.shape, y.dtype)  # fast_call.fast_key: flat, two items per argument
    assert "writeable" in static._fast_calls[key].__code__.co_names
    assert "writeable" not in pure._fast_calls[key].__code__.co_names
    with pytest.raises(ValueError, match="'x' is updated in place here"):
        static(read_only(np.zeros(3)), y)  # the fast call hands it to the general path


def lambda_free_double(x, y):
    return x * 2.0 + y


def set_first(x):
    x[0] = 5.0  # set_first: the update
    return x.sum()


def test_a_subscript_assignment_into_a_read_only_argument_names_its_line():
    with pytest.raises(ValueError) as caught:
        dy2st.to_static(set_first)(read_only(np.zeros(3)))
    assert caught.value.loc.lineno == line_of("# set_first: the update")
    assert_like_eager(set_first, dy2st.to_static(set_first), lambda: (read_only(np.zeros(3)),))


STATE = np.zeros(3)


def store(x):
    STATE[:] = x  # store: the update
    return x + 1.0


def test_a_read_only_global_array_updated_in_place_is_named():
    static = dy2st.to_static(store)
    STATE.flags.writeable = False
    try:
        with pytest.raises(ValueError) as caught:
            static(np.ones(3))
        assert caught.value.loc.lineno == line_of("# store: the update")
        assert "array 'STATE'" in caught.value.message
    finally:
        STATE.flags.writeable = True
    np.testing.assert_array_equal(static(np.ones(3)), np.full(3, 2.0))
    np.testing.assert_array_equal(STATE, np.ones(3))


def bump_if(x, flag):
    if flag > 0:  # a tensor condition: the update may not run
        x += 1.0
    return x * 2.0


def test_an_update_under_a_tensor_condition_fails_only_if_it_runs_as_in_eager_code():
    static = dy2st.to_static(bump_if)
    for flag in (0, 1):
        assert_like_eager(bump_if, static, lambda: (read_only(np.zeros(3)), np.array(flag)))
        assert_like_eager(bump_if, static, lambda: (np.zeros(3), np.array(flag)))


def bump_both(y, x):
    y += 1.0
    x += 1.0
    return y


def test_an_update_of_another_argument_first_still_happens_as_in_eager_code():
    static = dy2st.to_static(bump_both)
    assert_like_eager(bump_both, static, lambda: (np.zeros(3), read_only(np.zeros(3))))
    assert_like_eager(bump_both, static, lambda: (read_only(np.zeros(3)), np.zeros(3)))
    with pytest.raises(ValueError) as caught:
        static(read_only(np.zeros(3)), np.zeros(3))
    assert isinstance(caught.value, dy2st.Dy2stRuntimeError) and "'y'" in caught.value.message


def print_then_bump(x):
    print("before the update")
    x += 1.0
    return x


def test_a_print_before_the_update_still_prints_as_in_eager_code(capsys):
    static = dy2st.to_static(print_then_bump)
    with pytest.raises(ValueError):
        static(read_only(np.zeros(3)))
    assert capsys.readouterr().out == "before the update\n"
