"""Graphs are cached per input signature: (shape, dtype) of each array, value of each constant."""

from __future__ import annotations

import numpy as np

import dy2st

STAGINGS: list[str] = []  # appended to by Python code, which runs only while a graph is built


def make_counted():
    """A fresh StaticFunction (its own cache) that records every time it is staged."""

    def scaled(x, factor=2, mode="add"):
        STAGINGS.append(mode)
        if mode == "add":  # a Python constant: decided once, while the graph is built
            return x + factor
        return x * factor

    return dy2st.to_static(scaled), scaled


def test_new_values_reuse_the_graph():
    static, eager = make_counted()
    STAGINGS.clear()
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((3, 4)).astype(np.float32)
        np.testing.assert_array_equal(static(x), eager(x))
    assert static.num_graphs == 1
    assert len(STAGINGS) == 1 + 3  # one staging, plus the three eager calls


def test_new_shape_builds_a_new_graph():
    static, eager = make_counted()
    static(np.ones((3, 4), np.float32))
    result = static(np.ones((5,), np.float32))
    assert static.num_graphs == 2
    assert result.shape == (5,)
    static(np.zeros((3, 4), np.float32))  # back to the first signature: cached
    assert static.num_graphs == 2


def test_new_dtype_builds_a_new_graph():
    static, eager = make_counted()
    static(np.ones(3, np.float32))
    result = static(np.ones(3, np.int64))
    assert static.num_graphs == 2
    assert result.dtype == eager(np.ones(3, np.int64)).dtype == np.int64


def test_new_python_constant_builds_a_new_graph():
    static, eager = make_counted()
    x = np.arange(4.0)
    np.testing.assert_array_equal(static(x, 2), eager(x, 2))
    np.testing.assert_array_equal(static(x, 3), eager(x, 3))  # a new int: a graph input from now on
    assert static.num_graphs == 2
    np.testing.assert_array_equal(static(x, 3, mode="mul"), eager(x, 3, mode="mul"))  # a str: a constant
    assert static.num_graphs == 3
    static(x, 2)
    static(x, factor=3, mode="mul")
    assert static.num_graphs == 3


def test_constants_of_different_types_are_different_signatures():
    static, eager = make_counted()
    x = np.arange(4, dtype=np.int64)
    # 2 and 2.0 are equal in Python but promote differently: int64 + 2 vs int64 + 2.0.
    assert static(x, 2).dtype == eager(x, 2).dtype == np.int64
    assert static(x, 2.0).dtype == eager(x, 2.0).dtype == np.float64
    assert static.num_graphs == 2


def test_keyword_and_positional_calls_share_one_graph():
    static, _ = make_counted()
    x = np.arange(4.0)
    static(x, 2)
    static(x, factor=2)
    static(factor=2, x=x)
    static(x)  # the default factor=2 and mode="add"
    assert static.num_graphs == 1


def test_nested_structure_is_part_of_the_signature():
    @dy2st.to_static
    def first_plus_second(pair):
        return pair[0] + pair[1]

    a, b = np.ones(3), np.arange(3.0)
    first_plus_second((a, b))
    first_plus_second((a * 2, b))
    assert first_plus_second.num_graphs == 1
    np.testing.assert_array_equal(first_plus_second([a, b]), a + b)
    assert first_plus_second.num_graphs == 2


def test_graph_and_call_share_the_cached_graph():
    static, _ = make_counted()
    x = np.ones((2, 2))
    graph = static.graph(x)
    static(x)
    assert static.num_graphs == 1
    assert static.graph(x) is graph


def test_unoptimized_graph_is_not_cached_as_a_signature():
    static, _ = make_counted()
    x = np.ones((2, 2))
    static.graph(x, optimize=False)
    assert static.num_graphs == 0


def test_conversion_runs_once_per_function():
    static, _ = make_counted()
    assert static.code is static.code
    static(np.ones(2))
    static(np.ones(3))
    assert "def scaled(x, factor=2, mode='add'):" in static.code


def test_positional_python_numbers_take_the_fast_path_keyed_by_type_and_bits():
    import warnings

    import numpy as np

    import dy2st

    def scaled(x, s, n):
        return x * s + n, np.float64(1.0) / s

    calls = [(2.0, 1), (2.0, 1), (0.0, 1), (-0.0, 1), (-0.0, True), (float("nan"), 1), (2, 1)]
    for options, graphs in (({"static_argnums": (1, 2)}, 6), ({}, 4)):
        static = dy2st.to_static(scaled, **options)
        x = np.ones(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for s, n in calls:
                result, reciprocal = static(x, s, n)
                expected, expected_reciprocal = scaled(x, s, n)
                assert np.array_equal(result, expected, equal_nan=True) and result.dtype == expected.dtype
                assert np.array_equal(reciprocal, expected_reciprocal, equal_nan=True)
                assert type(reciprocal) is type(expected_reciprocal)
        # Static: one fast call per (type, bits) of the numbers: 2.0, 0.0, -0.0 with 1 and with True,
        # NaN, 2. Automatic: the constants 2.0 and 1, then inputs: one graph per type (float with
        # int, float with bool, int with int).
        assert len(static._fast_calls) == graphs
        assert static.num_graphs == graphs
