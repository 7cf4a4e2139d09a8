"""The update-destinations pass: an elementwise result an in-place update stores is computed
straight into the updated array's view, where nothing can tell, and the function still leaves
exactly what eager NumPy leaves."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.backend.numpy import fused as fused_runtime
from dy2st.ir.core import VALUE_IN_PLACE, WRITES_UPDATE
from dy2st.passes.pipeline import PASSES_BY_NAME
from eager_parity import assert_like_eager

RNG = np.random.default_rng(7)


def computed_in_place(fn, *args) -> list[str]:
    """The names of the ops that write their result into an update's array, in program order,
    after checking the converted function against eager NumPy."""
    static = dy2st.to_static(fn)
    assert_like_eager(fn, *args, converted=static)
    graph = static.graph(*args)
    chosen = [op.name for op in graph.walk() if op.attrs.get(WRITES_UPDATE)]
    assert len(chosen) == sum(1 for op in graph.walk() if op.attrs.get(VALUE_IN_PLACE))
    return chosen


def jacobi_step(A, B):
    B[1:-1] = 0.33 * (A[:-2] + A[1:-1] + A[2:])  # a fused group reading another array
    return B


def shifted_sum(u):
    u[1:] = u[:-1] + u[1:]  # one ufunc reading overlapping views: NumPy copies them first
    return u


def heat_step(u):
    u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2.0 * u[1:-1] + u[:-2])  # tiles must not read what they wrote
    return u


def augmented_slice(C, X):
    C[:3, :] += X
    return C


def read_between(A, x):
    t = x * 2.0
    s = A.sum()  # reads A's old values after t is computed
    A[0] = t
    return A, s


def written_between(A, x):
    t = x * 2.0
    A[0, 0] = -1.0  # writes A after t is computed: the two writes keep their order
    A[:, 0] = t
    return A


def masked_and_fancy(A, m, i, x):
    A[m] = x[: int(m.sum())] * 2.0 if False else A[m] * 2.0  # a mask: advanced indexing
    A[[0, 2]] = A[[1, 3]] + 1.0  # an index array
    A[i] = A[0] * 3.0  # a 0-d integer array: advanced indexing, a copy in NumPy
    return A


def other_dtype(A, x):
    A[1:] = x[1:] * 2  # int64 result stored into float64
    return A


def row_recurrence(A, n):
    for i in range(1, n):  # rolled: the counter is a Python int when it runs
        A[i, :] = 0.5 * A[i - 1, :] + 1.0
    return A


@pytest.mark.parametrize(
    ("fn", "args", "expected"),
    [
        (jacobi_step, (RNG.random(50000), RNG.random(50000)), ["fused"]),
        (shifted_sum, (RNG.random(100),), ["add"]),
        (heat_step, (RNG.random(50000),), ["fused"]),
        (augmented_slice, (RNG.random((5, 4)), RNG.random((3, 4))), ["add"]),
        (read_between, (RNG.random((3, 4)), RNG.random(4)), []),
        (written_between, (RNG.random((4, 3)), RNG.random(4)), []),
        (other_dtype, (RNG.random(5), np.arange(5)), []),
        (row_recurrence, (RNG.random((6, 5)), 6), ["fused"]),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_which_results_are_computed_into_the_update(fn, args, expected):
    assert computed_in_place(fn, *args) == expected


@pytest.mark.parametrize("fn", [heat_step, jacobi_step])
def test_tiles_that_read_an_overlapping_input_never_read_what_they_wrote(monkeypatch, fn):
    monkeypatch.setattr(fused_runtime, "TILE_ELEMENTS", 7)  # many tiles, a ragged last one
    u = RNG.random(3000)
    args = (u, u.copy()) if fn is jacobi_step else (u,)
    assert computed_in_place(fn, *args) == ["fused"]
    assert computed_in_place(fn, *(a[::2] for a in args)) == ["fused"]  # strided views


def test_advanced_indices_never_name_a_view():
    args = (RNG.random((4, 3)), RNG.random((4, 3)) > 0.5, np.array(3), RNG.random(12))
    assert computed_in_place(masked_and_fancy, *args) == []


def test_the_generated_code_writes_the_result_into_the_view():
    static = dy2st.to_static(jacobi_step)
    args = (RNG.random(50000), RNG.random(50000))
    source = static.executor_source(*args)
    assert "a1[1:-1]" in source and "out=" in source and "] = " not in source
    assert "update-destinations" in PASSES_BY_NAME


def test_a_group_of_data_dependent_size_writes_into_the_view_in_a_rolled_loop():
    def lower_rows(C, a, b):
        for i in range(C.shape[0]):
            C[:i, :] += 1.5 * np.outer(a[:i], b)
        return C

    args = (RNG.random((30, 200)), RNG.random(30), RNG.random(200))
    assert computed_in_place(lower_rows, *args) == ["add"]
