"""Triangles, diagonals and traces through to_static == eager NumPy."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, sample

import dy2st


def triangles(x):
    return np.tril(x), np.triu(x, 1), np.tril(x, -1), np.triu(x[0]), np.tril(x, 10)


def diagonals(x):
    return (
        np.diagonal(x),
        x.diagonal(1),
        np.diagonal(x, -1),
        np.diag(x),
        np.diag(x, 2),
        np.diag(x[0]),
        np.diag(x[:, 1], -1),
        np.trace(x),
        x.trace(offset=1),
        np.trace(x, dtype=np.float32),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [triangles, diagonals])
def test_matrix_structure(fn, dtype):
    assert_equivalent(fn, sample((3, 4), dtype))


def batched(x):
    return np.triu(x, 1), np.diagonal(x, 0, 1, 2), np.diagonal(x, 1, 2, 0), np.trace(x, axis1=1, axis2=2)


def test_batched_diagonals():
    assert_equivalent(batched, sample((2, 3, 4), np.float64))


def masks_from_created_arrays(scores):
    mask = np.triu(np.ones((4, 4), dtype=bool), k=1)
    return np.where(mask, -np.inf, scores), np.tril(np.ones_like(scores)) * scores + np.diag(np.arange(4.0))


def test_masks_built_from_staged_creation_functions():
    assert_equivalent(masks_from_created_arrays, sample((4, 4), np.float32))


def diagonal_same_axes(x):
    return np.diagonal(x, 0, 1, 1)


def test_diagonal_with_one_axis_twice_is_refused():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(diagonal_same_axes)(np.ones((2, 2)))
    assert_error_at(info.value, diagonal_same_axes, "np.diagonal(x, 0, 1, 1)", "cannot be the same")
