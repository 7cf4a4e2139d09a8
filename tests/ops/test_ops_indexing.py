"""Indexing through to_static == eager NumPy: ints, slices, None, Ellipsis, integer tensor indices."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, sample

import dy2st


def basic_indexing(x):
    return (
        x[0],
        x[-1],
        x[1, 2],
        x[0, -1, 3],
        x[1:],
        x[:, ::2],
        x[::-1, 1:3, None],
        x[..., 0],
        x[None, ..., 1:],
        x[:, None, :, None],
        x[1, ..., None],
        x[()],
        x[np.newaxis],
        x[0][1][2],
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_basic_indexing(dtype):
    assert_equivalent(basic_indexing, sample((2, 3, 4), dtype))


def tensor_indices(x, i, rows, cols):
    return x[i], x[rows], x[rows, cols], x[:, cols], x[rows[:, None], cols], x[i, 1:], x[rows, ..., 0]


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.uint8])
def test_integer_tensor_indices(index_dtype):
    x = sample((4, 5, 3), np.float32)
    i = np.array(2, index_dtype)
    rows = np.array([0, 3, 1], index_dtype)
    cols = np.array([4, 0, 2], index_dtype)
    assert_equivalent(tensor_indices, x, i, rows, cols)


def gather_by_a_part(x, idx):
    return x[idx[:1]], x[idx[1:]]


def test_an_empty_index_array_into_an_empty_axis_is_an_empty_gather():
    # Any index into an empty axis is out of bounds, but an empty index array names none.
    assert_equivalent(gather_by_a_part, np.zeros(0), np.zeros(0, np.int64))
    assert_equivalent(gather_by_a_part, np.zeros((0, 2), np.float32), np.zeros(0, np.uint8))


def concrete_indices(x):
    return x[[0, 2]], x[np.array([1, 1])], x[np.array([True, False, True])], x[:, [True, False]]


def test_concrete_list_array_and_mask_indices():
    assert_equivalent(concrete_indices, sample((3, 2), np.int64))


def negative_tensor_index(x, i):
    return x[i]


def test_negative_integer_tensor_index():
    assert_equivalent(negative_tensor_index, sample((4, 2), np.float64), np.array(-1))
    assert_equivalent(negative_tensor_index, sample((4, 2), np.float64), np.array([-1, -4]))


def set_items(x, v, i):
    x[0] = 1
    x[1:, 0] = v[0]
    x[i] = 7
    x[:, -1] = v
    x[..., 1] += 2
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_subscript_assignment(dtype):
    assert_equivalent(set_items, sample((3, 3), dtype), sample((3,), dtype, 1), np.array(2))


def set_with_leading_unit_axes(x, v):
    x[0] = v
    return x


def test_assigned_value_may_have_leading_unit_axes_like_numpy():
    assert_equivalent(set_with_leading_unit_axes, sample((2, 3), np.float64), sample((1, 1, 3), np.float64))


def boolean_tensor_index(x):
    return x[x > 0]


def float_tensor_index(x, i):
    return x[i]


def tensor_slice_bound(x, n):
    return x[:n]


def out_of_range(x):
    return x[5]


def test_indexing_errors_name_the_line():
    x = np.array([1.0, -1.0, 2.0])
    np.testing.assert_array_equal(dy2st.to_static(boolean_tensor_index)(x), x[x > 0])  # a data-dependent size
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(float_tensor_index)(np.ones(3), np.array(1.0))
    assert_error_at(info.value, float_tensor_index, "x[i]", "only integer tensors")
    np.testing.assert_array_equal(dy2st.to_static(tensor_slice_bound)(np.ones(3), np.array(2)), np.ones(2))
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(out_of_range)(np.ones(3))
    assert_error_at(info.value, out_of_range, "x[5]", "index 5 is out of bounds")


def index_and_slice(x):
    return x[1], x[1:], x[:2], x[::2], x[:, 1:3:2]


def test_printed_index_templates_tell_slices_from_integers():
    text = str(dy2st.to_static(index_and_slice).graph(np.ones((4, 4)), optimize=False))
    for template in (
        "{template=(1,)}",
        "{template=(1:,)}",
        "{template=(:2,)}",
        "{template=(::2,)}",
        "{template=(:, 1:3:2)}",
    ):
        assert template in text, text


def takes(x, idx):
    return np.take(x, idx), np.take(x, idx, axis=1), x.take(idx, axis=-1), np.take(x, [0, 2], axis=0), x.take(1)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_take(dtype):
    assert_equivalent(takes, sample((3, 4), dtype), np.array([[0, 3], [-1, 2]]))


def views_and_elements(x):
    view = x[0, ...]
    alias = view
    view += 1  # a 0-d view: the update goes into x, and the alias sees it
    return alias, x


def elements_are_scalars(x):
    element = x[0, 1]
    alias = element
    element += 1  # a NumPy scalar: rebinding leaves the alias and x alone
    return alias, element, x


def test_full_integer_index_gives_a_scalar_and_ellipsis_a_view():
    assert_equivalent(elements_are_scalars, sample((2, 3), np.float64))
    assert_equivalent(views_and_elements, sample((2, 3), np.float64))


def list_of_tensor_indices(x, i, j):
    return x[[i, j]], x[[i, 0], [1, j]], x[:, [j, j, i]]


def test_lists_holding_integer_tensors_index_like_arrays():
    assert_equivalent(list_of_tensor_indices, sample((4, 3), np.float32), np.array(2), np.array(1))


def augmented_subscripts(x, v, i, flag, n):
    x[0] += 1
    x[1:, 0] *= 2
    x[i] -= v
    row = x[2]
    row += 10  # an update through a view reaches x
    x[..., 1] += row[1]
    if flag > 0:
        x[1] += 100
    k = 0
    while k < n:
        x[k % 3, 2] += k
        k += 1
    for j in range(2):
        x[j, j] /= 2
    x[[0, 2], 3] += 5  # advanced indexing: a copy updated, then written back
    return x


@pytest.mark.parametrize("flag", [0, 1])
def test_augmented_subscript_assignment_updates_the_array(flag):
    assert_equivalent(
        augmented_subscripts,
        sample((3, 4), np.float64),
        sample((4,), np.float64, 1),
        np.array(1),
        np.array(flag),
        np.array(4),
    )


def stale_view(x):
    row = x[0]
    x[1] += 1
    return row


def reshaped_view_update(x):
    flat = x.reshape(-1)
    flat += 1
    return x


def test_a_view_sees_later_updates_of_its_base():
    assert_equivalent(stale_view, sample((2, 2), np.float64))


def test_updating_a_reshape_numpy_may_copy_is_refused():
    # x.reshape(-1) is a view of a C-ordered x but a copy of a transposed one: which array the
    # update reaches depends on a layout dy2st does not know.
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(reshaped_view_update)(np.ones((2, 2)))
    assert_error_at(info.value, reshaped_view_update, "flat += 1", "may share memory with another one")


def mutate_argument(x, i):
    x[i] += 1
    row = x[0]
    row *= 3
    return x.sum()


def test_augmented_subscript_assignment_mutates_the_callers_array_like_numpy():
    eager_x, static_x = sample((2, 3), np.float64), sample((2, 3), np.float64)
    assert mutate_argument(eager_x, np.array(1)) == dy2st.to_static(mutate_argument)(static_x, np.array(1))
    np.testing.assert_array_equal(static_x, eager_x)


def view_updated_in_branches(x, flag):
    row = x[0]
    if flag > 0:
        row *= 2
    else:
        row -= 1
    return x


def view_updated_in_loop(x, n):
    row = x[0]
    k = 0
    while k < n:
        row += 1
        x[1] += row
        k += 1
    return x


@pytest.mark.parametrize("flag", [0, 1])
def test_updates_through_a_view_inside_converted_control_flow(flag):
    assert_equivalent(view_updated_in_branches, sample((2, 3), np.float64), np.array(flag))
    assert_equivalent(view_updated_in_loop, sample((2, 3), np.float64), np.array(flag + 2))


def view_used_after_branch(x, flag):
    row = x[0]
    if flag > 0:
        row *= 2
    return row


@pytest.mark.parametrize("flag", [0, 1])
def test_a_view_used_after_control_flow_updated_it_sees_the_update(flag):
    assert_equivalent(view_used_after_branch, sample((2, 3), np.float64), np.array(flag))


def chained_views(x, i):
    x[0][1] += 5
    x[1][i] *= 3
    r = x[2]
    r[0] -= 7
    for row in x:
        row += 1
    return x


def test_updates_through_views_of_views_and_iterated_rows():
    assert_equivalent(chained_views, sample((3, 3), np.float64), np.array(2))


# --- arrays the function makes from constants ----------------------------------------------------
def table_lookups(x):
    table = np.array([0.5, 1.5, 2.5, 3.5, 4.5])
    totals = np.array([0.0, 0.0])
    totals[0] = x.sum()  # a tensor written into an array made from a list
    table[x > 0] = 0.0  # a tensor mask into it
    picked = np.asarray([1.0, 2.0, 3.0, 4.0, 5.0])[np.argsort(x)]
    return table, totals, picked, table[x.argmax()]


@pytest.mark.parametrize("x", [np.array([1.0, -2.0, 3.0, 0.5, -1.0]), np.array([-1.0, -2.0, -3.0, 0.0, 4.0])])
def test_arrays_made_from_lists_take_tensor_indices_and_values(x):
    assert_equivalent(table_lookups, x)


def repeated_table(x):
    table = np.array([1.0, 2.0, 3.0])
    table[0] = table[0] + x[0]  # must not leak into the next call's table
    return table


def test_an_array_made_from_a_list_is_new_at_every_run():
    converted = dy2st.to_static(repeated_table)
    for _ in range(3):
        np.testing.assert_array_equal(converted(np.array([10.0])), [11.0, 2.0, 3.0])


def known_masks(x):
    return x[np.array([True, False, True, False, True])], x[np.arange(5) % 2 == 1]


def test_masks_made_from_constants_have_static_counts():
    graph = dy2st.to_static(known_masks).graph(np.ones(5))
    assert [str(v.type) for v in graph.outputs] == ["f64[3]", "f64[2]"]
    assert_equivalent(known_masks, np.arange(5.0))


def mask_of_the_wrong_length(x):
    return x[np.ones(4, bool)]


def test_a_known_mask_of_the_wrong_length_is_numpys_index_error_at_the_line():
    with pytest.raises(IndexError) as info:
        dy2st.to_static(mask_of_the_wrong_length)(np.ones(5))
    assert_error_at(info.value, mask_of_the_wrong_length, "x[np.ones(4, bool)]", "boolean index did not match")


def add_at_everywhere(x, counts, i):
    np.add.at(counts, i, 1.5)  # an argument: the caller sees it updated (int64 takes 1.5 as 1)
    y = x * 2.0
    np.add.at(y[1:], [0, 0, 2], x[:3])  # through a view: the base takes the update
    np.add.at(y, (np.array([0, 0]),), x[1])
    return y


def test_np_add_at_is_staged_and_updates_arguments_and_bases():
    x = np.arange(5.0)
    counts, want_counts = np.zeros(4, np.int64), np.zeros(4, np.int64)
    i = np.array([1, 1, 3])
    got = dy2st.to_static(add_at_everywhere)(x, counts, i)
    want = add_at_everywhere(x, want_counts, i)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(counts, want_counts)
    graph = dy2st.to_static(add_at_everywhere).graph(x, np.zeros(4, np.int64), i)
    assert "numpy_call" not in str(graph) and "index_add" in str(graph)
