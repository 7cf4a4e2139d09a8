"""The call path of compiled loops: a loop hands back only the results that are not the arrays it
updated in place (``returns_its_operand``), and the fast call runs the executor's function itself;
neither may change what the caller sees: values, which array object is returned, errors naming
the user's line, going back to the NumPy tier."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.support import returns_its_operand
from dy2st.ir.opcodes import WHILE_LOOP
from eager_parity import assert_like_eager

pytest.importorskip("numba")


def loops_of(static, *args):
    """The compiled loops of the graph's body (inner loops are part of them)."""
    return [op for op in static.graph(*args).body.ops if op.name == WHILE_LOOP and op.attrs.get("compiled_loop")]


def running_sum_in_place(x):
    for i in range(1, x.shape[0]):
        x[i] += x[i - 1]
    return x


def clipped_in_place(x, limit):
    for i in range(x.shape[0]):
        if x[i] > limit:
            x[i] = limit
    return x


def alternating_reads(x, y, steps):
    total = 0.0
    for i in range(steps):
        total += x[i % x.shape[0]] - y[0]
        x, y = y, x
    return x, y, total


def fresh_accumulator(x):
    out = np.zeros(x.shape[0])
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
        out[i] = total
    return out, total


def test_an_array_updated_in_place_is_returned_as_the_callers_own_array():
    static = dy2st.to_static(running_sum_in_place, backend="compiled")
    x = np.arange(6.0)
    (loop,) = loops_of(static, x.copy())
    assert returns_its_operand(loop, 0)
    for _ in range(3):  # the first call builds; the next ones take the fast call
        x = np.arange(6.0)
        result = static(x)
        assert result is x
        np.testing.assert_array_equal(result, np.cumsum(np.arange(6.0)))


def test_an_array_updated_in_place_in_one_branch_is_still_the_callers_array():
    static = dy2st.to_static(clipped_in_place, backend="compiled")
    (loop,) = loops_of(static, np.arange(5.0), 2.5)
    assert returns_its_operand(loop, 0)
    for _ in range(2):
        x = np.arange(5.0)
        assert static(x, 2.5) is x
        np.testing.assert_array_equal(x, [0, 1, 2, 2.5, 2.5])


@pytest.mark.parametrize("steps", [5, 6])  # loops of at most 4 iterations stay unrolled
def test_swapped_arrays_are_handed_back_by_the_compiled_loop(steps):
    static = dy2st.to_static(alternating_reads, backend="compiled")
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25])
    (loop,) = loops_of(static, x, y, steps)
    arrays = [k for k, value in enumerate(loop.results) if value.type.ndim]
    assert len(arrays) == 2 and not any(returns_its_operand(loop, k) for k in arrays)
    for _ in range(2):  # (the graph returns copies of arrays that may be either argument)
        first, second, total = assert_like_eager(alternating_reads, x, y, steps, converted=static)
        expected = (x, y) if steps % 2 == 0 else (y, x)
        np.testing.assert_array_equal(first, expected[0])
        np.testing.assert_array_equal(second, expected[1])


def test_a_new_array_made_before_the_loop_is_handed_back_with_the_scalar_results():
    static = dy2st.to_static(fresh_accumulator, backend="compiled")
    x = np.tile([1.0, -2.0, 3.5], 20)
    (loop,) = loops_of(static, x)
    (array,) = [k for k, value in enumerate(loop.results) if value.type.ndim]
    assert returns_its_operand(loop, array)  # np.zeros made outside the loop, updated in place in it
    for _ in range(2):
        out, total = assert_like_eager(fresh_accumulator, x, converted=static)
        np.testing.assert_array_equal(out, np.cumsum(x))


def reads_past_the_end(x, n):
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


def test_an_error_of_compiled_code_names_the_users_line_on_the_fast_call_too():
    static = dy2st.to_static(reads_past_the_end, backend="compiled")
    assert static(np.ones(4), 4) == 4.0
    for _ in range(2):  # both calls take the fast call: the key holds types of number inputs
        with pytest.raises(IndexError) as raised:
            static(np.ones(4), 6)
        assert "test_compiled_call_path.py" in str(raised.value)
