"""``np.ndarray(shape, dtype)`` called as a constructor in converted code: a new uninitialized
array staged like ``np.empty``, then filled by the function."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def filled_by_slice(x):
    a = np.ndarray((3,), np.float64)
    a[:] = x
    return a


def filled_row_by_row(x):
    out = np.ndarray(shape=(x.shape[0], 2), dtype=x.dtype)
    for i in range(x.shape[0]):
        out[i, 0] = x[i]
        out[i, 1] = x[i] * 2
    return out


def filled_in_a_tensor_loop(x, n):
    acc = np.ndarray(x.shape, np.int32, order="F")
    acc[...] = 0
    i = 0
    while i < n:
        acc += 1
        i += 1
    return acc


def default_dtype_and_int_shape(x):
    a = np.ndarray(4)
    a[:] = 1.5
    return a, a.dtype


@pytest.mark.parametrize(
    "fn, args",
    [
        (filled_by_slice, (np.array([1.0, 2.5, -3.0]),)),
        (filled_row_by_row, (np.array([1.0, 2.0, 3.0], np.float32),)),
        (filled_in_a_tensor_loop, (np.zeros((2, 2)), np.array(3))),
        (default_dtype_and_int_shape, (np.ones(2),)),
    ],
)
def test_ndarray_constructor_matches_eager(fn, args):
    assert_like_eager(fn, *args)


def test_the_constructor_is_staged_as_empty():
    graph = dy2st.to_static(filled_by_slice).graph(np.ones(3), optimize=False)
    names = [op.name for op in graph.walk()]
    assert "empty" in names
    assert not any(op.name == "const" and op.results[0].type.shape for op in graph.walk())


def over_a_buffer(x):
    a = np.ndarray((2,), np.float64, buffer=np.zeros(2))
    a[:] = x
    return a


def bad_dtype(x):
    return np.ndarray((2,), "not-a-dtype")


def test_buffers_are_refused_and_numpy_errors_keep_their_class():
    with pytest.raises(dy2st.UnsupportedOpError, match="'buffer'"):
        dy2st.to_static(over_a_buffer)(np.ones(2))
    assert_like_eager(bad_dtype, np.ones(2))
