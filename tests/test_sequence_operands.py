"""Lists and tuples as operands of tensor operations, as NumPy treats them: an array made of the
sequence (``np.asarray``, stacking the tensors it holds), promoted as an array, not as a weak
scalar (``x_f32 * [1.0, 2.0]`` is float64). A NumPy scalar or a Python number with a sequence
follows Python's rules (``*`` repeats the sequence or raises)."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def scaled_by_a_tuple(x):
    return x * (1.0, 2.0, 3.0), (1.0, 2.0, 3.0) * x, x / (2, 4, 8)


def shifted_by_a_list(x):
    return x + [1, 2, 3], [1, 2, 3] - x, x - [[0.5], [1.5]]


def clipped_per_column(x):
    return np.maximum(x, [0, 1, 0]), np.minimum([2.5, 0, 1], x), np.where(x > 1, [10, 20, 30], x)


def compared_with_a_list(x):
    return x == [1.0, 2.0, 3.0], x < (2, 2, 2), x != [0, 0, 0]


def updated_in_place_by_a_list(x):
    x += [1, 2, 3]
    x *= (2, 2, 2)
    return x


def mixed_with_tensors(x):
    return x * [x[0], 1.0, 2.0], np.maximum(x, (x[1], 0, x[2])), x @ [1.0, x[0], 2]


def joined_with_numbers(x):
    return (
        np.array([x[0], 1.0, x[1]]),
        np.stack([x, [1.0, x[0], 2.0]]),
        np.stack([[x[0], 1.0], (2.0, x[1])]),
        np.concatenate([x, [1.0, x[2]]]),
        np.array([x, [0, 1, 2]]),
        np.vstack([x, [x[-1], 0, 1]]),
        np.hstack(([x[0], 2], x)),
    )


SAMPLES = [
    np.array([1.0, 2.0, 3.0]),
    np.array([0.5, -1.5, 4.0], np.float32),
    np.array([1, 2, 3], np.int8),
    np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32),
]


@pytest.mark.parametrize("x", SAMPLES, ids=lambda x: f"{x.dtype}{list(x.shape)}")
@pytest.mark.parametrize(
    "fn",
    [
        scaled_by_a_tuple,
        shifted_by_a_list,
        clipped_per_column,
        compared_with_a_list,
        updated_in_place_by_a_list,
        mixed_with_tensors,
        joined_with_numbers,
    ],
)
def test_sequence_operands_match_eager(fn, x):
    assert_like_eager(fn, x)


def test_a_list_of_python_floats_promotes_as_a_float64_array():
    result = dy2st.to_static(scaled_by_a_tuple)(np.ones(3, np.float32))
    assert all(r.dtype == np.float64 for r in result)
    graph = dy2st.to_static(shifted_by_a_list).graph(np.ones(3, np.float32), optimize=False)
    constants = [op.results[0].type for op in graph.walk() if op.name == "const"]
    assert any(str(t) == "i64[3]" for t in constants), constants


def ragged(x):
    return x + [[1.0], [1.0, 2.0]]


def ragged_with_tensor(x):
    return x + [[x[0]], [1.0, 2.0]]


def wrong_length(x):
    return x * (1.0, 2.0)


@pytest.mark.parametrize("fn", [ragged, ragged_with_tensor, wrong_length])
def test_sequences_numpy_refuses_raise_numpys_error_class(fn):
    assert_like_eager(fn, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(dy2st.GraphBuildError, match=r"test_sequence_operands\.py:\d+"):
        dy2st.to_static(fn)(np.array([1.0, 2.0, 3.0]))


def numpy_scalar_times_a_list(x):
    return x.sum() * [1.0, 2.0]


def numpy_scalar_plus_a_tuple(x):
    return x[0] + (1.0, 2.0), (1, 2) - x.max(), x.sum() == [6.0, 0.0]


def python_number_and_sequences(x):
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            n += 1
    return n == [1, 2], n != (1,), [3] == n


def python_number_plus_a_list(x):
    n = 0
    for i in range(x.shape[0]):
        if x[i] > 0:
            n += 1
    return n + [1, 2]


def python_float_times_a_tuple(x):
    s = 0.5
    for i in range(x.shape[0]):
        if x[i] > 0:
            s = s + 1.0
    return (1, 2) * s


@pytest.mark.parametrize(
    "fn",
    [
        numpy_scalar_times_a_list,
        numpy_scalar_plus_a_tuple,
        python_number_and_sequences,
        python_number_plus_a_list,
        python_float_times_a_tuple,
    ],
)
@pytest.mark.parametrize("x", [np.array([1.0, 2.0, 3.0]), np.array([1.0, -2.0, 3.0], np.float32)])
def test_scalars_with_sequences_follow_python(fn, x):
    assert_like_eager(fn, x)


def int_scalar_times_a_list(x):
    return x.sum() * [1.0, 2.0]


def test_repeating_a_list_by_a_tensor_count_is_refused():
    # Eagerly np.int64(6) * [1.0, 2.0] is the list repeated 6 times: the count is a run-time value.
    with pytest.raises(dy2st.TensorValueError, match="Python index"):
        dy2st.to_static(int_scalar_times_a_list)(np.array([1, 2, 3]))
