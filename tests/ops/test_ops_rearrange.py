"""np.flip, fliplr, flipud, rot90, roll, atleast_* and np.diff have precise rules: eager NumPy's
results, dtypes and views (a write through np.flip's view updates its base), static shapes, and
the generic layer for what the rules do not take (a tensor shift, a symbolic axis to roll)."""

from __future__ import annotations

import numpy as np
import pytest
from op_harness import assert_equivalent, sample

import dy2st
from dy2st.ops.generic import NUMPY_CALL


def rearranged(x, M, v):
    return (
        np.flip(x),
        np.flip(M, 1),
        np.flip(M, axis=(0, 1)),
        np.fliplr(M),
        np.flipud(M),
        np.rot90(M),
        np.rot90(M, 2),
        np.rot90(M, -1, axes=(1, 0)),
        np.roll(v, 2),
        np.roll(M, -1, axis=0),
        np.roll(M, (1, 2), axis=(0, 1)),
        np.roll(M, 3),
        np.roll(M, 1, axis=(0, 0)),
        np.atleast_1d(x[0]),
        np.atleast_2d(v),
        np.atleast_3d(M),
        np.atleast_2d(v, M),
    )


def differences(x, M, b):
    return (
        np.diff(x),
        np.diff(x, n=2),
        np.diff(M, axis=0),
        np.diff(M, prepend=0.0),
        np.diff(M, append=M[:, :1], axis=1),
        np.diff(b),
        np.diff(x, n=3, prepend=[1.0, 2.0]),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_rearranging_and_differences_match_eager_and_stay_precise(dtype):
    args = sample((5,), dtype), sample((3, 4), dtype), sample((6,), dtype)
    assert_equivalent(rearranged, *args)
    assert_equivalent(differences, args[0], args[1], sample((6,), np.bool_))
    for fn, fn_args in ((rearranged, args), (differences, (args[0], args[1], sample((6,), np.bool_)))):
        assert NUMPY_CALL not in [op.name for op in dy2st.to_static(fn).graph(*fn_args).walk()]


def write_through_flip(M):
    view = np.flip(M, 0)
    view[0, 0] = -1.0  # M[-1, 0] in eager NumPy
    up = np.atleast_2d(M[0])
    up[0, 1] = -2.0
    return M, np.diff(M, n=0) is M


def test_the_views_are_exact_views_of_their_base():
    assert_equivalent(write_through_flip, sample((3, 4), np.float64))


def rolled_by(x, k):
    return np.roll(x, k)


def test_a_tensor_shift_goes_to_the_generic_layer():
    static = dy2st.to_static(rolled_by)
    for k in (0, 2, -7):
        np.testing.assert_array_equal(static(np.arange(5.0), np.array(k)), np.roll(np.arange(5.0), k))
    assert NUMPY_CALL in [op.name for op in static.graph(np.arange(5.0), np.array(1)).walk()]


def symbolic_roll(x):
    return np.roll(x, 1) + np.flip(x)


def test_symbolic_sizes_roll_through_the_generic_layer_and_flip_stays_a_view():
    static = dy2st.to_static(symbolic_roll, dynamic=True)
    for n in (4, 9):
        np.testing.assert_array_equal(static(np.arange(float(n))), symbolic_roll(np.arange(float(n))))
    assert static.num_graphs == 1
