"""One graph for many sizes: automatic dynamic shapes, ``to_static(dynamic=...)``, symbolic sizes
used as numbers, and the fallback to static sizes where a build needs a size as a number."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st

# The kernels benchmarks/dynamic_shapes.py measures: the graphs it times are the ones tested here.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
from dynamic_shapes import centered as centered_differences  # noqa: E402
from dynamic_shapes import normalize_rows, running_sum, smooth  # noqa: E402

LENGTHS = range(5, 55)


def same(converted, eager):
    assert type(converted) is type(eager)
    if isinstance(eager, tuple):
        assert len(converted) == len(eager)
        for c, e in zip(converted, eager):
            same(c, e)
    elif isinstance(eager, np.ndarray):
        assert converted.shape == eager.shape and converted.dtype == eager.dtype
        np.testing.assert_allclose(converted, eager, rtol=1e-12)
    else:
        assert converted == pytest.approx(eager)


def heat(u, steps):
    for _ in range(steps):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u


def mean_and_length(x):
    n = len(x)
    return x.sum() / n, n, x.shape, 2 * n + 1


def created_from_sizes(x):
    n = len(x)
    out = np.zeros((n, 3))
    out[:, 0] = x
    out[:, 1] = x * 2
    return out, np.ones(n - 1) + x[1:], np.full(n, 2.5) * x, np.broadcast_to(x, (2, n))


def sized_ranges_and_reshapes(x):
    n = len(x)
    grid = np.outer(x, x).reshape(n, -1) @ x
    return (
        np.arange(n) * x,
        np.arange(n, 0, -1),
        np.linspace(0.0, 1.0, n) * x,
        x.reshape(-1, 1).T,
        grid,
        x[[0, 1]] + np.linalg.norm(x),
    )


def arguments(fn, n, rng):
    if fn is normalize_rows:
        return (rng.standard_normal((n, 3)),)
    if fn is heat:
        return (rng.standard_normal(n), 20)
    if fn is centered_differences:
        return (rng.standard_normal(n), rng.standard_normal(n))
    return (rng.standard_normal(n),)


@pytest.mark.parametrize(
    "fn",
    [
        centered_differences,
        smooth,
        running_sum,
        normalize_rows,
        heat,
        mean_and_length,
        created_from_sizes,
        sized_ranges_and_reshapes,
    ],
)
def test_fifty_lengths_build_at_most_two_graphs(fn):
    static = dy2st.to_static(fn)
    rng = np.random.default_rng(0)
    for n in LENGTHS:
        args = arguments(fn, n, rng)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        same(static(*args), fn(*copies))
        for a, c in zip(args, copies):  # arguments updated in place end up as eager leaves them
            if isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, c)
    assert static.num_graphs <= 2


@pytest.mark.parametrize("fn", [centered_differences, smooth, normalize_rows, heat, sized_ranges_and_reshapes])
def test_dynamic_true_builds_one_graph(fn):
    static = dy2st.to_static(fn, dynamic=True)
    rng = np.random.default_rng(1)
    for n in LENGTHS:
        args = arguments(fn, n, rng)
        same(static(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]), fn(*args))
    assert static.num_graphs == 1


def test_dynamic_false_builds_one_graph_per_shape():
    static = dy2st.to_static(centered_differences, dynamic=False)
    for n in range(5, 10):
        static(np.ones(n), np.ones(n))
    assert static.num_graphs == 5


def test_the_ir_prints_symbolic_sizes():
    static = dy2st.to_static(centered_differences, dynamic=True)
    text = str(static.graph(np.ones(8), np.ones(8)))
    assert "func @centered(%x: f64[n0], %y: f64[n0]) -> (f64[], f64[n0 - 1])" in text


def test_sizes_used_as_numbers_are_read_at_run_time():
    static = dy2st.to_static(mean_and_length, dynamic=True)
    for n in (4, 9):
        x = np.arange(n, dtype=np.float32)
        result = static(x)
        same(result, mean_and_length(x))
        assert type(result[1]) is int and type(result[0]) is np.float32


def test_sizes_below_two_get_graphs_of_their_own():
    static = dy2st.to_static(centered_differences, dynamic=True)
    for n in (1, 5, 1, 6):
        same(static(np.ones(n), np.ones(n)), centered_differences(np.ones(n), np.ones(n)))
    assert static.num_graphs == 2  # one for length 1, one for every length from 2


def test_a_decision_about_a_size_is_guarded():
    def head(x):
        return x[:3] * 2.0

    static = dy2st.to_static(head, dynamic=True)
    for n in (8, 9, 2, 10, 3):
        same(static(np.arange(float(n))), head(np.arange(float(n))))
    assert static.num_graphs == 2  # n >= 3 (a slice of length 3), n < 3 (a slice of length n)


def test_arguments_of_equal_length_share_a_size():
    static = dy2st.to_static(centered_differences, dynamic=True)
    static(np.ones(6), np.ones(6))
    with pytest.raises(ValueError, match="broadcast"):
        static(np.ones(6), np.ones(7))
    same(static(np.ones(7), np.ones(7)), centered_differences(np.ones(7), np.ones(7)))


def test_a_size_needed_as_a_number_makes_that_size_static():
    def rows_of(x):
        parts = [x[i] * i for i in range(len(x) // 2)]  # a Python list as long as half of x
        return np.stack(parts) if parts else x

    static = dy2st.to_static(rows_of)
    for n in (4, 6, 8):
        same(static(np.ones((n, 2))), rows_of(np.ones((n, 2))))
    assert static.num_graphs == 3


def test_size_arithmetic_is_pythons_unbounded_int():
    """Differential generator, python_numbers seed 60107 with changing sizes."""

    def grow(x):
        t = 0
        big = 2**64
        for _ in range(3):
            big = big + t
            t = len(x)
        return big, 3 * len(x) * len(x) + 2**70

    static = dy2st.to_static(grow, dynamic=True)
    for n in (6, 7):
        assert static(np.ones(n)) == grow(np.ones(n))


def test_a_numpy_scalar_literal_in_a_fused_group_of_symbolic_size():
    """Differential generator, broadcast_branches seed 60147 with changing sizes: the tiled kernel
    of a symbolic-size group names the literal np.float64(1.0)."""

    def ratio(M):
        y = np.abs(1.0)
        return y / np.abs(M[2])

    static = dy2st.to_static(ratio, dynamic=True)
    for n in (4, 5):
        M = np.arange(float(n * n)).reshape(n, n) - 7.0
        same(static(M), ratio(M))


def guarded_then_unrolled(x):
    out = np.zeros(len(x))
    out[:3] = x[:3]  # a decision about the size (n0 >= 3), made in every attempt at the build
    parts = []
    for i in range(6):  # rolled in the first attempt, which fails on the list: then unrolled
        parts.append(x[i] * i)
    return out, parts[-1]


def test_a_failed_attempt_at_rolling_leaves_no_guards_behind():
    """Differential generator, rolled_loops seeds 100058 and 100103 with changing sizes: the
    guards of the attempt that rolled the loop named that attempt's symbols (internal KeyError)."""
    static = dy2st.to_static(guarded_then_unrolled, dynamic=True)
    for n in (8, 9, 12):
        same(static(np.arange(float(n))), guarded_then_unrolled(np.arange(float(n))))
    assert static.num_graphs == 1


def branch_on_length(x):
    if len(x) == 5:
        return x * 2.0
    return x + 1.0


def test_comparing_a_size_for_equality_is_guarded():
    """`len(x) == 5` was False by the form of `n0` alone, with no guard: a later call of length 5
    ran the graph built for length 8 and took the other branch (a wrong answer)."""
    static = dy2st.to_static(branch_on_length)
    for n in (7, 8, 5, 9):
        same(static(np.full(n, 3.0)), branch_on_length(np.full(n, 3.0)))
