"""Regressions for programs that crashed inside dy2st or were refused although NumPy runs them
(issue 10's second list): each now matches eager NumPy."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def lists_assigned_to_indexed_locations(x):
    a = np.zeros((3, 2))
    a[0] = [1.0, 2.0]
    a[[0, 2]] = [[1, 2], [3, 4]]
    a[1] = (x[0], x[1])
    return a


def chained_tuple_assignment(force):
    force[0] = force[-1] = 0, 0
    return force


def tuple_rows_in_a_tensor_loop(x, n):
    out = np.zeros((3, 3))
    i = 0
    while i < n:
        out[i] = (x[i], x[i] * 2, 1.0)
        i += 1
    return out


@pytest.mark.parametrize(
    "fn, args",
    [
        (lists_assigned_to_indexed_locations, (np.arange(3.0),)),
        (chained_tuple_assignment, (np.ones((4, 2)),)),
        (tuple_rows_in_a_tensor_loop, (np.arange(3.0), np.int64(3))),
    ],
)
def test_sequences_assigned_to_indexed_locations(fn, args):
    assert_like_eager(fn, *args)


def formatted_prints(x):
    print(f"sum={x.sum()}")
    print("max={}".format(x.max()), "n=%d" % x.shape[0], f"{x.mean():.2f}")  # noqa: UP031, UP032 (the user's style)
    return x


def test_f_strings_and_format_print_the_values_of_each_run(capsys):
    static = dy2st.to_static(formatted_prints)
    for x in (np.ones(3), np.arange(3.0)):
        formatted_prints(x)
        eager = capsys.readouterr().out
        static(x)
        assert capsys.readouterr().out == eager


def returns_a_formatted_string(x):
    return f"{x.sum()}"


def test_a_formatted_string_cannot_be_returned():
    with pytest.raises(dy2st.GraphBuildError, match="string formatted from a tensor"):
        dy2st.to_static(returns_a_formatted_string)(np.ones(2))


def early_returns_of_a_flag_around_an_inner_loop(x, n, k, p):
    # Differential generator, search_logic seed 70239 (changing sizes; the first call, so not
    # about symbolic sizes): the kind code of `retval` that an inner tensor loop carried was
    # attached to the value from before the loop, which the other branch of the enclosing `if`
    # also returns, out of the code's scope there (an internal KeyError).
    cnt = 0
    best = x[0]
    found = False
    for i in range(3):
        for _ in range(3):
            if x[0] > 0:
                break
            found = best > 1.0
        if not cnt > 1:
            cnt += 1
            if found:
                return (best, found)
        else:
            if n > 5:
                break
            for _ in range(k):
                if i > p:
                    return found
    return (best, found)


@pytest.mark.parametrize("first", [-1.5, 1.5])
@pytest.mark.parametrize("n, k", [(3, 2), (7, 1), (3, 0)])
def test_a_loop_carried_kind_code_stays_in_its_scope(first, n, k):
    x = np.array([first, -0.5, 0.5, -0.5, 1.5, -0.0])
    # p = 2: `return found` (a bool where the other returns are pairs, a refusal) is never staged.
    assert_like_eager(early_returns_of_a_flag_around_an_inner_loop, x, np.array(n), np.array(k), 2)
