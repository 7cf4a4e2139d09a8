"""NumPy functions without a symbolic form still run on arrays built from literals alone."""

import numpy as np
import pytest
from op_harness import assert_equivalent, assert_error_at, sample

import dy2st


def literal_only_calls(x):
    block = np.kron(np.eye(2), np.ones((2, 2)))
    rows, cols = np.meshgrid(np.arange(3), np.arange(2))
    positions = np.add.outer(np.arange(3), np.arange(2) * 10)
    packed = np.packbits(np.array([3, 1, 3]) + np.zeros(3, np.int64) > 2)
    return x @ block, rows * x[0, 0], cols, positions, packed


def test_unsupported_functions_run_eagerly_on_literal_arrays():
    assert_equivalent(literal_only_calls, sample((3, 4), np.float64))


def created_then_mixed_with_input(x):
    return np.packbits(np.arange(3) + x > 1)


def empty_is_not_a_literal(x):
    return np.packbits(np.empty(3, np.uint8))


def literal_numpy_error(x):
    return np.packbits(np.ones((2, 2), np.uint8), axis=5)


def test_functions_without_a_rule_on_input_values_call_numpy_when_the_graph_runs():
    # Not literals: the generic layer stages them (docs/numpy-support.md).
    assert_equivalent(created_then_mixed_with_input, sample((3,), np.float64))
    assert_equivalent(linalg_on_input, np.eye(2) * 3.0)
    packed = dy2st.to_static(empty_is_not_a_literal)(np.ones(3))
    assert packed.shape == (1,) and packed.dtype == np.uint8  # np.empty's contents are undefined


def linalg_on_input(x):
    return np.linalg.inv(x)


def test_numpy_errors_of_literal_calls_name_the_line():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(literal_numpy_error)(np.ones(3))
    assert_error_at(info.value, literal_numpy_error, "np.packbits(", "np.packbits", "AxisError")
