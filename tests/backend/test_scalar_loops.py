"""Generated code for 0-d arithmetic and loop conditions: Python operators on NumPy scalars where
they give exactly the values and types the eager code gets, and NumPy kernels where they would not."""

import warnings

import numpy as np
import pytest

import dy2st
from eager_parity import same_value


def newton_sqrt(a):
    x = a / 2.0
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


def test_newton_runs_on_numpy_scalars_and_matches_eager_bit_for_bit():
    static = dy2st.to_static(newton_sqrt)
    for value in (np.array(1000.0), np.array(2.0), np.array(1e-3), np.array(7.0)):
        got, want = static(value), newton_sqrt(value)
        assert type(got) is type(want) and got.dtype == want.dtype
        assert got == want
    source = static.executor_source(np.array(2.0))
    loop = source[source.index("while True:") :]
    # the argument is read once as a NumPy scalar; abs and / are operators, not ufunc calls
    assert "s0 = a0[()]" in source
    assert "k_absolute" not in loop and "k_divide" not in loop and "abs(" in loop and "s0 / " in loop
    # the condition's loop-invariant tolerance is computed once, before the loop
    assert "1e-12 * s0" in source[: source.index("while True:")]


def counter_reciprocals(n):
    total = np.zeros(())
    for i in range(n):
        total = total + 1 / (i - i + 0)  # Python numbers: ZeroDivisionError, as eagerly
    return total


def counter_numpy_reciprocals(n):
    total = np.zeros(())
    for i in range(n):
        total = total + np.divide(1, i - i)  # NumPy's division: inf, with a warning
    return total


def test_division_of_two_python_numbers_is_pythons_and_np_divide_numpys():
    with pytest.raises(ZeroDivisionError):
        dy2st.to_static(counter_reciprocals)(np.array(3))
    static = dy2st.to_static(counter_numpy_reciprocals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert static(np.array(3)) == np.inf
    assert "k_divide" in static.executor_source(np.array(3))


def running_sum(xs, n):
    total = np.zeros(xs.shape[1:])
    for i in range(n):
        total = total + xs[i]
    return total


def test_a_loop_bound_is_compared_as_a_python_int_and_results_match():
    xs = np.arange(12.0).reshape(4, 3)
    static = dy2st.to_static(running_sum)
    for n in (0, 3, 4, np.int64(2)):
        got, want = static(xs, np.array(n)), running_sum(xs, np.array(n))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    source = static.executor_source(xs, np.array(3))
    # a counted loop: Python's range does the compare and the + 1
    assert "= int(" in source and "in range(0, " in source and "while True" not in source


def count_up(n):
    i = 0
    while i < n:
        i = i + 1
    return np.zeros(()) + i


def test_a_counted_loop_leaves_its_counter_where_the_while_loop_would():
    static = dy2st.to_static(count_up)
    for n in (-2, 0, 3):
        got, want = static(np.array(n)), count_up(np.array(n))
        assert got == want and np.asarray(got).dtype == np.asarray(want).dtype


def scaled_until(x, limit):
    i = 0
    while i < limit:
        x = x * 2.0
        i = i + 1
    return x, i


def test_a_bound_used_only_as_the_condition_leaves_the_counter_a_numpy_result():
    static = dy2st.to_static(scaled_until)
    x = np.ones(3)
    got_x, got_i = static(x, np.array(3))
    want_x, want_i = scaled_until(x, np.array(3))
    np.testing.assert_array_equal(got_x, want_x)
    assert got_i == want_i


RNN_W = np.linspace(-0.3, 0.3, 16).reshape(4, 4)
RNN_BIAS = np.linspace(-0.1, 0.1, 4)


def rnn(xs, h, n):
    for i in range(n):
        h = np.tanh(xs[i] @ RNN_W + h @ RNN_W + RNN_BIAS)
    return h


def test_a_small_step_overwrites_its_own_temporaries_and_matches_eager():
    xs = np.linspace(-1, 1, 20).reshape(5, 4)
    h = np.zeros(4)
    static = dy2st.to_static(rnn)
    for n in (0, 1, 5):
        got, want = static(xs, h, np.array(n)), rnn(xs, h, np.array(n))
        assert got.dtype == want.dtype and got is not h
        # NumPy's bits; within the 4 ulp of its tanh where the compiled tier runs the loop (a math
        # function on a small array, docs/compiled-tier.md)
        same_value(got, want)
    source = static.executor_source(xs, h, np.array(5))
    # the sum's first add allocates; the second add and tanh write into it
    assert source.count("out=v") == 2
    # the counter starts at 0 and only ever gets + 1: no Python-number check per step
    assert "as_python_number" not in source


def count_from_array(start, n):
    total = np.zeros(())
    i = start
    while i < n:
        total = total + i
        i = i + 1
    return total, i


def test_a_counter_that_starts_as_an_array_value_keeps_its_check():
    static = dy2st.to_static(count_from_array)
    got_total, got_i = static(np.array(2), np.array(5))
    want_total, want_i = count_from_array(np.array(2), np.array(5))
    assert got_total == want_total and got_i == want_i
    assert np.asarray(got_total).dtype == np.asarray(want_total).dtype


def crc16(data, poly):
    crc = 0xFFFF
    for byte in data:
        current = 0xFF & byte  # a NumPy uint8 scalar in eager code
        for _ in range(8):
            if (crc & 0x0001) ^ (current & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            current >>= 1
    return crc, current % 3, current // 2


def test_integer_bit_operations_on_numpy_scalars_are_python_operators():
    static = dy2st.to_static(crc16)
    data = np.random.default_rng(5).integers(0, 256, 40, dtype=np.uint8)
    got, want = static(data, 0x8408), crc16(data, 0x8408)
    assert [(type(g), g) for g in got] == [(type(w), w) for w in want]
    source = static.executor_source(data, 0x8408)
    for kernel in ("k_bitwise_and", "k_bitwise_xor", "k_right_shift", "k_remainder", "k_floor_divide"):
        assert kernel not in source
    assert "!= 0" not in source  # ``if (crc & 1) ^ (current & 1):`` tests the number itself


def float_floor_and_power(x):
    y = x[0] // 0.3 + x[1] % 0.7
    return y, x[0] ** 1.7  # ``**`` stays a ufunc call: scalar powers round differently


def test_float_floor_division_and_remainder_are_operators_and_powers_stay_ufuncs():
    static = dy2st.to_static(float_floor_and_power)
    x = np.array([2.5, 1.1])
    got, want = static(x), float_floor_and_power(x)
    assert [(type(g), g) for g in got] == [(type(w), w) for w in want]
    source = static.executor_source(x)
    assert "k_floor_divide" not in source and "k_remainder" not in source and "k_power" in source


def branch_on_a_number(x, z):
    total = 0.0
    for v in x:
        if v:  # staged as v != 0; the generated code tests v itself
            total += 1.0
    if z:
        total += 10.0
    return total


def test_the_truth_of_a_number_is_tested_as_python_tests_it():
    static = dy2st.to_static(branch_on_a_number)
    x = np.array([0.0, -0.0, np.nan, 2.0, -1e-300])
    for z in (np.array(0j), np.array(1j), np.array(0.0)):
        assert static(x, z) == branch_on_a_number(x, z)
    source = static.executor_source(x, np.array(0j))
    assert "!= 0" not in source
