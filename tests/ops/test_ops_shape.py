"""Shape ops through to_static == eager NumPy: reshape, transpose, unit axes, broadcasting, casts."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, sample

import dy2st


def reshapes(x):
    return (
        x.reshape(4, 6),
        x.reshape((-1, 2)),
        np.reshape(x, (2, -1)),
        x.reshape(-1),
        np.reshape(x, 24),
        x.reshape(2, 3, 4, 1),
    )


def transposes(x):
    return x.T, x.transpose(), x.transpose(1, 0, 2), x.transpose((2, 0, 1)), np.transpose(x, (-1, 0, 1)), x.mT


def unit_axes(x):
    return (
        np.expand_dims(x, 0),
        np.expand_dims(x, (0, -1)),
        np.squeeze(np.expand_dims(x, 1)),
        np.expand_dims(x, 1).squeeze(axis=1),
        x[None].squeeze(0),
        np.broadcast_to(x[:, :1], (2, 3, 4)),
    )


def flattening(x):
    return x.ravel(), np.ravel(x), x.flatten(), x.T.ravel(), x.T.flatten()


def axis_moves(x):
    return (
        np.swapaxes(x, 0, 2),
        x.swapaxes(-1, 0),
        x.swapaxes(2, -1),
        np.moveaxis(x, 0, -1),
        np.moveaxis(x, (0, 1), (2, 0)),
    )


def static_facts(x):
    return np.ndim(x), np.shape(x), np.size(x), np.size(x, 1), x.ndim, x.shape, x.size, len(x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [reshapes, transposes, unit_axes, flattening, axis_moves, static_facts])
def test_shape_ops(fn, dtype):
    assert_equivalent(fn, sample((2, 3, 4), dtype))


def casts(x):
    return x.astype(np.float32), x.astype("int64"), x.astype(bool), x.astype(x.dtype, copy=False), x.copy(), np.copy(x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_and_copies(dtype):
    assert_equivalent(casts, sample((3, 2), dtype))


def copies_are_independent(x):
    y = x.copy()
    y[0] = 0
    z = x.flatten()
    z[1] = 5
    return x, y, z


def test_copy_and_flatten_are_not_views():
    assert_equivalent(copies_are_independent, sample((3,), np.float64))


def reshape_fortran(x):
    return x.reshape((3, 2), order="F")


def ravel_any_order(x):
    return x.T.ravel(order="A")


def transpose_bad_axis(x):
    return np.transpose(x, (0, 3))


def squeeze_non_unit(x):
    return np.squeeze(x, axis=0)


def broadcast_too_small(x):
    return np.broadcast_to(x, (3,))


def unsafe_astype(x):
    return x.astype(np.int32, casting="safe")


def reshape_wrong_size(x):
    return x.reshape(5, -1)


def test_memory_orders_the_precise_rules_leave_call_numpy_when_the_graph_runs():
    assert_equivalent(reshape_fortran, sample((2, 3), np.float64))
    assert_equivalent(ravel_any_order, sample((2, 3), np.float64))


def test_shape_errors_name_the_line():
    cases = [
        (transpose_bad_axis, dy2st.GraphBuildError, "(0, 3)", ["axis 3 is out of bounds"]),
        (squeeze_non_unit, dy2st.GraphBuildError, "axis=0", ["size not equal to one"]),
        (broadcast_too_small, dy2st.GraphBuildError, "(3,)", ["cannot broadcast an array of shape (2, 3)"]),
        (unsafe_astype, dy2st.GraphBuildError, "casting=", ["Cannot cast array data", "'safe'"]),
        (reshape_wrong_size, dy2st.GraphBuildError, "reshape(5, -1)", ["cannot reshape array of size 6"]),
    ]
    for fn, error_type, snippet, fragments in cases:
        with pytest.raises(error_type) as info:
            dy2st.to_static(fn)(np.ones((2, 3)))
        assert_error_at(info.value, fn, snippet, *fragments)


def matrix_transpose_of_vector(x):
    return x.mT


def test_matrix_transpose_needs_two_dimensions():
    with pytest.raises(ValueError):
        np.ones(3).mT
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(matrix_transpose_of_vector)(np.ones(3))
    assert_error_at(info.value, matrix_transpose_of_vector, "x.mT", "ndim < 2")


def scalar_type_casts(x):
    return np.float32(x), np.int64(x), np.bool_(x), np.float64(x.sum()), np.float32(2.5) * x


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_scalar_type_constructors_cast_tensors(dtype):
    assert_equivalent(scalar_type_casts, sample((2, 3), dtype))


def zero_dimensional_kinds(x, s):
    arrays = [np.copy(s), x.astype(np.float32), x.copy(), np.full((), 2.0)]
    aliases = list(arrays)
    for a in arrays:
        a += 1  # a 0-d array is updated in place: its alias sees it
    scalars = [s.astype(np.float32), s.copy(), x.sum(), s.reshape(())]
    scalar_aliases = list(scalars)
    for i in range(len(scalars)):
        scalars[i] += 1  # a NumPy scalar is rebound: its alias keeps the old value
    return aliases, scalar_aliases


def test_zero_dimensional_arrays_and_numpy_scalars_keep_their_kind():
    assert_equivalent(zero_dimensional_kinds, np.array(1.5), np.float64(2.5))


def dtype_queries(x, y):
    return np.result_type(x, y), np.result_type(x, 1.0), np.result_type(x, np.float64)


@pytest.mark.parametrize("dtypes", [(np.float32, np.int32), (np.int8, np.int8), (np.int64, np.float32)])
def test_result_type_answers_from_static_dtypes(dtypes):
    x, y = sample((2,), dtypes[0]), sample((2,), dtypes[1])
    assert dy2st.to_static(dtype_queries)(x, y) == dtype_queries(x, y)


def reshape_with_a_float(x):
    return x.reshape(2.0, 3)


def test_a_float_in_a_new_shape_is_numpys_type_error():
    with pytest.raises(TypeError):
        reshape_with_a_float(np.arange(6.0))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer") as info:
        dy2st.to_static(reshape_with_a_float)(np.arange(6.0))
    assert isinstance(info.value, dy2st.GraphBuildError)
