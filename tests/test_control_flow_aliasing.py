"""Two names for one array across tensor loops and branches: same results as eager NumPy.

Regression guard for "``x = a; while x > 1: x = x - a*0.25`` returned 0.949 where eager gives 1.0
(inside the loop, ``a`` read the carried ``x``)". Each function runs eagerly and converted, first
call and repeated calls with different values, positionally (the fast call path) and by keyword;
results and the caller's arrays (for in-place updates) must match.
"""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager
from test_control_flow_if import assert_same


def check_calls(fn, calls: list[dict]) -> None:
    """Every call by position and by keyword on one converted function matches eager NumPy,
    including what the call does to the caller's arrays."""
    static = dy2st.to_static(fn)
    for kwargs in calls:
        for by_keyword in (False, True):
            eager_args = {k: np.copy(v) for k, v in kwargs.items()}
            static_args = {k: np.copy(v) for k, v in kwargs.items()}
            want = fn(**eager_args)
            got = static(**static_args) if by_keyword else static(*static_args.values())
            assert_same(got, want)
            for name in kwargs:
                assert_same(static_args[name], eager_args[name])
    assert static.num_graphs == 1


# --- loop-carried variable bound to an argument ------------------------------------------------------
def shrink_by_quarters(a):
    x = a
    while x > 1:
        x = x - a * 0.25
    return x


def shrink_vector(a, t):
    x = a
    while np.sum(x) > t:
        x = x - a * 0.25
    return x, a


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_0d_alias_of_a_loop_carried_variable_keeps_the_original_value(dtype):
    calls = [{"a": np.array(v, dtype)} for v in (1.0, 2.0, 0.5, 3.7, 2.0)]
    check_calls(shrink_by_quarters, calls)


def test_1d_alias_of_a_loop_carried_variable_keeps_the_original_value():
    a1, a2 = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.25, 4.0])
    check_calls(
        shrink_vector, [{"a": a1, "t": np.array(1.0)}, {"a": a2, "t": np.array(2.0)}, {"a": a1, "t": np.array(9.0)}]
    )


def counted_alias(a, n):
    x = a
    for i in range(n):
        x = x * 0.5 + a
    return x + a


def test_alias_in_a_tensor_for_loop():
    a = np.array([1.0, -2.0])
    check_calls(counted_alias, [{"a": a, "n": np.array(k)} for k in (0, 1, 4, 2)])


# --- in-place updates through one name ---------------------------------------------------------------
def update_alias_in_place(a, n):
    b = a
    i = 0
    while i < n:
        b += 1.0
        i += 1
    return a * 2, b


def update_argument_read_alias(a, n):
    b = a
    i = 0
    while i < n:
        a[0] = a[0] + b[1]
        i += 1
    return b.copy()


def update_copy_not_alias(a, n):
    x = a.copy()
    i = 0
    while i < n:
        x[1] = x[1] + a[1]
        i += 1
    return x, a


@pytest.mark.parametrize("fn", [update_alias_in_place, update_argument_read_alias, update_copy_not_alias])
def test_in_place_updates_in_a_loop_are_seen_through_every_name(fn):
    a1, a2 = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 0.0])
    check_calls(fn, [{"a": a1, "n": np.array(2)}, {"a": a2, "n": np.array(0)}, {"a": a1, "n": np.array(3)}])


def update_0d_alias_in_place(a, n):
    b = a
    i = 0
    while i < n:
        b += 0.5
        i += 1
    return a + 0, b + 0


def test_in_place_update_of_a_0d_argument_through_an_alias():
    check_calls(
        update_0d_alias_in_place, [{"a": np.array(v), "n": np.array(k)} for v, k in ((1.0, 2), (3.0, 0), (-1.0, 5))]
    )


# --- branch outputs ----------------------------------------------------------------------------------
def branch_alias(a, t):
    y = a
    if t > 0:
        y = y * 2 - a
    else:
        y = a - y * 3
    return y, a


def branch_in_place_alias(a, t):
    b = a
    if t > 0:
        b += 1.0
    else:
        a *= 2.0
    return a + b


def loop_of_branch_alias(a, n):
    x = a
    i = 0
    while i < n:
        if np.sum(x) > 0:
            x = x - a
        else:
            x = x + a * 0.5
        i += 1
    return x, a


@pytest.mark.parametrize("fn", [branch_alias, branch_in_place_alias])
def test_alias_of_a_branch_output(fn):
    calls = [{"a": a, "t": np.array(t)} for a in (np.array(1.5), np.array([1.0, -2.0])[:1].copy()) for t in (1.0, -1.0)]
    static = dy2st.to_static(fn)
    for kwargs in calls:
        eager_args = {k: np.copy(v) for k, v in kwargs.items()}
        static_args = {k: np.copy(v) for k, v in kwargs.items()}
        assert_same(static(**static_args), fn(**eager_args))
        assert_same(static_args["a"], eager_args["a"])


def test_alias_inside_a_branch_inside_a_loop():
    a1, a2 = np.array([1.0, 2.0]), np.array([-3.0, 1.0])
    check_calls(
        loop_of_branch_alias, [{"a": a1, "n": np.array(3)}, {"a": a2, "n": np.array(4)}, {"a": a1, "n": np.array(0)}]
    )


def update_through_one_of_two_carried_names(x, n):
    a = x.copy()
    b = a
    i = 0
    while i < n:
        a[0] += 1.0
        b = b * 1.0
        i += 1
    return a, b


def test_an_in_place_update_through_one_of_two_carried_names_is_refused():
    # Both names are carried, each as its own value: the update through 'a' would be lost for 'b'.
    with pytest.raises(dy2st.GraphBuildError) as caught:
        dy2st.to_static(update_through_one_of_two_carried_names)(np.ones(3), np.array(3))
    text = str(caught.value)
    assert "'a' and 'b' are the same array, and the loop body updates it in place through 'a'" in text
    assert "b = a.copy()" in text


def update_then_rebind_local(x, n):
    v = x.copy()
    w = v  # eager: w sees the first iteration's v[0] = 5, and nothing after the rebinding
    i = 0
    while i < n:
        v[0] = 5.0
        v = v * 2.0
        i += 1
    return v, w


def update_then_rebind_argument(v, n):
    i = 0
    while i < n:
        v[0] = 5.0
        v = v * 2.0
        i += 1
    return v


def update_only_local(x, n):
    v = x.copy()
    w = v
    i = 0
    while i < n:
        v[0] += 1.0
        i += 1
    return v, w


@pytest.mark.parametrize(
    "fn, whose",
    [
        (update_then_rebind_local, "that array"),
        (update_then_rebind_argument, "the caller's array"),
    ],
)
def test_update_in_place_then_rebind_in_a_tensor_loop_is_refused(fn, whose):
    with pytest.raises(dy2st.GraphBuildError) as caught:
        dy2st.to_static(fn)(np.ones(3), np.array(2))
    text = str(caught.value)
    assert "'v' names an array from before the loop that the loop body both updates in place and rebinds" in text
    assert f"only the first iteration would update {whose}" in text


def test_update_in_place_only_is_seen_through_every_name():
    static = dy2st.to_static(update_only_local)
    for n in (0, 3):
        got_v, got_w = static(np.ones(3), np.array(n))
        want_v, want_w = update_only_local(np.ones(3), np.array(n))
        np.testing.assert_array_equal(got_v, want_v)
        np.testing.assert_array_equal(got_w, want_w)
    assert static.num_graphs == 1


# --- fresh local arrays: the first iteration's in-place update is unobservable -----------------
def accumulate_then_rescale(x, n):
    acc = np.zeros(1)
    for i in range(n):
        acc += x[i]
        acc = acc / 2
    return acc


def normalise_rows_in_place_then_rebind(X, n):
    row = np.ones(X.shape[1])
    for i in range(n):
        row *= X[i]
        row = row / np.abs(row).max()
    row += 1.0  # after the loop: the last fresh array (or the ones array after zero trips)
    return row


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_fresh_local_array_may_be_updated_in_place_and_rebound_in_a_tensor_loop(n):
    assert_like_eager(accumulate_then_rescale, np.arange(4.0), np.array(n))
    assert_like_eager(normalise_rows_in_place_then_rebind, np.arange(1.0, 13.0).reshape(4, 3), np.array(n))


# --- identity through a tensor if ------------------------------------------------------------------
def one_array_two_names_in_both_branches(c):
    if c > 0:
        a = np.zeros(3)
        b = a
    else:
        a = np.ones(3)
        b = a
    a += 1
    return b


def argument_on_one_path_then_updated(x, c):
    out = x
    if c > 0:
        out = x.copy()
    out[0] = 5.0
    return out


def argument_before_a_loop_that_may_not_run(x, n):
    acc = x
    for _ in range(n):
        acc = acc * 2
    acc += 1
    return acc


@pytest.mark.parametrize("c", [0, 1])
def test_two_names_for_one_array_on_every_path_stay_one_array(c):
    assert_like_eager(one_array_two_names_in_both_branches, np.array(c))


@pytest.mark.parametrize(
    ("fn", "args"),
    [
        (argument_on_one_path_then_updated, (np.zeros(3), np.array(0))),
        (argument_before_a_loop_that_may_not_run, (np.ones(2), np.array(0))),
    ],
)
def test_updating_a_value_that_is_the_callers_array_on_some_paths_is_refused(fn, args):
    # Eager code updates the caller's array on one path only; a graph cannot follow object
    # identity per path, so it refuses rather than update the wrong array.
    with pytest.raises(dy2st.GraphBuildError, match="may share memory with another one"):
        dy2st.to_static(fn)(*args)


def argument_updated_then_rebound_in_an_inner_loop(x, v, k):
    for _ in range(k):
        for _ in range(k):
            v += x[3, 0]
            v = x[0]


def fresh_array_updated_then_rebound_in_an_inner_loop(x, k):
    v = np.zeros(3)
    for _ in range(k):
        for _ in range(k):
            v += x[3, 0]
            v = v * 2
    return v


def test_an_inner_loop_sees_that_the_outer_loops_variable_starts_as_the_callers_array():
    # In the first outer iteration v is the caller's array: the inner loop's first update
    # reaches the caller in eager code, so it is refused (it was silently dropped).
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(dy2st.GraphBuildError, match="the loop body both updates in place and rebinds"):
        dy2st.to_static(argument_updated_then_rebound_in_an_inner_loop)(x, np.ones(3), np.array(2))
    assert_like_eager(fresh_array_updated_then_rebound_in_an_inner_loop, x, np.array(2))
