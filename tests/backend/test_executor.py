"""The executor and the call path: runtime errors name the op and the user's line; the positional
fast path gives the same results as the general path and notices rebound globals."""

import inspect

import numpy as np
import pytest

import dy2st

SCALE = np.float32(2.0)
TABLE = np.arange(6, dtype=np.float64)


def pick(x, idx):
    y = x @ x.T
    z = y[idx] * 2.0
    return z + 1.0


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_runtime_error_names_the_op_and_the_user_line():
    static = dy2st.to_static(pick)
    x = np.ones((3, 3))
    np.testing.assert_array_equal(static(x, np.array([0, 2])), pick(x, np.array([0, 2])))
    with pytest.raises(dy2st.Dy2stRuntimeError) as info:
        static(x, np.array([0, 7]))  # the planned path: the matmul writes into a buffer
    message = str(info.value)
    line = line_of(pick, "z = y[idx]")
    assert f"test_executor.py:{line}" in message
    assert "while executing gather(f64[3,3], i64[2]) (test_executor.py:" in message
    assert "IndexError: index 7 is out of bounds for axis 0 with size 3" in message
    assert "z = y[idx] * 2.0" in message


def lookup(i):
    return TABLE[i] * 2.0


def test_the_fast_path_notices_a_rebound_global_of_another_shape():
    global TABLE
    static = dy2st.to_static(lookup)
    i = np.array([1, 3])
    np.testing.assert_array_equal(static(i), [2.0, 6.0])
    np.testing.assert_array_equal(static(i), [2.0, 6.0])  # served by the fast path
    saved = TABLE
    try:
        TABLE = np.arange(10, dtype=np.float64) * 10
        np.testing.assert_array_equal(static(i), [20.0, 60.0])
        assert static.num_graphs == 2
        TABLE[3] = -1.0  # in-place updates are seen: captures are read at every call
        np.testing.assert_array_equal(static(i), [20.0, -2.0])
    finally:
        TABLE = saved


def affine(x, w, b=None, *, relu=False):
    y = x * w if b is None else x * w + b
    return np.maximum(y, 0) if relu else y


def test_keyword_defaults_and_scalars_take_the_general_path_with_the_same_results():
    static = dy2st.to_static(affine)
    x, w, b = np.linspace(-1, 1, 5), np.float64(3.0), np.full(5, 0.5)
    np.testing.assert_array_equal(static(x, np.array(3.0), b), affine(x, 3.0, b))
    np.testing.assert_array_equal(static(x, w), affine(x, w))
    np.testing.assert_array_equal(static(x, w, b, relu=True), affine(x, w, b, relu=True))
    np.testing.assert_array_equal(static(x, np.array(3.0), b), affine(x, 3.0, b))
    got = static(x, w)
    assert got.dtype == affine(x, w).dtype and got.shape == (5,)


def scaled(x):
    return x * SCALE


def test_a_new_shape_on_the_fast_path_builds_a_new_graph():
    static = dy2st.to_static(scaled)
    for n in (3, 4, 3):
        x = np.arange(n, dtype=np.float32)
        got = static(x)
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_array_equal(got, x * SCALE)
    assert static.num_graphs == 2


def rows_and_scalars(x, i, a, b):
    part = x[1:3, i]
    small = np.tanh(part * 2.0) + 1.0
    return small, a * b + 1.0 < b, x[i]


def test_small_graphs_run_as_plain_python_and_numpy_calls():
    static = dy2st.to_static(rows_and_scalars)
    args = (np.arange(12.0).reshape(3, 4), np.array(2), np.float64(1.5), np.array(2.5))
    source = static.executor_source(*args)
    assert "= a0[1:3, a1, ]" in source and "= a0[a1]" in source  # indexing written out
    assert "k_fused" not in source and "k_tanh(" in source  # a tiny fused group runs op by op
    assert " < " in source  # 0-d comparisons use NumPy's scalar math
    for got, want in zip(static(*args), rows_and_scalars(*args)):
        assert type(got) is type(want) and np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)


class Scaler:
    def __init__(self, weight):
        self.weight = weight

    @dy2st.to_static
    def apply(self, x):
        return x * self.weight + 1.0


def test_method_calls_are_served_per_instance_and_see_attribute_changes():
    first, second = Scaler(np.full(3, 2.0)), Scaler(np.full(3, -1.0))
    x = np.arange(3.0)
    for _ in range(2):  # the second round takes the fast path
        np.testing.assert_array_equal(first.apply(x), x * 2.0 + 1.0)
        np.testing.assert_array_equal(second.apply(x), x * -1.0 + 1.0)
    first.weight[:] = 5.0  # in place: read at every call
    np.testing.assert_array_equal(first.apply(x), x * 5.0 + 1.0)
    first.weight = np.full((2, 3), 3.0)  # rebound to another shape: a new graph
    np.testing.assert_array_equal(first.apply(x), x * np.full((2, 3), 3.0) + 1.0)
    np.testing.assert_array_equal(second.apply(x), x * -1.0 + 1.0)


def zeros_and_fills(x):
    n = x.shape[0]
    zeros = np.zeros(n)
    counts = np.zeros((2, n), dtype=np.int32)
    negative = np.full(n, -0.0)
    ones = np.ones(n, dtype=np.float32)
    zeros[1:] = x[1:]
    counts[0] += 1
    return zeros, counts, negative, ones


def test_np_zeros_is_called_directly_and_other_fills_keep_their_values():
    static = dy2st.to_static(zeros_and_fills)
    for n in (3, 5):  # the second length is symbolic
        x = np.arange(float(n))
        results = static(x)
        for got, expected in zip(results, zeros_and_fills(x)):
            np.testing.assert_array_equal(got, expected)
            assert got.dtype == expected.dtype
        assert np.signbit(results[2]).all()
        assert not np.shares_memory(results[0], static(x)[0])
    source = static.executor_source(np.arange(4.0))
    assert source.count("np_zeros(") == 2 and "k_full" in source
