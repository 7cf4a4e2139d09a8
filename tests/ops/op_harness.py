"""Shared checks for the op tests: converted == eager NumPy (shape, dtype, values) and error lines."""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np

import dy2st

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]


def sample(shape, dtype, seed: int = 0) -> np.ndarray:
    """A deterministic array of ``shape`` and ``dtype`` with small, mostly non-zero values."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        values = rng.random(shape) > 0.5
    elif dtype.kind in "iu":
        values = rng.integers(1, 7, size=shape)
    else:
        values = rng.random(shape) * 4 - 2
    return np.asarray(values).astype(dtype)  # an ndarray even for shape ()


def _copy_args(args):
    return [a.copy() if isinstance(a, (np.ndarray, np.generic)) else a for a in args]


def assert_same_array(actual, expected, where: str = "result") -> None:
    """Same shape and dtype exactly; values equal (floats within a few ulp, NaNs matching)."""
    actual_array, expected_array = np.asarray(actual), np.asarray(expected)
    assert actual_array.shape == expected_array.shape, f"{where}: shape {actual_array.shape} != {expected_array.shape}"
    assert actual_array.dtype == expected_array.dtype, f"{where}: dtype {actual_array.dtype} != {expected_array.dtype}"
    if actual_array.dtype.kind in "fc":
        precision = np.finfo(actual_array.dtype).resolution  # 1e-3 (f16), 1e-6 (f32), 1e-15 (f64)
        tolerance = precision * 10
        np.testing.assert_allclose(
            actual_array, expected_array, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=where
        )
    else:
        np.testing.assert_array_equal(actual_array, expected_array, err_msg=where)


def assert_same_tree(actual, expected, where: str = "result") -> None:
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, type(expected)) and len(actual) == len(expected), f"{where}: structure differs"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same_tree(a, e, f"{where}[{i}]")
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert_same_array(actual, expected, where)
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_equivalent(fn, *args):
    """Run ``fn`` eagerly and through ``dy2st.to_static``; the results must agree exactly in type."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # eager NaN/overflow warnings are fine here
        expected = fn(*_copy_args(args))
        actual = dy2st.to_static(fn)(*_copy_args(args))
    assert_same_tree(actual, expected)
    return actual


def line_of(fn, snippet: str) -> int:
    """The line number, in this file, of the first line of ``fn`` containing ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if snippet in text:
            return start + offset
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def assert_error_at(error: BaseException, fn, snippet: str, *fragments: str) -> None:
    """The error names this test file and the line of ``snippet`` in ``fn``, plus each fragment."""
    text = str(error)
    filename = os.path.basename(inspect.getsourcefile(fn))
    assert f"{filename}:{line_of(fn, snippet)}" in text, text
    for fragment in fragments:
        assert fragment in text, text
