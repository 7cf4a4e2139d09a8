"""Double buffering: a loop that writes into one buffer and swaps the names rolls into one loop.

``a, b = b, a`` at the end of a stencil's step used to make the loop unroll (a graph per trip
count) or, for a tensor ``while``, be refused. Such loops now roll: the loop carries the two
arrays and a counter of its iterations modulo the cycle's length, each iteration updates its
buffer in place, and after the loop each of the caller's arrays takes the contents eager code
leaves in it, and the returned variable is the very array object eager code returns (the
caller's ``a`` after an even number of steps, ``b`` after an odd one). Every case compares with
eager NumPy: values, dtypes, the final contents of every argument, and which argument object
(if any) each result is.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import dy2st
from eager_parity import same_value

STEPS = (0, 1, 2, 3, 5, 6, 10, 11)
BACKENDS = ["numpy", "compiled"]


# --- the functions, as users write them ------------------------------------------------------------
def jacobi(steps, a, b):
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a


def jacobi_with_a_temporary(steps, a, b):
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        tmp = a
        a = b
        b = tmp
    return a


def three_buffers(steps, a, b, c):
    for t in range(steps):
        c[1:-1] = (a[1:-1] + b[:-2] + b[2:]) / 3
        a, b, c = b, c, a
    return a


def own_empty_buffer(steps, a):
    b = np.empty_like(a)
    b[0], b[-1] = a[0], a[-1]
    for t in range(steps):
        b[1:-1] = (a[:-2] + a[2:]) / 2
        a, b = b, a
    return a


def own_zeros_buffer(steps, a):
    b = np.zeros_like(a)
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a


def heat_2d(steps, a, b):
    for t in range(steps):
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a, b = b, a
    return a


def element_loops(steps, a, b):
    n = a.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        a, b = b, a
    return a


def inner_time_steps(steps, a, b):
    for cycle in range(steps):
        for t in range(5):
            b[1:-1] = 0.5 * (a[:-2] + a[2:])
            a, b = b, a
        a[0] += 1.0
    return a


def both_returned(steps, a, b):
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    return a, b


def updated_after_the_loop(steps, a, b):
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    a[0] = -1.0
    b += 1.0
    return a, b.sum()


def converge(a, b, tol):
    err = np.abs(a).max()
    while err > tol:
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        err = np.abs(b - a).max()
        a, b = b, a
    return a, err


def read_after_an_update_through_another_name(a, b, n):
    first = a
    k = np.array(0)
    while k < n:
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
        k += 1
    first[0] = 5.0
    return a.sum()


def vector(n=12, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).random(n).astype(dtype)


CASES = {
    "jacobi": (jacobi, lambda: (vector(), vector(seed=1))),
    "temporary": (jacobi_with_a_temporary, lambda: (vector(), vector(seed=1))),
    "three": (three_buffers, lambda: (vector(), vector(seed=1), vector(seed=2))),
    "own_empty": (own_empty_buffer, lambda: (vector(dtype=np.float32),)),
    "own_zeros": (own_zeros_buffer, lambda: (vector(),)),
    "heat_2d": (heat_2d, lambda: (vector(30).reshape(5, 6), vector(30, seed=1).reshape(5, 6))),
    "element_loops": (element_loops, lambda: (vector(), vector(seed=1))),
    "both": (both_returned, lambda: (vector(), vector(seed=1))),
    "nested": (inner_time_steps, lambda: (vector(), vector(seed=1))),
    "updated_after": (updated_after_the_loop, lambda: (vector(), vector(seed=1))),
}


# --- helpers ------------------------------------------------------------------------------------------
def converted(fn, backend, **options):
    if backend == "compiled":
        pytest.importorskip("numba")
    return dy2st.to_static(fn, backend=backend, **options)


def which_argument(result, arguments):
    """The index of the argument ``result`` is (by identity), for each result leaf."""
    if isinstance(result, tuple):
        return tuple(which_argument(item, arguments) for item in result)
    return next((i for i, argument in enumerate(arguments) if result is argument), None)


def assert_like_eager(static, fn, *args):
    """Results, dtypes, final arguments and the identity of each result as eager NumPy's."""
    eager_args, converted_args = copy.deepcopy(args), copy.deepcopy(args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = fn(*eager_args)
        actual = static(*converted_args)
    same_value(actual, expected)
    for i, (a, e) in enumerate(zip(converted_args, eager_args)):
        same_value(a, e, f"argument {i} after the call")
    assert which_argument(actual, converted_args) == which_argument(expected, eager_args)
    return actual


def loops_of(graph):
    return [op for op in graph.walk() if op.name == "while_loop"]


def copies_in_loops(graph) -> list[str]:
    """Ops inside loops that copy a whole array, or may (an overlap check); and updates that do
    not run in their array's own buffer."""
    found = []
    for loop in loops_of(graph):
        for op in loop.regions[1].block.ops:
            for inner in op.walk():
                if inner.name in ("copy", "copy_if_overlapping"):
                    found.append(inner.name)
                elif inner.name == "setitem" and "in_place_update" not in inner.attrs:
                    found.append("setitem not in place")
    return found


# --- for over a Python range --------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_rolled_double_buffering_matches_eager_for_every_trip_count(case, backend):
    fn, make = CASES[case]
    static = converted(fn, backend)
    for steps in STEPS:
        assert_like_eager(static, fn, steps, *make())
    # The trip count becomes a graph input at its second value: one graph serves the rest
    # (the first, for steps=0, is a constant's).
    graphs = static.cache_info().graphs
    assert len(graphs) == 2, [g.signature for g in graphs]
    assert graphs[1].signature.startswith("steps: int") and graphs[1].calls == len(STEPS) - 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_loop_rolls_and_updates_its_buffers_in_place(case):
    fn, make = CASES[case]
    static = dy2st.to_static(fn)
    static(10, *make())
    graph = static.graph(11, *make())
    rotation_counters = [value for loop in loops_of(graph) for value in loop.results if "rotation" in value.name_hint]
    assert rotation_counters, str(graph)
    assert not copies_in_loops(graph), str(graph)


@pytest.mark.parametrize("case", ["jacobi", "three", "heat_2d"])
def test_a_constant_trip_count_builds_one_rolled_loop_whatever_its_value(case):
    fn, make = CASES[case]
    static = dy2st.to_static(fn, static_argnums=(0,))
    sizes = {steps: sum(1 for _ in static.graph(steps, *make()).walk()) for steps in (10, 1000)}
    assert sizes[10] == sizes[1000]
    (note,) = static.graph(1000, *make()).notes
    assert "rolled into a while_loop (1000 iterations)" in note


def test_the_returned_object_is_the_callers_by_parity():
    static = dy2st.to_static(jacobi)
    for steps in (6, 7, 8, 9):
        a, b = vector(), vector(seed=1)
        result = static(steps, a, b)
        assert result is (a if steps % 2 == 0 else b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_element_loops_inside_compile_as_one_loop(backend):
    static = converted(element_loops, backend)
    a, b = vector(200), vector(200, seed=1)
    assert_like_eager(static, element_loops, 9, a, b)
    assert_like_eager(static, element_loops, 10, a, b)
    if backend == "compiled":
        executors = [entry.executor for entries in static._cache.values() for entry in entries]
        assert executors and all(e.tier == "compiled" for e in executors), [
            getattr(e, "failures", None) for e in executors
        ]


# --- aliasing: the caller passes one array twice, or overlapping views -------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("steps", [9, 10])
def test_one_array_passed_twice_runs_as_eager(steps, backend):
    static = converted(jacobi, backend)
    static(12, vector(), vector(seed=1))  # a graph for independent arrays exists
    x, y = vector(), vector()
    result = static(steps, x, x)
    expected = jacobi(steps, y, y)
    same_value(result, expected)
    same_value(x, y)
    assert result is x


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("steps", [9, 10])
def test_overlapping_views_run_as_eager(steps, backend):
    static = converted(jacobi, backend)
    static(12, vector(), vector(seed=1))
    base, eager_base = vector(13), vector(13)
    result = static(steps, base[:-1], base[1:])
    expected = jacobi(steps, eager_base[:-1], eager_base[1:])
    same_value(result, expected)
    same_value(base, eager_base)


# --- while with a tensor condition ---------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tol", [10.0, 0.3, 1e-3, 1e-6])
def test_a_tensor_while_rotates_its_buffers(tol, backend):
    start = np.linspace(0.0, 1.0, 16) ** 2
    static = converted(converge, backend)
    assert_like_eager(static, converge, start.copy(), start.copy(), tol)
    assert len(loops_of(static.graph(start.copy(), start.copy(), tol))) == 1


def test_a_tensor_while_refuses_reading_a_rotated_array_after_updating_it_through_another_name():
    static = dy2st.to_static(read_after_an_update_through_another_name)
    with pytest.raises(dy2st.GraphBuildError) as caught:
        static(vector(), vector(seed=1), np.array(3))
    first_line = read_after_an_update_through_another_name.__code__.co_firstlineno
    text = str(caught.value)
    assert f"test_double_buffering.py:{first_line + 8}" in text  # return a.sum()
    assert f"'a' names one of the arrays the loop at line {first_line + 3} swaps" in text
    assert "changed since in a way this variable does not follow" in text


def two_phases(a, b, n):
    k = np.array(0)
    while k < n:
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
        k += 1
    while k < 2 * n + 1:
        b[1:-1] = 0.25 * (a[:-2] + a[2:]) + 0.5 * a[1:-1]
        a, b = b, a
        k += 1
    return a


def two_phases_over_a_range(steps, a, b):
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
    a[0] = 2.0
    for t in range(steps + 1):
        b[1:-1] = 0.25 * (a[:-2] + a[2:]) + 0.5 * a[1:-1]
        a, b = b, a
    return a, b


def two_phases_turning_back(steps, a, b, c):
    for t in range(steps):
        c[1:-1] = (a[1:-1] + b[:-2] + b[2:]) / 3
        a, b, c = b, c, a
    for t in range(steps):
        c[1:-1] = (a[1:-1] + b[:-2]) / 2
        a, b, c = c, a, b  # the other way round: not the first loop's rotation
    return a


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_loops_swapping_the_same_buffers_both_roll(backend):
    static = converted(two_phases, backend)
    for n in (0, 1, 2, 3, 6):
        assert_like_eager(static, two_phases, vector(), vector(seed=1), np.array(n))
    graph = static.graph(vector(), vector(seed=1), np.array(3))
    assert len(loops_of(graph)) == 2 and not copies_in_loops(graph), str(graph)
    static = converted(two_phases_over_a_range, backend)
    for steps in (5, 6, 7, 8):
        assert_like_eager(static, two_phases_over_a_range, steps, vector(), vector(seed=1))
    assert len(static.cache_info().graphs) == 2


def test_two_loops_rotating_different_ways_stay_like_eager():
    static = dy2st.to_static(two_phases_turning_back, static_argnums=(0,))
    for steps in (5, 6, 7):
        assert_like_eager(static, two_phases_turning_back, steps, vector(), vector(seed=1), vector(seed=2))
    first, second = static.graph(7, vector(), vector(seed=1), vector(seed=2)).notes
    assert "rolled into a while_loop" in first and "unrolled" in second


def two_phases_reading_another_name(a, b, n):
    first = a
    s = 0.0
    k = np.array(0)
    while k < n:
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a
        k += 1
    while k < 2 * n:
        s = s + first[1]
        b[1:-1] = 0.25 * (a[:-2] + a[2:])
        a, b = b, a
        k += 1
    return a, s


def test_a_second_tensor_loop_is_refused_where_another_name_reaches_the_swapped_arrays():
    with pytest.raises(dy2st.GraphBuildError) as caught:
        dy2st.to_static(two_phases_reading_another_name)(vector(), vector(seed=1), np.array(3))
    first_line = two_phases_reading_another_name.__code__.co_firstlineno
    text = str(caught.value)
    assert f"test_double_buffering.py:{first_line + 10}" in text  # the second loop's update
    assert f"names one of the arrays the loop at line {first_line + 4} swaps" in text
    assert "writes into an array a loop swapped" in text


def fails_midway(steps, a, b, k):
    n = a.shape[0]
    for t in range(steps):
        for i in range(1, n - 1):
            b[i] = 0.5 * (a[i - 1] + a[i + 1])
        b[t * k] = -1.0  # out of bounds once t * k >= n
        a, b = b, a
    return a


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_error_midway_leaves_the_arguments_as_eager_code_does(backend):
    static = converted(fails_midway, backend)
    for steps in (2, 3, 6, 7):  # 12 elements, k = 2: the seventh iteration (t = 6) raises
        eager_args, converted_args = (vector(), vector(seed=1)), (vector(), vector(seed=1))
        try:
            expected = fails_midway(steps, *eager_args, 2)
        except IndexError:
            expected = IndexError
        if expected is IndexError:
            with pytest.raises(IndexError):
                static(steps, *converted_args, 2)
        else:
            same_value(static(steps, *converted_args, 2), expected)
        for a, e in zip(converted_args, eager_args):
            same_value(a, e)


def lu_rows(A):
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] /= A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]
    return A


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_nest_updating_its_argument_in_place_saves_no_copy_of_it(backend):
    """Only swapped buffers are followed another way: a loop nest updating its argument through
    inner loops still updates it in place, so a call keeps no copy for running the Python
    function again (LU's converted call at 6 x 6 took 1.37 us with the copy, 0.81 us without)."""
    static = converted(lu_rows, backend)
    A = np.random.default_rng(4).random((6, 6)) + 6 * np.eye(6)
    same_value(static(A.copy()), lu_rows(A.copy()))
    (entry,) = [e for entries in static._cache.values() for e in entries]
    assert entry.run == entry.executor.run


def smoothed_energy(x, steps):
    a = x * 1.0
    b = np.zeros_like(a)
    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:]) * np.tanh(a[1:-1])
        a, b = b, a
    return (a * a).sum()


@pytest.mark.parametrize("steps", [5, 6])
def test_gradients_flow_through_swapped_buffers(steps):
    x = vector() + 0.5
    grad = dy2st.grad(smoothed_energy)(x.copy(), steps)
    eps = 1e-6
    for i in range(len(x)):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        expected = (smoothed_energy(up, steps) - smoothed_energy(down, steps)) / (2 * eps)
        assert abs(grad[i] - expected) <= 1e-6 * max(1.0, abs(expected))


# --- arrays passed on without a rotation: eager code updates them in a later iteration -----------
def three_with_a_buffer_of_its_own(a, b):
    c = b * 0.5
    for t in range(5):
        c[1:-1] = a[1:-1]
        a, b, c = b, c, a


def passed_on_then_dropped(b):
    a = np.zeros_like(b)
    for t in range(6):
        a[1] += 1.0
        a, b = b, np.ones_like(b)


def swapped_then_rotated_with_a_third(a, b):
    for t in range(9):
        a, b = b, a
    c = b * 0.5
    for t in range(5):
        c[1:-1] = a[1:-1]
        a, b, c = b, c, a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "fn, count",
    [(three_with_a_buffer_of_its_own, 2), (passed_on_then_dropped, 1), (swapped_then_rotated_with_a_third, 2)],
)
def test_arrays_passed_on_to_a_variable_updated_later_end_as_eager(fn, count, backend):
    # Each was a silent difference: the caller's array, updated by eager code in a later
    # iteration under another name, kept its contents.
    static = converted(fn, backend)
    assert_like_eager(static, fn, *[vector(seed=s) for s in range(count)])


# --- a swapping loop inside a tensor if ---------------------------------------------------------------
def swapped_in_a_branch(a, b, flag, steps):
    if flag > 0:
        for t in range(steps):
            b[1:-1] = 0.5 * (a[:-2] + a[2:])
            a, b = b, a
    return a, b


def swapped_in_both_branches(a, b, flag, steps):
    if flag > 0:
        for t in range(steps):
            b[1:-1] = 0.5 * (a[:-2] + a[2:])
            a, b = b, a
    else:
        for t in range(steps + 1):
            b[1:-1] = 0.25 * (a[:-2] + a[2:])
            a, b = b, a
    a[0] = -5.0
    return a


def converge_if_needed(a, b, tol):
    if np.abs(a).max() > tol:
        err = np.abs(a).max()
        while err > tol:
            b[1:-1] = 0.5 * (a[:-2] + a[2:])
            b[0], b[-1] = a[0], a[-1]
            err = np.abs(b - a).max()
            a, b = b, a
    return a


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_swapping_loop_inside_a_tensor_if_rolls(backend):
    for fn in (swapped_in_a_branch, swapped_in_both_branches):
        static = converted(fn, backend)
        for flag in (1, -1):
            for steps in (5, 6, 7):
                assert_like_eager(static, fn, vector(), vector(seed=1), np.array(flag), steps)
        assert not any("unrolled" in note for note in static.graph(vector(), vector(), np.array(1), 9).notes)
    static = converted(converge_if_needed, backend)
    start = np.linspace(0.0, 1.0, 12) ** 2
    for tol in (0.1, 2.0):
        assert_like_eager(static, converge_if_needed, start.copy(), start.copy(), tol)
