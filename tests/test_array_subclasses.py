"""ndarray subclasses whose operators mean something else are refused, never staged as plain arrays."""

import os
import warnings

import numpy as np
import pytest

import dy2st

THIS_FILE = os.path.basename(__file__)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix is discouraged, still real
    GLOBAL_MATRIX = np.matrix(np.eye(2))

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")


def multiply(a, b):
    return a * b


def scale_global(x):
    return GLOBAL_MATRIX * x


def test_a_matrix_argument_is_refused_at_the_call():
    static = dy2st.to_static(multiply)
    plain = np.arange(4.0).reshape(2, 2)
    static(plain, plain)  # a graph for plain arrays of this shape exists: the fast path is warm
    with pytest.raises(dy2st.UnsupportedOpError) as caught:
        static(np.matrix(plain), np.matrix(plain))  # np.matrix's * is a matrix product
    text = str(caught.value)
    assert f"{THIS_FILE}:" in text
    assert "numpy.matrix is a subclass of np.ndarray, which dy2st does not stage" in text
    assert "np.asarray(value)" in text


def test_a_masked_array_argument_is_refused():
    masked = np.ma.masked_array(np.ones(3), mask=[1, 0, 0])
    with pytest.raises(dy2st.UnsupportedOpError, match="numpy.ma.MaskedArray is a subclass"):
        dy2st.to_static(multiply)(masked, np.ones(3))


def test_a_global_matrix_is_refused():
    with pytest.raises(dy2st.UnsupportedOpError, match="numpy.matrix is a subclass"):
        dy2st.to_static(scale_global)(np.ones((2, 2)))


def test_a_memmap_argument_works_like_a_plain_array(tmp_path):
    data = np.memmap(tmp_path / "data.bin", dtype=np.float32, mode="w+", shape=(4,))
    data[:] = [1.0, 2.0, 3.0, 4.0]
    got = dy2st.to_static(multiply)(data, np.float32(2.0))
    np.testing.assert_array_equal(got, [2.0, 4.0, 6.0, 8.0])
    assert got.dtype == np.float32
