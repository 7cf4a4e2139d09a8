"""Recursion in converted code: on Python values it runs while the graph is built; when it stops on
a tensor value it can never be staged (both branches of the tensor `if` are traced, the recursive
call again at every level), and is one clear error at the recursive call instead of a
RecursionError thousands of lines long."""

from __future__ import annotations

import inspect
import os
import traceback
import warnings

import numpy as np
import pytest

import dy2st
from dy2st.errors import UnsupportedSyntaxError
from eager_parity import assert_like_eager

THIS_FILE = os.path.abspath(__file__)


def halve_until_small(x, n):
    if n > 0:
        return halve_until_small(x * 0.5, n - 1)  # RECURSIVE CALL
    return x


def repeat_until(x, n):
    if n > 0:
        return repeat_until(np.concatenate([x, x[:1]]), n - 1)  # GROWING CALL
    return x


def power_of_two(x, n):
    if n == 0:
        return x
    if x.sum() > 0:  # a tensor condition, but n, a Python int, ends the recursion
        return power_of_two(x * 2.0, n - 1)
    return power_of_two(x - 1.0, n - 1)


class Countdown:
    def run(self, x, n):
        if n <= 0:
            return x
        return self.step(x + 1.0, n)

    def step(self, x, n):
        return self.run(x, n - 1)  # MUTUAL CALL


def _line_of(function, marker: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _error_of(static, *args) -> UnsupportedSyntaxError:
    with pytest.raises(UnsupportedSyntaxError) as info:
        static(*args)
    formatted = traceback.format_exception(info.value)
    assert len("".join(formatted).splitlines()) < 200, "one error, not the thousands of lines of a RecursionError"
    return info.value


def test_recursion_on_a_tensor_is_one_error_at_the_recursive_call():
    error = _error_of(dy2st.to_static(halve_until_small), np.ones(3), np.array(4))
    assert (os.path.abspath(error.loc.filename), error.loc.lineno) == (
        THIS_FILE,
        _line_of(halve_until_small, "RECURSIVE CALL"),
    )
    assert error.message.startswith(
        "halve_until_small calls itself under a condition that depends on a tensor value, so the recursion "
        "never ends while the graph is built"
    )
    assert error.note.startswith("write the recursion as a loop (while n > 0: x = x * 2; n = n - 1)")


def test_recursion_on_a_tensor_whose_arguments_keep_growing_is_the_same_error():
    error = _error_of(dy2st.to_static(repeat_until), np.ones(2), np.array(3))
    assert error.loc.lineno == _line_of(repeat_until, "GROWING CALL")
    assert error.message.startswith("repeat_until calls itself under a condition that depends on a tensor value")


def test_mutual_recursion_through_methods_on_a_tensor_is_refused():
    counter = Countdown()
    error = _error_of(dy2st.to_static(counter.run), np.zeros(2), np.array(3))
    assert error.loc.lineno == _line_of(Countdown.step, "MUTUAL CALL")
    assert error.message.startswith("Countdown.run calls itself under a condition that depends on a tensor value")


def test_recursion_on_python_values_runs_while_the_graph_is_built():
    x = np.arange(3.0)
    assert_like_eager(halve_until_small, x, 4)
    assert_like_eager(Countdown().run, x, 3)
    static = dy2st.to_static(halve_until_small)
    assert [op.name for op in static.graph(x, 4).walk()].count("cond") == 0


def test_python_recursion_under_tensor_conditions_still_ends():
    assert_like_eager(power_of_two, np.array([1.0, 2.0]), 3)
    assert_like_eager(power_of_two, np.array([-1.0, -2.0]), 3)
    assert "cond" in [op.name for op in dy2st.to_static(power_of_two).graph(np.ones(2), 2).walk()]


def test_fallback_runs_tensor_recursion_eagerly():
    static = dy2st.to_static(halve_until_small, fallback=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = static(np.ones(2), np.array(2))
    np.testing.assert_array_equal(result, halve_until_small(np.ones(2), np.array(2)))
    assert "calls itself under a condition that depends on a tensor value" in str(caught[0].message)
