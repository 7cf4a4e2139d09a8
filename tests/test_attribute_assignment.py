"""Assigning ndarray attributes inside a converted function: ``x.shape = s`` reshapes a fresh local
array in place as NumPy does, and is a clear error where dy2st cannot do exactly what NumPy does
(the caller's array, another name or a view can see it, a tensor if or loop would make its shape
depend on the path, or merging axes depends on the memory layout); ``dtype``, ``strides``,
``flat`` and ``data`` are refused naming the attribute. Complex parts: test_complex_parts.py."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


# --- x.shape = s where dy2st reproduces it -------------------------------------------------------
def split_a_fresh_array(x):
    a = np.arange(12.0) * x.sum()
    a.shape = (3, 4)
    return a, a.sum(axis=1)


def column_of_a_fresh_array(x):
    a = x * 2.0
    a.shape = (-1, 1)
    return a * np.arange(3.0)


def shape_from_a_list_and_an_int(x):
    a = x + 1.0
    a.shape = [2, 3]
    b = x[:1] * 2.0
    b.shape = 1
    c = np.zeros((1, 6))
    c.shape = (6,)
    return a, b, c


def update_after_the_reshape(x):
    a = x - 1.0
    a.shape = (2, 3)
    a[1] = 0.0
    a += 1.0
    return a


def reshape_in_a_tensor_loop_body(x, n):
    total = x[0] * 0.0  # a NumPy scalar also after zero iterations (docs/semantics.md)
    for i in range(n):
        block = x * i
        block.shape = (3, 2)
        total = total + block[:, 0].sum()
    return total


def reshape_in_a_tensor_branch(x):
    if x.sum() > 0:
        a = x * 2.0
        a.shape = (2, 3)
    else:
        a = np.ones((2, 3))
    return a


def same_shape_on_an_argument(x):
    x.shape = (6,)  # no change: NumPy allows it on any array
    return x.sum()


@pytest.mark.parametrize(
    ("fn", "extra"),
    [
        (split_a_fresh_array, ()),
        (column_of_a_fresh_array, ()),
        (shape_from_a_list_and_an_int, ()),
        (update_after_the_reshape, ()),
        (reshape_in_a_tensor_loop_body, (np.array(3),)),
        (reshape_in_a_tensor_loop_body, (np.array(0),)),
        (reshape_in_a_tensor_branch, ()),
        (same_shape_on_an_argument, ()),
    ],
)
def test_assigning_the_shape_of_a_fresh_local_array(fn, extra):
    assert_like_eager(fn, np.arange(6.0), *extra)


def test_assigning_the_shape_in_a_tensor_branch_not_taken():
    assert_like_eager(reshape_in_a_tensor_branch, -np.arange(6.0))


def test_a_reshaped_array_is_one_op_in_the_graph():
    ops = [op.name for op in dy2st.to_static(split_a_fresh_array).graph(np.arange(6.0)).walk()]
    assert ops.count("reshape") == 1


# --- x.shape = s where dy2st cannot reproduce it -------------------------------------------------
GLOBAL_ARRAY = np.arange(6.0)


def reshape_an_argument(x):
    x.shape = (2, 3)
    return x


def reshape_a_global(x):
    GLOBAL_ARRAY.shape = (2, 3)
    return x


def reshape_an_array_with_two_names(x):
    a = x * 2.0
    b = a
    a.shape = (2, 3)
    return b


def reshape_an_array_with_a_view(x):
    a = x * 2.0
    tail = a[3:]
    a.shape = (2, 3)
    return tail


def reshape_an_array_in_a_list(x):
    a = x * 2.0
    arrays = [a]
    a.shape = (2, 3)
    return arrays


def reshape_a_view(x):
    a = x * 2.0
    row = a[:4]
    row.shape = (2, 2)
    return a


def merge_axes(x):
    a = np.zeros((2, 3)) + x[0]
    a.shape = (6,)
    return a


def reshape_in_a_tensor_branch_an_array_made_before(x):
    a = x * 2.0
    if x[1] > 0:
        a.shape = (2, 3)
    return a


def reshape_in_a_tensor_branch_after_an_update(x):
    if x.sum() > 0:
        a = x * 2.0
        a[0] = 1.0
        a.shape = (2, 3)
    else:
        a = np.ones((2, 3))
    return a


def reshape_in_a_tensor_loop_an_array_made_before(x):
    a = x * 2.0
    i = 0
    while a.sum() > i:
        a.shape = (2, 3)
        i += 100
    return a


@pytest.mark.parametrize(
    ("fn", "why"),
    [
        (reshape_an_argument, "the caller"),
        (reshape_a_global, "the caller"),
        (reshape_an_array_with_two_names, "the variables 'a', 'b'"),
        (reshape_an_array_with_a_view, "the variables 'a', 'tail'"),
        (reshape_an_array_in_a_list, "the variables 'a', 'arrays'"),
        (reshape_a_view, "this array is a view of another array"),
        (merge_axes, "merges axes"),
        (reshape_in_a_tensor_branch_an_array_made_before, "made before the tensor if or loop"),
        (reshape_in_a_tensor_loop_an_array_made_before, "made before the tensor if or loop"),
        (reshape_in_a_tensor_branch_after_an_update, "has updated it in place"),
    ],
)
def test_assigning_the_shape_where_dy2st_cannot_is_a_clear_error(fn, why):
    with pytest.raises(dy2st.GraphBuildError, match="reshapes the array object in place") as info:
        dy2st.to_static(fn)(np.arange(6.0))
    message = str(info.value)
    assert why in message
    assert "test_attribute_assignment.py:" in message and ".shape = " in message
    assert "y = y.reshape(" in message
    assert GLOBAL_ARRAY.shape == (6,)


def wrong_size(x):
    a = x * 2.0
    a.shape = (4,)
    return a


def float_dimension(x):
    a = x * 2.0
    a.shape = (2.0, 3)
    return a


def shape_of_a_numpy_scalar(x):
    s = x.sum()
    s.shape = (1,)
    return s


@pytest.mark.parametrize(
    ("fn", "error", "text"),
    [
        (wrong_size, ValueError, "cannot reshape array of size 6 into shape (4,)"),
        (float_dimension, TypeError, "cannot be interpreted as an integer"),
        (shape_of_a_numpy_scalar, AttributeError, "attribute 'shape' of 'numpy.generic' objects is not writable"),
    ],
)
def test_shapes_numpy_refuses_raise_numpys_error(fn, error, text):
    assert_like_eager(fn, np.arange(6.0))
    with pytest.raises(error) as info:
        dy2st.to_static(fn)(np.arange(6.0))
    assert isinstance(info.value, dy2st.GraphBuildError)
    assert text in str(info.value)


class _Box:
    pass


def view_kept_where_dy2st_does_not_look(x):
    a = x * 2.0
    box = _Box()
    box.tail = a[3:]
    a.shape = (2, 3)
    return box.tail


def test_a_view_of_a_reshaped_array_is_refused_not_stale():
    # The view is held by an object's attribute, which the reference check does not search: the
    # view itself notices that its base changed shape.
    with pytest.raises(dy2st.GraphBuildError, match="shape was assigned after the view was taken"):
        dy2st.to_static(view_kept_where_dy2st_does_not_look)(np.arange(6.0))


# --- other attributes ----------------------------------------------------------------------------
def assign_dtype(x):
    a = x * 2.0
    a.dtype = np.int64
    return a


def assign_strides(x):
    a = x * 2.0
    a.strides = (16,)
    return a


def assign_flat(x):
    a = x * 2.0
    a.flat = 3.0
    return a


def assign_data(x):
    a = x * 2.0
    a.data = bytearray(48)
    return a


@pytest.mark.parametrize(
    ("fn", "error", "text"),
    [
        (assign_dtype, dy2st.UnsupportedOpError, "assigning .dtype of a symbolic tensor is not supported"),
        (assign_strides, dy2st.UnsupportedOpError, "assigning .strides of a symbolic tensor is not supported"),
        (assign_flat, dy2st.UnsupportedOpError, "assigning .flat of a symbolic tensor is not supported"),
        (assign_data, AttributeError, "attribute 'data' of 'numpy.ndarray' objects is not writable"),
    ],
)
def test_assigning_other_attributes_is_refused_naming_them(fn, error, text):
    with pytest.raises(error) as info:
        dy2st.to_static(fn)(np.arange(6.0))
    assert isinstance(info.value, dy2st.GraphBuildError)
    message = str(info.value)
    assert text in message
    assert "test_attribute_assignment.py:" in message and "a." in message


def assign_ndim(x):
    a = x * 2.0
    a.ndim = 2
    return a


def assign_transpose(x):
    a = x * 2.0
    a.T = a
    return a


@pytest.mark.parametrize("fn", [assign_ndim, assign_transpose])
def test_assigning_a_read_only_attribute_is_numpys_attribute_error(fn):
    assert_like_eager(fn, np.arange(6.0))
    with pytest.raises(AttributeError, match="of 'numpy.ndarray' objects is not writable") as info:
        dy2st.to_static(fn)(np.arange(6.0))
    assert isinstance(info.value, dy2st.GraphBuildError)
    assert "test_attribute_assignment.py:" in str(info.value)
