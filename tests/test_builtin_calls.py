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


# --- max, min and sum over a tensor's rows ---------------------------------------------------------
def extremes(x):
    return max(x), min(x)


def sums(x):
    return sum(x), sum(x, 10), sum(x, start=0.5)


def extremes_with_default(x):
    return max(x, default=-1.0), min(x, default=None)


ROWS = [
    np.array([3.0, -1.0, 7.5, 7.5, 0.25]),
    np.array([2.5, 1.5, -4.0], np.float32),
    np.array([1.0, 2.0, 0.5], np.float16),
    np.array([5, -3, 9, 9, 0], np.int8),
    np.array([250, 3, 255], np.uint8),
    np.array([False, True, True]),
    np.array([4.0]),
    np.array([], np.float64),
    np.array([[1.5], [-2.0], [3.0]]),
    np.array([[1.0, 2.0, 3.0]]),
]

NANS = [
    np.array([np.nan, 1.0, 5.0]),
    np.array([1.0, np.nan, 5.0, np.nan]),
    np.array([-np.inf, np.nan, -np.inf]),
    np.array([np.inf, np.nan]),
    np.array([np.nan, np.nan]),
    np.array([2.0, np.nan], np.float32),
    np.array([-0.0, 0.0, -0.0]),
    np.array([0.0, -0.0]),
    np.array([[np.nan], [3.0], [1.0]]),
]


def _label(x):
    return f"{x.dtype}{list(x.shape)}:{x.ravel()[:4].tolist()}"


@pytest.mark.parametrize("x", ROWS + NANS, ids=_label)
@pytest.mark.parametrize("fn", [extremes, sums, extremes_with_default])
def test_builtins_over_rows_match_eager(fn, x):
    assert_like_eager(fn, x)


def test_signed_zeros_keep_the_first_of_equal_values_bit_for_bit():
    for x in (np.array([-0.0, 0.0]), np.array([0.0, -0.0])):
        converted = dy2st.to_static(extremes)(x)
        assert [np.signbit(v) for v in converted] == [np.signbit(v) for v in extremes(x)]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sum_adds_in_pythons_order_not_pairwise(dtype):
    # 10000 values whose pairwise sum differs from the left-to-right sum in every float dtype.
    x = (np.random.default_rng(7).standard_normal(10000) * 100).astype(dtype)
    assert_like_eager(sums, x)
    assert_like_eager(sums, x.reshape(100, 100))


def test_a_big_array_stages_a_few_ops_not_one_per_row():
    x = np.random.default_rng(0).standard_normal(100_000)
    for fn in (extremes, sums):
        graph = dy2st.to_static(fn).graph(x, optimize=False)
        assert len(list(graph.walk())) < 40
        assert_like_eager(fn, x)


def rows_that_do_not_compare(x):
    return max(x)


@pytest.mark.parametrize("x", [np.ones((3, 2)), np.ones((2, 0)), np.array(1.0), np.array([], np.int64)])
def test_rows_python_cannot_compare_raise_eagers_error(x):
    assert_like_eager(rows_that_do_not_compare, x)
    assert_like_eager(sums, x) if x.ndim == 0 else None


def pick_among_arrays(x):
    return min([x, x + 1])


def pick_among_zero_d(a, b):
    return max(a, b), min((a, b)), max([a], default=b), sum([a, b]), sum((a, b), a)


def pick_in_a_generator(x):
    return max(x[i] * 2 for i in range(3)), min(i * i for i in range(1, 4)), sum(x[i] for i in range(2))


def test_picks_among_arguments_and_lists():
    assert_like_eager(pick_among_arrays, np.array([1.0, 2.0]))
    assert_like_eager(pick_among_arrays, np.array([1.0]))
    assert_like_eager(pick_among_zero_d, np.float64(2.5), np.float64(-1.0))
    assert_like_eager(pick_among_zero_d, np.array(2.5), np.array(np.nan))
    assert_like_eager(pick_in_a_generator, np.array([1.0, 5.0, 3.0]))


def test_more_than_one_element_raises_value_error_at_the_line():
    with pytest.raises(ValueError, match="ambiguous") as info:
        dy2st.to_static(pick_among_arrays)(np.array([1.0, 2.0]))
    assert "min([x, x + 1])" in str(info.value)


def rounds(x):
    return round(x)


def rounds_to(x):
    return round(x, 2)


def rounds_python_numbers(x):
    n = 2.675
    k = 7
    for i in range(x.shape[0]):
        if x[i] > 0:
            n = n + 1.0
            k = k + 10
    return round(n, 2), round(k, -1), round(n), round(x.sum(), 1), round(x[0])


@pytest.mark.parametrize("x", [np.array([1.5, 2.5]), np.array(2.5), np.float64(2.675), np.float32(1.25)])
@pytest.mark.parametrize("fn", [rounds, rounds_to])
def test_round_of_arrays_raises_type_error_as_ndarray_has_no_round(fn, x):
    assert_like_eager(fn, x)


def test_round_of_python_numbers_is_pythons_rounding():
    # round(2.675, 2) is 2.67 in Python (exact decimal); np.round gives 2.68.
    assert_like_eager(rounds_python_numbers, np.array([1.0, -2.0, 3.0]))
    assert_like_eager(rounds_python_numbers, np.array([-1.0]))


def test_max_over_complex_elements_is_refused_at_the_line():
    x = np.array([1 + 1j, complex(np.nan, 0), 1 + 2j, complex(2, np.nan)])
    with pytest.raises(dy2st.UnsupportedOpError, match="complex128") as info:
        dy2st.to_static(extremes)(x)
    assert "return max(x), min(x)" in str(info.value)
    assert_like_eager(sums, x)


def absolutes(x):
    return abs(x), abs(x[0]), abs(x.sum()), abs(-x[1:])


@pytest.mark.parametrize(
    "x", [np.array([-1.5, 2.0, -0.0]), np.array([-3, 4, -128], np.int8), np.array([3 - 4j, 1j, -2])]
)
def test_abs_is_np_absolute(x):
    assert_like_eager(absolutes, x)


def running_max_of_python_ints(k):
    t = 0
    for _ in range(k):
        t = max(t, 3)
    return t


@pytest.mark.parametrize("k", [0, 3])
def test_max_of_python_numbers_in_a_tensor_loop_is_a_python_number(k):
    assert_like_eager(running_max_of_python_ints, np.array(k))


def truth_and_complex(x):
    flag = bool(x.sum() > 0)  # a Python bool, read when the graph runs
    single = bool(x[:1])  # a one-element array has a truth value
    return flag, single, complex(x.max()), x * flag


@pytest.mark.parametrize("x", [np.array([1.0, -3.0, 2.0]), np.array([-1.0, 0.5]), np.array([0.0, -2.0])])
def test_bool_and_complex_of_one_value_are_python_values(x):
    flag, single, number, scaled = dy2st.to_static(truth_and_complex)(x)
    assert (flag, single, number) == truth_and_complex(x)[:3]
    assert type(flag) is bool and type(single) is bool and type(number) is complex
    np.testing.assert_array_equal(scaled, truth_and_complex(x)[3])


def truth_of_many(x):
    return bool(x > 0)


def test_bool_of_many_values_raises_numpys_value_error():
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        dy2st.to_static(truth_of_many)(np.ones(3))


def max_of_a_python_float_and_an_element(x):
    s = 0.0
    s = max(s, x[0])  # the Python float itself where it wins, else the float32 element
    return s, min(0.5, x[0])


def test_max_and_min_return_the_python_number_they_pick_as_eager_does():
    assert_like_eager(max_of_a_python_float_and_an_element, np.array([3.0], np.float32))
    assert_like_eager(max_of_a_python_float_and_an_element, np.array([-1.0], np.float32))
