"""The generated fast-call keys (``fast_call.key_function``) key every call exactly as
``fast_key`` does, for arrays, Python numbers taken as inputs or held as constants, bools, ints
beyond int64, NumPy scalars and other objects; and the overlap check of updated inputs answers as
``np.may_share_memory`` would where it matters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dy2st
from dy2st.fast_call import fast_key, key_function

VALUES = [
    np.zeros(3),
    np.zeros((2, 2), np.float32),
    np.zeros(3)[::2],
    1.5,
    -0.0,
    float("nan"),
    7,
    2**63,
    -(2**63) - 1,
    True,
    np.float64(2.0),
    "text",
    None,
]


@pytest.mark.parametrize("constants", list(itertools.product([False, True], repeat=2)))
def test_generated_keys_equal_fast_key(constants):
    key = key_function(2, constants)
    for pair in itertools.product(VALUES, repeat=2):
        assert key(pair, constants) == fast_key(pair, constants), pair


def scaled_in_place(x, y, scale):
    for i in range(x.shape[0]):
        x[i] = y[i] * scale
    return x


def test_updated_inputs_overlapping_another_input_still_run_as_eager_code():
    static = dy2st.to_static(scaled_in_place)
    a, b = np.arange(6.0), np.arange(6.0) + 10
    np.testing.assert_array_equal(static(a, b, 2.0), (np.arange(6.0) + 10) * 2.0)
    eager_shared, shared = np.arange(8.0), np.arange(8.0)
    eager = scaled_in_place(eager_shared[1:7], eager_shared[:6], 2.0)  # each write read back next
    view_target, view_source = shared[1:7], shared[:6]  # overlapping views of one array
    np.testing.assert_array_equal(static(view_target, view_source, 2.0), eager)
    np.testing.assert_array_equal(shared, eager_shared)
    same = np.arange(6.0)
    np.testing.assert_array_equal(static(same, same, 2.0), scaled_in_place(np.arange(6.0), np.arange(6.0), 2.0))
