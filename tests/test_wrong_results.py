"""Regressions for programs that once gave a silently wrong answer (issue 10's first list).

Each case runs eagerly and converted and must leave the same results and arguments."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager

# Rows whose float16 running sum overflows: NumPy's mean accumulates float16 in float32.
HALF_ROWS = np.full((2, 5000), 30000, np.float16)


def mean_of_product(x):
    return (x * 2).mean(axis=1)


def mean_plus_one(x):
    return x.mean(axis=1) + 1


def centred(x):
    return x - (x * 2).mean(axis=1, keepdims=True)


@pytest.mark.parametrize("fn", [mean_of_product, mean_plus_one, centred])
def test_float16_means_accumulate_in_float32_in_planned_and_fused_buffers(fn):
    result = assert_like_eager(fn, HALF_ROWS)
    assert np.isfinite(result).all()


# Values that simplification folds to the argument itself, then an in-place update of the argument.
def _identity_then_update(make_value, update):
    def fn(x):
        v = make_value(x)
        update(x)
        return v

    return fn


IDENTITIES = {
    "times_one": lambda x: x * 1.0,
    "plus_zero": lambda x: x + 0,
    "divide_one": lambda x: x / 1,
    "double_negation": lambda x: -(-x),
    "np_add_zero": lambda x: np.add(x, 0),
    "astype_same": lambda x: x.astype(x.dtype),
}


def _add_one(x):
    x += 1.0


def _set_first(x):
    x[0] = 5.0


def _set_all(x):
    x[:] = 7.0


@pytest.mark.parametrize("update", [_add_one, _set_first, _set_all])
@pytest.mark.parametrize("make_value", IDENTITIES.values(), ids=IDENTITIES.keys())
def test_a_value_equal_to_an_argument_keeps_its_value_when_the_argument_is_updated(make_value, update):
    assert_like_eager(_identity_then_update(make_value, update), np.zeros(3))


def updated_in_a_loop(x, n):
    v = x * 1.0
    i = 0
    while i < n:
        x[i] += 1.0
        i += 1
    return v, x * 1.0


def updated_in_a_branch(x, c):
    v = x + 0
    if c > 0:
        x += 2.0
    return v


def two_arguments_updated(x, y):
    a = x * 1.0
    b = y / 1
    x += y
    y *= 3.0
    return b, a


def test_the_value_survives_updates_in_tensor_loops_and_branches():
    assert_like_eager(updated_in_a_loop, np.zeros(3), np.int64(2))
    assert_like_eager(updated_in_a_branch, np.zeros(3), np.float64(1.0))
    assert_like_eager(updated_in_a_branch, np.zeros(3), np.float64(-1.0))
    assert_like_eager(two_arguments_updated, np.arange(3.0), np.ones(3))


# Aliased inputs: the graph assumes independent arrays; overlapping calls must behave as eager.
def add_to_first_read_second(x, y):
    x += 1.0
    return y * 2


def write_both(x, y):
    x[0] = 1.0
    y[1] = 2.0
    return x + y


W = np.zeros(3)


def update_argument_read_global(x):
    x += 1.0
    return W * 2


def update_global_read_argument(x):
    W[0] += 5.0
    return x * 1


@pytest.mark.parametrize("fn", [add_to_first_read_second, write_both])
def test_the_same_array_passed_twice_behaves_as_eager(fn):
    static = dy2st.to_static(fn)
    for _ in range(3):  # the first call builds, the next ones take the fast path
        a, b = np.zeros(3), np.zeros(3)
        expected = fn(a, a)
        assert np.array_equal(static(b, b), expected) and np.array_equal(b, a)
    independent = static(np.zeros(3), np.ones(3))  # independent arrays still run the graph
    assert np.array_equal(independent, fn(np.zeros(3), np.ones(3)))
    assert static.num_graphs == 1


def test_overlapping_views_behave_as_eager():
    a, b = np.zeros(4), np.zeros(4)
    expected = add_to_first_read_second(a[:3], a[1:])
    assert np.array_equal(dy2st.to_static(add_to_first_read_second)(b[:3], b[1:]), expected)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("fn", [update_argument_read_global, update_global_read_argument])
def test_a_global_passed_as_an_argument_behaves_as_eager(fn):
    static = dy2st.to_static(fn)
    for _ in range(2):
        W[...] = 0.0
        expected, expected_w = fn(W), W.copy()
        W[...] = 0.0
        assert np.array_equal(static(W), expected) and np.array_equal(W, expected_w)


# Return types: what eager returns (Python number, NumPy scalar or 0-d array).
def element_and_constants(x):
    return x[0], x[1:2].sum(), np.float64(3.0), np.sum(x) / 2, x.shape[0] * 2, len(x)


def float_accumulated_in_a_tensor_loop(x, n):
    s = 0.0
    i = 0
    while i < n:
        s = s + x[i]
        i += 1
    return s


def int_accumulated_over_rows(x):
    s = 0
    for v in x:
        s = s + v
    return s


def running_maximum(x):
    best = -1.0
    for i in range(x.shape[0]):
        if x[i] > best:
            best = x[i]
    return best


def counted(n):
    total = 0
    for _ in range(n):
        total += 1
    return total * 2


@pytest.mark.parametrize(
    "fn, args",
    [
        (element_and_constants, (np.arange(3.0),)),
        (float_accumulated_in_a_tensor_loop, (np.ones(3), np.int64(2))),
        (float_accumulated_in_a_tensor_loop, (np.ones(3, np.float32), np.int64(3))),
        (int_accumulated_over_rows, (np.arange(4),)),
        (running_maximum, (np.array([0.5, 3.0, 2.0]),)),
        (counted, (np.int64(4),)),
    ],
)
def test_results_have_the_types_eager_returns(fn, args):
    assert_like_eager(fn, *args)


def test_a_number_the_loop_would_make_a_numpy_scalar_stays_a_python_number_after_zero_trips():
    """Eager returns the Python 0.0 when the loop never runs: the graph carries the kind too."""
    assert_like_eager(float_accumulated_in_a_tensor_loop, np.ones(3), np.int64(0))
    result = dy2st.to_static(float_accumulated_in_a_tensor_loop)(np.ones(3), np.int64(0))
    assert type(result) is float and result == 0.0


def scalar_from_a_0d_array(y):
    s = y * 1.0  # a NumPy scalar eagerly; simplified to y, a 0-d array, in the graph
    return s


def scalar_then_update(y):
    s = y * 1.0
    y += 1.0
    return s


def zero_d_view(y):
    return y[...]


@pytest.mark.parametrize("fn", [scalar_from_a_0d_array, scalar_then_update, zero_d_view])
def test_0d_results_keep_eagers_kind_after_simplification(fn):
    assert_like_eager(fn, np.array(2.0))


def picked_by_a_tensor_if(x, c):
    return x[0] if c > 0 else 0.5


def or_of_a_flag(x, k):
    found = False
    best = x[0]
    for _ in range(k):
        found = found or best > 1.0
    return found


def and_or_chain(x):
    return x[3] > 0 and x[1] or 0.5


def int_start_float_sum(xs, k):
    total = 0
    for i in range(k):
        total = total + i * xs[i]
    return total


def array_or_scalar(v, c):
    r = v if c > 0 else -v
    return r


@pytest.mark.parametrize(
    "fn, args",
    [
        (picked_by_a_tensor_if, (np.array([2.0, 1.0]), np.array(1))),
        (picked_by_a_tensor_if, (np.array([2.0, 1.0]), np.array(0))),
        (or_of_a_flag, (np.array([2.0, 3.0]), np.array(0))),
        (or_of_a_flag, (np.array([2.0, 3.0]), np.array(2))),
        (and_or_chain, (np.array([1.0, 2.0, 0.0, 1.0]),)),
        (and_or_chain, (np.array([1.0, 2.0, 0.0, -1.0]),)),
        (int_start_float_sum, (np.arange(3.0), np.array(0))),
        (int_start_float_sum, (np.arange(3.0), np.array(3))),
        (array_or_scalar, (np.array(2.0), np.array(1))),
        (array_or_scalar, (np.array(2.0), np.array(0))),
    ],
)
def test_a_result_whose_type_depends_on_the_path_is_what_the_path_taken_gives(fn, args):
    """Python number, NumPy scalar or 0-d array: the graph computes which, on the path taken."""
    assert_like_eager(fn, *args)


def computed_after_a_path_dependent_value(x, A, p):
    s = 0.0
    if A[0] < 0:
        s = x[1]
    for _ in range(3):
        if p > 0:
            s = s * 0.5 + 1
    return s


def returned_from_a_loop_in_a_tuple(x, k):
    s = 0.0
    c = 0
    for j in range(k):
        if x[j] > 100.0:
            return x, s, c
    s = x[2]
    for _ in range(k):
        return x, s, c
    return x, s, c


def kept_through_a_loop_body(x, k):
    found = False
    for _ in range(k):
        if x[3] > 0:
            found = x[0] > 1.0
    return found


@pytest.mark.parametrize(
    "fn, args",
    [
        (computed_after_a_path_dependent_value, (np.arange(3.0), np.array([1.0]), 1)),
        (computed_after_a_path_dependent_value, (np.arange(3.0), np.array([-1.0]), 1)),
        (returned_from_a_loop_in_a_tuple, (np.arange(4.0), np.array(3))),
        (returned_from_a_loop_in_a_tuple, (np.arange(4.0) * 1000, np.array(3))),
        (returned_from_a_loop_in_a_tuple, (np.arange(4.0), np.array(0))),
        (kept_through_a_loop_body, (np.array([2.0, 0.0, 0.0, -1.0]), np.array(2))),
        (kept_through_a_loop_body, (np.array([2.0, 0.0, 0.0, 1.0]), np.array(2))),
    ],
)
def test_path_dependent_kinds_survive_arithmetic_loops_and_returns(fn, args):
    """Found by the differential generator (rolled_loops 20000 and 20031, search_logic 20084)."""
    assert_like_eager(fn, *args)


def compared_after_a_path_dependent_value(x):
    # Differential generator, search_logic seed 30057: `best > 1.0` of a Python float is a bool.
    best = x[4] or 0.5
    return best > 1.0


@pytest.mark.parametrize("x", [np.array([0.0, 0, 0, 0, 0.0]), np.array([0.0, 0, 0, 0, 2.0])])
def test_a_comparison_of_a_path_dependent_value_has_the_paths_type(x):
    assert_like_eager(compared_after_a_path_dependent_value, x)


def scaled_after_nested_loops(x, k):
    # Differential generator, rolled_loops seed 33067: a Python operator on a Python number whose
    # kind a loop decided dropped the kind (the operator's result is a new Python-number tensor).
    s = 0.0
    for j in range(k):
        for _ in range(len(x)):
            s = x[j]
    s = s * 0.5
    return s


@pytest.mark.parametrize("k", [np.array(0), np.array(2)])
def test_a_python_operator_keeps_the_kind_a_loop_decided(k):
    assert_like_eager(scaled_after_nested_loops, np.arange(8.0) - 1.5, k)


# NumPy calls that write into an array the function made from constants: the array is a literal of
# the build, and running the call eagerly on its value wrote into a copy (the update was lost).
def add_at_into_zeros(x):
    counts = np.zeros(4)
    np.add.at(counts, [0, 0, 2], 1.0)
    return counts + x


def fill_diagonal_of_zeros(x):
    eye = np.zeros((4, 4))
    np.fill_diagonal(eye, 2.0)
    return eye @ x


def writes_into_literals(x):
    a, b, c, d = np.zeros(4), np.zeros(4), np.zeros(4), np.zeros((2, 2))
    np.copyto(a, 3.0)
    np.put(b, [1], 5.0)
    np.exp(np.ones(4), out=c)
    np.put_along_axis(d, np.array([[0], [1]]), 7.0, axis=1)
    np.place(a, [True, False, True, False], [9.0])
    return a + b + c + x, d


@pytest.mark.parametrize("fn", [add_at_into_zeros, fill_diagonal_of_zeros, writes_into_literals])
def test_calls_that_write_into_an_array_made_from_constants_update_it(fn):
    assert_like_eager(fn, np.arange(4.0))


def mask_from_a_list_of_the_wrong_length(x):
    return x[np.array([True, False, True, True])]


def test_a_mask_made_from_a_list_is_checked_against_the_array_it_indexes():
    # It became the indices of its true elements: x[[0, 2, 3]] where eager raises IndexError.
    with pytest.raises(IndexError, match="boolean index did not match"):
        dy2st.to_static(mask_from_a_list_of_the_wrong_length)(np.arange(5.0))
    assert_like_eager(mask_from_a_list_of_the_wrong_length, np.arange(4.0))


# A NumPy scalar carried in a wider slot: `s = 0.0` (a Python float, float64) takes float32
# values from `max`, and eager code returns the np.float32 it picked.
def running_max_from_zero(x, k):
    s = 0.0
    for i in range(k):
        s = max(s, x[i % 2])
    return s


def running_max_times_a_number(x, k):
    s = 0.0
    for i in range(k):
        s = max(s, x[i % 2]) * 1.5
    return s


@pytest.mark.parametrize("fn", [running_max_from_zero, running_max_times_a_number])
@pytest.mark.parametrize("first", [3.0, -3.0])
@pytest.mark.parametrize("k", [1, 2, 12])
def test_a_float32_scalar_carried_as_float64_keeps_its_dtype(fn, first, k):
    converted = dy2st.to_static(fn, backend="numpy")
    for n in (k, 2 * k + 9):  # unrolled, then a rolled loop
        x = np.array([first, -1.0], np.float32)
        result = assert_like_eager(fn, x, n, converted=converted)
        assert type(result) is type(fn(x, n))


# Errors raised midway through a graph that updates an argument: eager code made its updates
# before raising, and the caller sees them.
def shift_right_past_the_end(b):
    for i in range(len(b)):
        b[i + 1] = b[i]


def copy_rows_until_one_is_negative(A, x):
    for i in range(A.shape[0]):
        if x[i] < 0:
            A[i + 5, 0] = 1.0  # out of bounds: raises on the first negative x
        A[i] = x[i]


def copy_left_until_an_early_return(x, b):
    # The early return makes the update of b functional (not in place): the graph saves b.
    for i in range(len(b)):
        if x[i] > x[i + 1]:
            continue
        if x[i] > -1.0:
            return b
        b[i] = b[1]
    return b


def update_then_use_unassigned(b, x):
    for i in range(len(b)):
        b[i] = b[i] * 2
        if x[i] > 0:
            t = i
    return t


@pytest.mark.parametrize(
    "fn, args",
    [
        (shift_right_past_the_end, (np.arange(7, dtype=np.uint8),)),
        (copy_rows_until_one_is_negative, (np.zeros((6, 3)), np.array([1.0, 2.0, -1.0, 3.0, 4.0, 5.0]))),
        (update_then_use_unassigned, (np.arange(4.0), -np.ones(4))),
        (copy_left_until_an_early_return, (-np.arange(6.0) - 2, np.arange(6, dtype=np.int8))),
    ],
)
def test_an_error_midway_leaves_the_updates_eager_code_made(fn, args):
    converted = dy2st.to_static(fn, backend="numpy")
    for _ in range(2):  # the build, then the cached graph
        assert_like_eager(fn, *args, converted=converted)


def test_a_graph_that_succeeds_after_a_failed_call_updates_in_place():
    converted = dy2st.to_static(copy_rows_until_one_is_negative, backend="numpy")
    with pytest.raises(IndexError):
        converted(np.zeros((6, 3)), np.array([1.0, -2.0, 3.0, 4.0, 5.0, 6.0]))
    A = np.zeros((6, 3))
    converted(A, np.arange(6.0))
    np.testing.assert_array_equal(A, np.repeat(np.arange(6.0)[:, None], 3, axis=1))


# A variable one path assigns a value equal to the zeros standing in for it on the other path:
# the converted function returned 0 where eager code raises UnboundLocalError.
def assigned_zero_on_one_path(x):
    if x[0] > 0:
        t = 0
    return t


def assigned_zero_in_a_loop(x):
    for i in range(len(x)):
        if x[i] > 0:
            t = i * 0.0
    return t


@pytest.mark.parametrize("fn", [assigned_zero_on_one_path, assigned_zero_in_a_loop])
def test_a_variable_assigned_zero_on_one_path_only_is_still_checked(fn):
    converted = dy2st.to_static(fn, backend="numpy")
    assert_like_eager(fn, -np.ones(4), converted=converted)
    assert_like_eager(fn, np.ones(4), converted=converted)


# An int8 NumPy scalar carried in a Python int's int64 slot wraps as int8 does.
def running_max_of_bytes_times_a_number(b, k):
    s = 0
    for i in range(k):
        s = max(s, b[i % 2]) * 3
    return s


def test_an_int8_scalar_carried_as_int64_wraps_as_int8():
    converted = dy2st.to_static(running_max_of_bytes_times_a_number, backend="numpy")
    for k in (3, 12):
        result = assert_like_eager(
            running_max_of_bytes_times_a_number, np.array([5, 1], np.int8), k, converted=converted
        )
        assert type(result) is np.int8


# A Python float a float32 slot cannot hold: the graph returned 0.10000000149 for eager's 0.1.
def add_a_float32_on_one_path(x, q):
    s = 0.1
    if q[0]:
        s = s + x[0]
    return s


def test_a_python_float_that_float32_would_round_is_refused_not_rounded():
    converted = dy2st.to_static(add_a_float32_on_one_path, backend="numpy")
    with pytest.raises(dy2st.GraphBuildError, match="Python float 0.1"):
        converted(np.ones(2, np.float32), np.array([False]))


# A value carried as float64 that eager code holds as float32 meets another float32 value: the
# loop unrolls (a rolled loop would give float64), and the result is eager's float32.
def running_max_plus_an_element(x, k):
    s = 0.0
    for i in range(k):
        s = max(s, x[i % 2]) + x[1]
    return s


def negated_on_a_path(x, b, k):
    s = 0.0
    if b[2] > b[1]:
        s = np.sqrt(abs(x[2]))
    for _ in range(k):
        s = -s
    return s


def test_operations_on_a_path_dependent_scalar_keep_eager_types():
    converted = dy2st.to_static(running_max_plus_an_element, backend="numpy")
    for first in (3.0, -5.0):
        x = np.array([first, -1.0], np.float32)
        result = assert_like_eager(running_max_plus_an_element, x, 10, converted=converted)
        assert type(result) is np.float32
    converted = dy2st.to_static(negated_on_a_path, backend="numpy")
    for b in (np.array([1, 0, 0], np.int32), np.array([0, 0, 1], np.int32)):
        for k in (0, 1, 2):
            assert_like_eager(negated_on_a_path, np.array([3.0, 1.0, 1.5]), b, np.array(k), converted=converted)


# After an early return under a tensor condition, a rolled loop in the code that follows dropped
# the kind its carried value had on entry (the branch being traced was not linked to its cond
# yet), and the function returned np.float64(0.0) where eager code returns the Python float 0.0
# (element_loops seed 99).
def negated_after_an_early_return(x, b, k):
    s = 0.0
    if b[2] > b[1]:
        s = np.sqrt(abs(x[2]))
    if k > 5:
        return s
    for _ in range(k):
        s = -s
    return s


def test_a_loop_after_an_early_return_keeps_the_kind_of_its_value():
    converted = dy2st.to_static(negated_after_an_early_return, backend="numpy")
    for b in (np.array([1, 0, 0]), np.array([0, 0, 1])):
        for k in (0, 1, 2, 9):
            assert_like_eager(
                negated_after_an_early_return, np.array([3.0, 1.0, 1.5]), b, np.array(k), converted=converted
            )


# A unary operator of a value that is a 0-d array on one path gives NumPy's scalar there
# (`-np.array(2.0)` is np.float64), as binary operators with a Python number do.
def negated_array_or_float(v, c):
    r = v if c > 0 else 0.0
    r = -r
    return r


def test_a_unary_operator_of_a_zero_d_array_on_one_path_gives_a_scalar():
    converted = dy2st.to_static(negated_array_or_float, backend="numpy")
    for c in (1, -1):
        result = assert_like_eager(negated_array_or_float, np.array(2.0), np.array(c), converted=converted)
        assert type(result) is type(negated_array_or_float(np.array(2.0), np.array(c)))
