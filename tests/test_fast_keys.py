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


def test_float_constants_are_keyed_by_their_bits():
    """A graph holding a float constant serves only that float's bits: 0.0 is not -0.0, and a NaN
    is keyed as NaN (not as a new key for every NaN object)."""
    key = key_function(1, (True,))
    floats = [0.0, -0.0, float("nan"), 1.5, 1.5000000000000002, 1e-300, float("inf")]
    keys = [key((value,), (True,)) for value in floats]
    assert len(set(keys)) == len(floats)
    assert key((float("nan"),), (True,)) == key((float("nan"),), (True,))
    assert key((1.5,), (True,)) == key((3.0 / 2,), (True,))


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


def cleared_between_sums(x, y):
    before = y.sum()
    x[:] = 0.0
    return before, y.sum()  # the graph may reuse ``before``: eager code sees x's zeros through y


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("alias", ["same", "view", "reshaped"])
def test_fast_calls_run_overlapping_updated_inputs_as_eager_code(backend, alias):
    """The fast call's inline test lets distinct arrays owning their memory through and asks
    ``inputs_overlap`` of anything else: an argument passed twice, or a view of another."""
    static = dy2st.to_static(cleared_between_sums, backend=backend)
    assert [float(v) for v in static(np.arange(4.0), np.arange(4.0))] == [6.0, 6.0]
    a = np.arange(4.0)
    b = a if alias == "same" else a[:] if alias == "view" else a.reshape(2, 2).ravel()
    assert [float(v) for v in static(a, b)] == [6.0, 0.0]
    np.testing.assert_array_equal(a, np.zeros(4))


def test_updated_inputs_that_are_views_of_other_arrays_run_the_graph():
    """Arrays that do not own their memory fail the fast call's inline test, so they are asked
    of ``inputs_overlap``: views of distinct arrays share nothing and run the graph; a view
    overlapping a global the function reads runs the Python function."""
    static = dy2st.to_static(scaled_in_place)
    target_base, source_base = np.zeros(8), np.arange(8.0)
    expected_base = target_base.copy()
    scaled_in_place(expected_base[1:7], source_base[:6].copy(), 3.0)
    result = static(target_base[1:7], source_base[:6], 3.0)
    np.testing.assert_array_equal(target_base, expected_base)
    assert np.shares_memory(result, target_base)
    shared = np.arange(8.0)
    eager_shared = shared.copy()
    scaled_in_place(eager_shared[2:8], eager_shared[0:6], 3.0)
    static(shared[2:8], shared[0:6], 3.0)  # a fast call keyed as the call before, overlapping
    np.testing.assert_array_equal(shared, eager_shared)


GLOBAL_SOURCE = np.arange(6.0)


def scaled_from_global(x, scale):
    for i in range(x.shape[0]):
        x[i] = GLOBAL_SOURCE[(i + 1) % 6] * scale
    return x


def test_an_updated_input_that_is_a_global_read_too_runs_as_eager_code():
    static = dy2st.to_static(scaled_from_global)
    np.testing.assert_array_equal(static(np.zeros(6), 2.0), np.roll(np.arange(6.0), -1) * 2.0)
    global GLOBAL_SOURCE
    saved = GLOBAL_SOURCE
    try:
        eager_global = np.arange(6.0)
        GLOBAL_SOURCE = eager_global
        expected = scaled_from_global(eager_global, 2.0).copy()  # each write read back next
        GLOBAL_SOURCE = np.arange(6.0)
        np.testing.assert_array_equal(static(GLOBAL_SOURCE, 2.0), expected)
        np.testing.assert_array_equal(GLOBAL_SOURCE, expected)
    finally:
        GLOBAL_SOURCE = saved
