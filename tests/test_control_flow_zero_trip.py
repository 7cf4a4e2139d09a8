"""Variables first assigned inside a tensor loop: after zero iterations a use raises, as in Python.

Eager Python raises ``UnboundLocalError`` when such a variable is used after a loop that never ran;
the converted function must raise too (at run time, at the line of the use) instead of returning
the zeros the staged loop starts the variable from. A use on a path that does not run (an untaken
branch) must not raise.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import dy2st
from dy2st.runtime.control_flow.assigned import UnassignedVariableError
from eager_parity import assert_like_eager
from test_control_flow_if import assert_same, check_same_graph, line_of, op_names

THIS_FILE = os.path.basename(__file__)
X = np.linspace(-1.0, 2.0, 6).astype(np.float32)


def unassigned_message(name: str, fn, use: str, loop: str) -> str:
    return (
        f"{THIS_FILE}:{line_of(fn, use)}:"
        f"{line_of_column(fn, use)}: error: '{name}' is used here but was never assigned: the loop at line "
        f"{line_of(fn, loop)} ran zero times (Python raises UnboundLocalError)"
    )


def line_of_column(fn, text: str) -> int:
    """The 1-based column where ``text`` starts on its line (errors point at the expression)."""
    import inspect

    for line in inspect.getsourcelines(fn)[0]:
        if text in line:
            return line.index(text) + 1
    raise AssertionError(text)


def check_raises_like_eager(fn, args, message_start: str) -> None:
    with pytest.raises(UnboundLocalError):
        fn(*args)
    with pytest.raises(UnassignedVariableError) as caught:
        dy2st.to_static(fn)(*args)
    assert message_start in str(caught.value), str(caught.value)


# --- while ---------------------------------------------------------------------------------------
def assigned_in_while(x, n):
    i = 0
    while i < n:
        y = x * (i + 1)
        i += 1
    return y + 1


def test_while_that_runs_gives_the_eager_result_through_one_graph():
    check_same_graph(assigned_in_while, (X, np.array(1)), (X, np.array(3)))


def test_while_that_runs_zero_times_raises_at_the_use():
    message = unassigned_message("y", assigned_in_while, "y + 1", "while i < n")
    check_raises_like_eager(assigned_in_while, (X, np.array(0)), message)


def test_the_same_graph_raises_or_not_depending_on_the_trip_count():
    static = dy2st.to_static(assigned_in_while)
    assert_same(static(X, np.array(2)), assigned_in_while(X, np.array(2)))
    with pytest.raises(UnassignedVariableError):
        static(X, np.array(0))
    assert_same(static(X, np.array(4)), assigned_in_while(X, np.array(4)))
    assert static.num_graphs == 1


def used_twice(x, n):
    i = 0
    while i < n:
        y = x - i
        i += 1
    z = y * 2
    return z + y


def test_uses_in_one_block_share_one_check():
    assert op_names(dy2st.to_static(used_twice), X, np.array(2)).count("check_assigned") == 1
    check_same_graph(used_twice, (X, np.array(2)))
    check_raises_like_eager(used_twice, (X, np.array(0)), unassigned_message("y", used_twice, "y * 2", "while i"))


# --- for over a tensor range -----------------------------------------------------------------------
def assigned_in_for(x, n):
    for k in range(n):
        y = x * k
    return y - 1


def target_used_after(x, n):
    for k in range(n):
        x = x + 1
    return x * k


def test_for_over_a_tensor_range():
    check_same_graph(assigned_in_for, (X, np.array(1)), (X, np.array(4)))
    check_raises_like_eager(
        assigned_in_for, (X, np.array(0)), unassigned_message("y", assigned_in_for, "y - 1", "for k")
    )


def test_the_loop_target_of_a_tensor_for_is_checked_too():
    check_same_graph(target_used_after, (X, np.array(1)), (X, np.array(3)))
    check_raises_like_eager(
        target_used_after, (X, np.array(0)), unassigned_message("k", target_used_after, "x * k", "for k")
    )


def tuple_assigned_in_loop(x, n):
    for k in range(n):
        pair = (x + k, x.sum())
    first, total = pair
    return first * total


def test_every_leaf_of_a_tuple_is_checked():
    check_same_graph(tuple_assigned_in_loop, (X, np.array(2)))
    check_raises_like_eager(
        tuple_assigned_in_loop,
        (X, np.array(0)),
        unassigned_message("pair", tuple_assigned_in_loop, "first * total", "for k"),
    )


def returned_directly(x, n):
    for k in range(n):
        y = x * k
    return y


def test_returning_the_variable_is_a_use_reported_at_the_call():
    check_same_graph(returned_directly, (X, np.array(2)))
    static = dy2st.to_static(returned_directly)
    with pytest.raises(UnassignedVariableError) as caught:
        static(X, np.array(0))  # the line of the call: the function has returned when it is checked
    call_line = caught.traceback[0].lineno + 1
    assert (
        f"{THIS_FILE}:{call_line}:9: error: the function returns 'y', which was never assigned: the loop at line "
        f"{line_of(returned_directly, 'for k')} ran zero times (Python raises UnboundLocalError)"
    ) in str(caught.value)


# --- uses on paths that do not run -------------------------------------------------------------------
def used_in_one_branch(x, n, flag):
    for k in range(n):
        y = x * k
    if flag > 0:
        out = y * 2
    else:
        out = x
    return out


def test_a_use_in_an_untaken_branch_does_not_raise():
    static = check_same_graph(used_in_one_branch, (X, np.array(0), np.array(-1.0)), (X, np.array(3), np.array(1.0)))
    message = unassigned_message("y", used_in_one_branch, "y * 2", "for k")
    with pytest.raises(UnassignedVariableError) as caught:
        static(X, np.array(0), np.array(1.0))
    assert message in str(caught.value)
    with pytest.raises(UnboundLocalError):
        used_in_one_branch(X, np.array(0), np.array(1.0))


def never_used_after(x, n):
    for k in range(n):
        y = x * k
        x = x + y
    return x


def test_a_variable_not_used_after_the_loop_needs_no_check():
    static = check_same_graph(never_used_after, (X, np.array(0)), (X, np.array(2)))
    assert "check_assigned" not in op_names(static, X, np.array(2))


def assigned_before(x, n):
    y = x
    for k in range(n):
        y = x * k
    return y


def test_a_variable_assigned_before_the_loop_is_not_checked():
    static = check_same_graph(assigned_before, (X, np.array(0)), (X, np.array(2)))
    assert "check_assigned" not in op_names(static, X, np.array(2))


# --- the cond analogue: checked where it is used, like after a loop ------------------------------------
def one_sided_if(x, t):
    if t > 0:
        y = x * 2
    return y


def one_sided_if_then_used(x, t):
    if t > 0:
        y = x * 2
    z = y + 1.0
    return z


def assigned_in_a_branch_inside_a_loop(x, n, target):
    for i in range(n):
        if x[i] == target:
            found = x[i] * 10
    return found


def test_a_variable_defined_in_one_branch_of_a_tensor_if_is_checked_at_its_use():
    assert np.array_equal(dy2st.to_static(one_sided_if)(X, np.array(1.0)), one_sided_if(X, np.array(1.0)))
    check_raises_like_eager(
        one_sided_if_then_used,
        (X, np.array(-1.0)),
        f"{THIS_FILE}:{line_of(one_sided_if_then_used, 'z = y + 1.0')}:9: error: 'y' is used here but was never "
        f"assigned: it is not assigned on the path the 'if' at line {line_of(one_sided_if_then_used, 'if t > 0')} took",
    )


def test_a_loop_that_assigns_a_variable_in_a_branch_only_carries_the_branch_flag():
    args = (np.arange(4.0), np.array(4), np.array(2.0))
    assert dy2st.to_static(assigned_in_a_branch_inside_a_loop)(*args) == assigned_in_a_branch_inside_a_loop(*args)
    check_raises_like_eager(
        assigned_in_a_branch_inside_a_loop,
        (np.arange(4.0), np.array(4), np.array(9.0)),
        "was never assigned: no iteration of the loop at line "
        f"{line_of(assigned_in_a_branch_inside_a_loop, 'for i in range(n)')} assigned it",
    )


# --- literal ranges that are never empty ------------------------------------------------------------
def target_of_literal_range_in_one_branch(x, s):
    for k in range(2):
        if x[0] > 0:
            s = s + 1.0
        else:
            for i in range(3):
                s = s + 1.0
            s = s + i
    return s


def test_the_target_of_a_non_empty_literal_range_is_defined_after_it():
    check_same_graph(
        target_of_literal_range_in_one_branch,
        (np.array([-1.0, 2.0]), np.array(0.0)),
        (np.array([1.0, 2.0]), np.array(0.5)),
    )


def target_of_empty_literal_range_in_one_branch(x, s):
    for k in range(2):
        if x[0] > 0:
            s = s + 1.0
        else:
            for i in range(0):
                s = s + 1.0
            s = s + i
    return s


def test_a_genuinely_one_sided_definition_is_still_an_error():
    with pytest.raises(dy2st.GraphBuildError, match="'i' is used here but is not defined on every path"):
        dy2st.to_static(target_of_empty_literal_range_in_one_branch)(np.array([-1.0, 2.0]), np.array(0.0))


# --- a second loop over a variable the first may not have assigned ---------------------------------
def rebound_in_second_loop(x, n, m):
    for k in range(n):
        y = x * k
    for j in range(m):
        y = x + j
    return y * 1


def read_in_second_loop(x, n, m):
    for k in range(n):
        y = x * k
    for j in range(m):
        y = y + j
    return y * 1


@pytest.mark.parametrize("fn", [rebound_in_second_loop, read_in_second_loop])
def test_a_second_loop_keeps_the_first_loops_check(fn):
    static = dy2st.to_static(fn)
    for n, m in ((2, 3), (0, 3), (2, 0), (0, 0)):
        args = (X, np.array(n), np.array(m))
        try:
            want = fn(*args)
        except UnboundLocalError:
            with pytest.raises(UnassignedVariableError):
                static(*args)
        else:
            assert_same(static(*args), want)
    assert static.num_graphs == 1


def first_match_or_minus_one(x, target):
    for i in range(len(x)):
        if x[i] == target:
            found = i
            break
    else:
        found = -1
    return found


@pytest.mark.parametrize("target", [3.0, 7.0])
def test_a_for_else_search_loop_under_a_tensor_condition_matches_eager(target):
    assert_like_eager(first_match_or_minus_one, np.arange(5.0), np.array(target))


def read_after_a_later_loop_assigned_it(x, n, m):
    for i in range(n):
        y = x * i
    s = 0.0
    for j in range(m):
        if j > 0:
            s = s + y.sum()  # the first loop may not have assigned y, an earlier iteration did
        y = x
    return s


@pytest.mark.parametrize("n", [0, 2])
def test_a_later_loop_that_assigns_a_variable_carries_its_flag(n):
    assert_like_eager(read_after_a_later_loop_assigned_it, np.ones(3), np.array(n), np.array(2))


def sum_rows(X):
    s = np.zeros(X.shape[1])
    for row in X:
        s = s + row * 2
    return s


def zip_enumerate(xs, ws):
    total = 0
    for k, (x, w) in enumerate(zip(xs, ws)):
        total = total + k * x * w
    return total


def first_element(x):
    return x[0]


@pytest.mark.parametrize(
    "fn, args",
    [
        (sum_rows, (np.zeros((0, 3)),)),
        (sum_rows, (np.ones((2, 3)),)),
        (zip_enumerate, (np.zeros(0), np.zeros(0))),
        (zip_enumerate, (np.arange(3.0), np.ones(3))),
    ],
)
def test_a_tensor_loop_over_an_empty_array_builds_and_runs_zero_times(fn, args):
    assert_like_eager(fn, *args)


def test_indexing_an_empty_array_where_it_always_runs_is_numpys_index_error():
    with pytest.raises(IndexError):
        dy2st.to_static(first_element)(np.zeros(0))
