"""The strict comparison the correctness regressions use: a converted call must leave exactly
what the eager call leaves — the same result types, shapes, dtypes and bits, the same exception
class, and the same final state of every argument. On the compiled tier (``DY2ST_BACKEND=compiled``)
floats may differ by the 4 ulp its math functions are allowed (docs/compiled-tier.md)."""

from __future__ import annotations

import copy
import warnings

import numpy as np

import dy2st
from differential.compare import within_compiled_tier_ulps


def same_value(actual, expected, where: str = "result") -> None:
    """Same type (``np.float64`` is not ``float`` is not a 0-d array), shape, dtype and bits."""
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            same_value(a, e, f"{where}[{i}]")
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys(), f"{where}: keys differ"
        for key in expected:
            same_value(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (np.ndarray, np.generic)):
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        same = np.array_equal(actual, expected, equal_nan=actual.dtype.kind in "fc")
        close = not same and within_compiled_tier_ulps(np.asarray(actual), np.asarray(expected))
        assert same or close, f"{where}: {actual} != {expected}"
    elif isinstance(expected, float):
        close = within_compiled_tier_ulps(np.asarray(actual), np.asarray(expected))
        assert actual == expected or (actual != actual and expected != expected) or close, (
            f"{where}: {actual!r} != {expected!r}"
        )
    else:
        assert actual == expected or (actual != actual and expected != expected), f"{where}: {actual!r} != {expected!r}"


def _run(fn, args):
    try:
        return fn(*args), None
    except Exception as error:  # the comparison is about which exception, if any
        return None, error


def assert_like_eager(fn, *args, converted=None):
    """Call ``fn`` eagerly and converted on deep copies of ``args``; results, exception classes and
    the final arguments must match. Returns the converted result."""
    eager_args, converted_args = copy.deepcopy(args), copy.deepcopy(args)
    converted = converted or dy2st.to_static(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected, expected_error = _run(fn, eager_args)
        actual, actual_error = _run(converted, converted_args)
    if expected_error is not None:
        assert isinstance(actual_error, type(expected_error)), f"eager raised {expected_error!r}, got {actual_error!r}"
    else:
        assert actual_error is None, f"eager returned {expected!r}, converted raised {actual_error!r}"
        same_value(actual, expected)
    for i, (a, e) in enumerate(zip(converted_args, eager_args)):
        same_value(a, e, f"argument {i} after the call")
    return actual
