"""Loops over a Python ``range`` roll into one ``while_loop`` where the body allows it.

The graph of ``for t in range(T)`` no longer grows with ``T``; bodies that need the counter as a
Python int (a Python list indexed by it, a growing list, a prefix slice ``x[:i]``) or whose results
code after the loop needs as Python values are unrolled as before. Every case compares with eager
NumPy (values, dtypes, result types, final argument state), and the graph's notes say which loops
were rolled and why the others were not."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.cli import main as cli_main
from dy2st.runtime.control_flow.rolling import UNROLL_AT_MOST
from eager_parity import assert_like_eager


def static_numbers(fn, args):
    """``fn`` converted with every Python number a constant: the trip counts these tests pass are
    then Python ranges, which the rolling policy decides about (as a graph input, a trip count
    is a loop over a tensor range)."""
    return dy2st.to_static(fn, static_argnums=tuple(range(len(args))))


def op_count(fn, *args) -> int:
    return sum(1 for _ in static_numbers(fn, args).graph(*args).walk())


def notes(fn, *args) -> list[str]:
    return static_numbers(fn, args).graph(*args).notes


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def test_a_time_stepped_stencil_builds_the_same_graph_for_any_trip_count():
    u = np.sin(np.linspace(0.0, 3.0, 40))
    assert op_count(heat, u.copy(), 10) == op_count(heat, u.copy(), 1000)
    assert notes(heat, u.copy(), 1000) == [
        f"loop at test_rolled_loops.py:{heat.__code__.co_firstlineno + 1}:5: rolled into a while_loop (1000 iterations)"
    ]
    for steps in (5, 10, 1000):
        assert_like_eager(heat, u.copy(), steps)


def relax(u, steps):
    for _ in range(steps):
        u = u.copy()
        u[1:] = 0.5 * u[1:] + 0.5 * u[:-1]
    return u


@pytest.mark.parametrize("steps", [UNROLL_AT_MOST, UNROLL_AT_MOST + 1, 50])
def test_a_loop_rebinding_its_array_rolls_beyond_the_unroll_limit(steps):
    u = np.arange(12.0)
    assert_like_eager(relax, u, steps)
    (note,) = notes(relax, u, steps)
    if steps <= UNROLL_AT_MOST:
        assert f"unrolled ({steps} iterations): loops of at most {UNROLL_AT_MOST} iterations stay unrolled" in note
    else:
        assert f"rolled into a while_loop ({steps} iterations)" in note


def prefix_sums(x):
    out = np.zeros_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] + x[i]
    return out


def python_numbers(x):
    total = 0
    s = 0.0
    big = 2**60
    for i in range(len(x)):
        total += i
        s += i * 0.5
        big = big * 4
    return total, s, big, i


def accumulate_array_values(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * i
    return s


def stepped_and_reversed(x):
    s = 0.0
    for i in range(len(x) - 1, 0, -2):
        s += x[i]
    for j in range(2, len(x), 3):
        x[j] = -x[j]
    return s, x


def even_odd(x):
    for i in range(len(x)):
        if i % 2 == 0:
            x[i] = -x[i]
    return x


def search(x, threshold):
    found = -1
    for i in range(len(x)):
        if x[i] > threshold:
            found = i
            break
    return found, i


def search_else(x):
    count = 0
    for i in range(len(x)):
        if x[i] < -5.0:
            break
    else:
        count += 10
    return count


def early_return(x):
    for i in range(len(x)):
        if x[i] > 2.0:
            return x[i] * 2
    return x.sum()


def nested(a, x):
    for i in range(a.shape[0]):
        for j in range(i):
            a[i, j % a.shape[1]] += x[j]
    return a


def nested_python_bounds(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = a[i, j] * (i + 1) + j
    return a


CASES = [
    (prefix_sums, lambda: (np.arange(1.0, 9.0),)),
    (python_numbers, lambda: (np.zeros(8),)),
    (accumulate_array_values, lambda: (np.linspace(-1.0, 1.0, 9, dtype=np.float32),)),
    (stepped_and_reversed, lambda: (np.arange(10.0),)),
    (even_odd, lambda: (np.arange(7.0),)),
    (search, lambda: (np.array([0.0, 1.0, 5.0, 2.0, 7.0, 1.0]), 4.0)),
    (search, lambda: (np.array([0.0, 1.0, 5.0, 2.0, 7.0, 1.0]), 9.0)),
    (search_else, lambda: (np.arange(6.0),)),
    (search_else, lambda: (np.array([0.0, 1.0, -6.0, 2.0, 7.0, 1.0]),)),
    (early_return, lambda: (np.array([0.0, 1.0, 5.0, 2.0, 7.0, 1.0]),)),
    (early_return, lambda: (np.zeros(6),)),
    (nested, lambda: (np.zeros((6, 4)), np.arange(6.0))),
    (nested_python_bounds, lambda: (np.ones((5, 6)),)),
]


@pytest.mark.parametrize("fn, make_args", CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_rolled_loops_match_eager(fn, make_args):
    assert_like_eager(fn, *make_args())
    assert any("rolled into a while_loop" in note for note in notes(fn, *make_args()))


def test_a_python_range_bound_of_an_argument_specializes_the_graph_but_not_its_size():
    assert op_count(prefix_sums, np.arange(6.0)) == op_count(prefix_sums, np.arange(600.0))


# --- loops that must stay unrolled -----------------------------------------------------------------
def python_list_indexed(x):
    coef = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    s = 0.0
    for i in range(6):
        s += coef[i] * x[i]
    return s


def list_of_arrays_indexed(x):
    rows = [x * k for k in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]
    total = np.zeros_like(x)
    for i in range(6):
        total = total + rows[i]
    return total


def grows_a_list(x):
    parts = []
    for i in range(6):
        parts.append(x[i] * 2)
    return np.stack(parts)


def prefix_slices(x):
    out = np.zeros(6)
    for i in range(1, 6):
        out[i] = x[:i].sum()
    return out


def count_used_as_a_shape(x):
    m = 0
    for _ in range(6):
        m += 1
    return np.zeros(m) + x[:m]


@pytest.mark.parametrize(
    "fn, why",
    [
        (python_list_indexed, "its body needs the counter or a value as a Python value"),
        (list_of_arrays_indexed, "its body needs the counter or a value as a Python value"),
        (grows_a_list, "'parts' is a Python list that this tensor loop changes in place"),
        (count_used_as_a_shape, "code after the loop needs a value it computes as a Python value"),
    ],
)
def test_bodies_needing_the_counter_as_a_python_int_are_unrolled_with_the_reason(fn, why):
    x = np.arange(8.0)
    assert_like_eager(fn, x)
    (note,) = notes(fn, x)
    assert "unrolled (" in note and why in note


def test_a_genuine_error_in_a_rolled_body_is_the_error_unrolled_code_raises():
    def out_of_range(x):
        for i in range(10):
            x[i] = 1.0
        return x

    with pytest.raises(IndexError):
        out_of_range(np.zeros(8))
    with pytest.raises(IndexError):
        dy2st.to_static(out_of_range)(np.zeros(8))


def heat_100_steps(u):
    return heat(u, 100)


def test_dump_prints_which_loops_were_rolled(capsys):
    assert cli_main(["dump", f"{__file__}::heat_100_steps", "--arg", "u=f64[16]", "--ir"]) == 0
    out = capsys.readouterr().out
    assert "# loop at test_rolled_loops.py:" in out and "rolled into a while_loop (100 iterations)" in out
    assert "while_loop" in out


LOG: list = []


def logs_in_a_tensor_loop(x, k):
    for i in range(k):
        LOG.append(i)
        x[i] = 1.0
    return x


def test_a_tensor_loop_changing_a_global_list_is_refused_and_leaves_it_unchanged():
    LOG.clear()
    with pytest.raises(dy2st.GraphBuildError, match="'LOG' is a Python list that this tensor loop changes"):
        dy2st.to_static(logs_in_a_tensor_loop)(np.zeros(4), np.array(3))
    assert LOG == []


def logs_in_a_python_range_loop(x):
    for i in range(8):
        LOG.append(i)
        x[i] = i
    return x


def test_a_rolled_attempt_that_fails_leaves_no_trace_in_global_containers():
    LOG.clear()
    assert_like_eager(logs_in_a_python_range_loop, np.zeros(8))
    LOG.clear()
    dy2st.to_static(logs_in_a_python_range_loop)(np.zeros(8))
    assert LOG == list(range(8))  # the build ran the loop unrolled, once; the rolled try left nothing


def test_slices_bounded_by_the_counter_roll():
    x = np.arange(8.0)
    assert_like_eager(prefix_slices, x)
    (note,) = notes(prefix_slices, x)
    assert "rolled into a while_loop" in note


# --- loops over the rows of a tensor of static length -------------------------------------------
def doubled_rows(x):
    out = []
    for v in x:
        out.append(v * 2)
    return np.array(out), sum(out)


def weighted_rows(A):
    rows = []
    for i, row in enumerate(A):
        rows.append(row * i)
    return np.vstack(rows)


def int_then_float(xs):
    s = 0  # a Python int that the first iteration makes a NumPy float
    for v in xs:
        if v < 0:
            continue
        s = s + v
    return s


def rows_of_a_pair(x, y):
    pairs = []
    for a, b in zip(x, y):
        pairs.append(a * b)
    return pairs


@pytest.mark.parametrize(
    "fn, args",
    [
        (doubled_rows, (np.array([1.0, -2.0, 3.5]),)),
        (weighted_rows, (np.arange(12.0).reshape(3, 4),)),
        (int_then_float, (np.array([1.0, -2.0, 3.5, 0.25, -1.0, 2.0]),)),
        (rows_of_a_pair, (np.arange(5.0), np.ones(7))),
    ],
)
def test_a_loop_over_rows_whose_body_grows_a_list_unrolls_over_the_rows(fn, args):
    assert_like_eager(fn, *args)
    (note,) = notes(fn, *args)
    assert "unrolled (" in note


def sums_rows(A):
    total = np.zeros(A.shape[1])
    for row in A:
        total = total + row
    return total


def test_a_loop_over_rows_that_rolls_stays_one_while_loop_without_a_note():
    A = np.arange(40.0).reshape(10, 4)
    assert_like_eager(sums_rows, A)
    graph = dy2st.to_static(sums_rows).graph(A)
    assert any(op.name == "while_loop" for op in graph.walk()) and graph.notes == []


def grows_a_list_over_many_rows(x):
    out = []
    for v in x:
        out.append(v)
    return out


def test_a_failing_loop_over_many_rows_raises_without_unrolling_them():
    with pytest.raises(dy2st.GraphBuildError, match="'out' is a Python list that this tensor loop changes"):
        dy2st.to_static(grows_a_list_over_many_rows)(np.zeros(5000))
