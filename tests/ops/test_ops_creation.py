"""Creation functions and joins through to_static == eager NumPy (static shapes)."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, assert_same_array, sample

import dy2st


def filled(x):
    return (
        np.zeros(3),
        np.zeros((2, 3), np.float32),
        np.ones((2,), dtype=np.int32),
        np.full((2, 2), 7),
        np.full(3, 2.5, dtype=np.float32),
        np.full((2, 3), x[0]),
        np.full(x.shape, True),
        np.zeros(()),
        np.ones(x.shape[0], x.dtype),
        np.full((3, 2), np.float32(1.5)),
    )


def filled_like(x):
    return (
        np.zeros_like(x),
        np.ones_like(x),
        np.full_like(x, 3),
        np.full_like(x, 0.5, dtype=np.float64),
        np.zeros_like(x, shape=(4,)),
        np.ones_like(x, dtype=np.int8),
        np.full_like(x, x[0, 0]),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_full_and_like(dtype):
    x = sample((2, 3), dtype)
    assert_equivalent(filled, x)
    assert_equivalent(filled_like, x)


def empties(x):
    return np.empty((2, 3)), np.empty(4, np.int32), np.empty_like(x), np.empty_like(x, dtype=bool)


def test_empty_has_the_right_shape_and_dtype():
    x = sample((3,), np.float32)
    actual = dy2st.to_static(empties)(x)
    expected = empties(x)
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype == e.dtype


def ranges():
    return (
        np.arange(5),
        np.arange(2, 9, 3),
        np.arange(0.5, 3, 0.3),
        np.arange(10, 0, -3),
        np.arange(5.0),
        np.arange(0, 1, 0.1, dtype=np.float32),
        np.arange(np.int32(4)),
        np.arange(True, 5),
        np.arange(3, 1),
        np.arange(0, 5, 2, dtype=np.int8),
    )


def spaced():
    return (
        np.linspace(0, 1),
        np.linspace(-1, 1, 7),
        np.linspace(0, 1, 5, endpoint=False),
        np.linspace(0, 10, 4, dtype=np.int32),
        np.linspace(np.float32(0), 1, 3),
        np.linspace(0, 1, 0),
    )


def identities():
    return np.eye(3), np.eye(2, 4, k=1, dtype=np.int32), np.eye(4, k=-2), np.identity(3, dtype=bool)


@pytest.mark.parametrize("fn", [ranges, spaced, identities])
def test_ranges_and_identities(fn):
    assert_equivalent(fn)


def creation_results_are_writable(x):
    z = np.zeros(())
    z[...] = x.sum()
    r = np.arange(3)
    r[0] = 9
    return z, r


def test_created_zero_dimensional_arrays_are_writable():
    assert_equivalent(creation_results_are_writable, sample((3,), np.float64))


def created_once_per_call(x):
    acc = np.zeros(3)
    acc += x
    return acc


def test_each_call_gets_a_fresh_array():
    static = dy2st.to_static(created_once_per_call)
    first = static(np.ones(3))
    second = static(np.ones(3))
    assert_same_array(second, np.ones(3))
    assert first is not second


def nested_lists(x, y):
    s = x.sum()
    return (
        np.array([x, y]),
        np.array([[s, 1.0], [2, s]]),
        np.asarray([x[0], x[1]]),
        np.array([s, s], np.float32),
        np.array([[x], [y]]),
        np.asarray((y, x)),
        np.array([1, 2, 3]),
        np.asarray([x, y], None, "C"),
        np.array([x, y], copy=True, order="F", subok=True),
    )


@pytest.mark.parametrize(
    "dtypes", [(np.float32, np.float32), (np.float32, np.float64), (np.int32, np.bool_), (np.int64, np.int64)]
)
def test_array_of_lists_holding_tensors_stacks_them(dtypes):
    assert_equivalent(nested_lists, sample((3,), dtypes[0], 1), sample((3,), dtypes[1], 2))


def joins(x, y):
    return (
        np.concatenate([x, y]),
        np.concatenate((x, y), axis=1),
        np.concatenate([x, y], axis=None),
        np.concatenate([x, np.ones((1, 3), np.float32)]),
        np.stack([x, y]),
        np.stack([x, y], axis=-1),
        np.stack((x[0], y[0]), axis=1 if x.ndim > 5 else 0),
        np.vstack([x, y]),
        np.vstack([x[0], y[0]]),
        np.hstack([x, y]),
        np.hstack([x[0], y[1]]),
        np.concatenate([x, y], dtype=np.float64),
        np.concat([x, y], axis=-1),
    )


@pytest.mark.parametrize("dtypes", [(np.float32, np.float32), (np.int32, np.float64), (np.bool_, np.int64)])
def test_joins(dtypes):
    assert_equivalent(joins, sample((2, 3), dtypes[0], 1), sample((2, 3), dtypes[1], 2))


def tensor_shape(x, n):
    return np.zeros(n)


def tensor_arange(x, n):
    return np.arange(n)


def generator_built_inside(x, n):
    return x + np.random.Generator(np.random.PCG64(0)).random(3)


def ragged(x, n):
    return np.array([x, x[:2]])


def mismatched_concatenate(x, n):
    return np.concatenate([x, x[:, :2]], axis=0)


def like_argument(x, n):
    return np.zeros(3, like=x)


def test_creation_errors_name_the_line():
    cases = [
        (tensor_shape, dy2st.TensorValueError, "np.zeros(n)", ["only known when the graph runs"]),
        (generator_built_inside, dy2st.UnsupportedOpError, "np.random.Generator(", ["created once", "default_rng"]),
        (ragged, dy2st.GraphBuildError, "np.array([x, x[:2]])", ["np.array", "inhomogeneous"]),
        (mismatched_concatenate, dy2st.GraphBuildError, "np.concatenate(", ["along dimension 1"]),
        (like_argument, dy2st.UnsupportedOpError, "like=x", ["np.zeros", "'like'"]),
    ]
    for fn, error_type, snippet, fragments in cases:
        with pytest.raises(error_type) as info:
            dy2st.to_static(fn)(np.ones((3, 3)), np.array(3))
        assert_error_at(info.value, fn, snippet, *fragments)


def test_tensor_bounds_give_a_length_read_when_the_graph_runs():
    converted = dy2st.to_static(tensor_arange)
    for n in (3, 0, 5):
        result = converted(np.ones((3, 3)), np.array(n))
        np.testing.assert_array_equal(result, np.arange(n))
        assert result.dtype == np.arange(np.array(n)).dtype


def tensor_linspace(x, n):
    return np.linspace(x[0], x[1], 4), np.linspace(0, x, 3, axis=1, retstep=True)


def test_linspace_with_tensor_bounds_axis_and_retstep():
    x = np.array([1.0, 7.0])
    expected = tensor_linspace(x, 0)
    result = dy2st.to_static(tensor_linspace)(x, 0)
    np.testing.assert_array_equal(result[0], expected[0])
    np.testing.assert_array_equal(result[1][0], expected[1][0])
    np.testing.assert_array_equal(result[1][1], expected[1][1])
    assert type(result[1]) is tuple and result[1][0].shape == (2, 3)


def creation_graph(x):
    return np.zeros((2, 2)) + x, np.arange(4)


def test_creation_is_staged_as_operand_free_ops():
    graph = dy2st.to_static(creation_graph).graph(np.ones((2, 2)), optimize=False)
    names = [op.name for op in graph.walk()]
    assert "full" in names and "arange" in names
    assert not any(op.name == "const" and op.results[0].type.shape for op in graph.walk())


def zeros_and_signed_zero_fills(x):
    return (
        np.zeros(3) + x[0],
        np.zeros((2, 2), np.int32),
        np.zeros(2, bool),
        np.zeros(2, complex),
        np.full(3, -0.0),
        np.full(2, 0.0, np.float32),
        np.full(2, 0, "U2"),
    )


def test_zero_fills_keep_numpys_values_and_signs():
    """A fill of 0 runs as np.zeros (faster than np.full); -0.0 and strings keep np.full's."""
    got = dy2st.to_static(zeros_and_signed_zero_fills)(np.ones(3))
    want = zeros_and_signed_zero_fills(np.ones(3))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tolist() == w.tolist()
    assert np.all(np.signbit(got[4]))
