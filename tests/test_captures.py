"""Arrays read from globals and closures are graph captures, read by reference at every call.

In-place updates by the user are seen without a rebuild; rebinding the name to an array of the
same type is seen without a rebuild; rebinding to another shape or dtype rebuilds. Python scalars
read from globals are baked in and guarded: changing them rebuilds. Captures are never folded
into constants, even by the optimizing passes.
"""

from __future__ import annotations

import numpy as np
import pytest

import dy2st

W = np.ones((3, 2))
SCALE = 2.0
PARAMS = {"w": np.ones(3), "b": [np.zeros(3)]}


@pytest.fixture(autouse=True)
def restore_globals():
    global W, SCALE, PARAMS
    saved = W, SCALE, PARAMS
    yield
    W, SCALE, PARAMS = saved


def project(x):
    return x @ W * SCALE


def make_project():
    return dy2st.to_static(project)


def test_global_array_is_a_capture_not_a_constant():
    static = make_project()
    x = np.ones((4, 3))
    for graph in (static.graph(x, optimize=False), static.graph(x)):
        assert [v.name_hint for v in graph.captures] == ["W"]
        constants = [op for op in graph.walk() if op.name == "const"]
        assert all(np.ndim(op.attrs["value"]) == 0 for op in constants)  # only the scalar SCALE


def test_in_place_update_of_a_global_is_seen_on_the_next_call():
    global W
    W = np.ones((3, 2))
    static = make_project()
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(static(x), project(x))
    W *= 3
    W[0, 0] = -1
    np.testing.assert_array_equal(static(x), project(x))
    assert static.num_graphs == 1


def test_rebinding_a_global_to_a_new_array_is_seen():
    global W
    static = make_project()
    x = np.arange(12.0).reshape(4, 3)
    static(x)
    W = np.full((3, 2), 5.0)
    np.testing.assert_array_equal(static(x), project(x))
    assert static.num_graphs == 1


def test_rebinding_a_global_to_another_shape_or_dtype_rebuilds():
    global W
    static = make_project()
    x = np.arange(12.0).reshape(4, 3)
    static(x)
    W = np.ones((3, 5))
    result = static(x)
    assert result.shape == (4, 5)
    np.testing.assert_array_equal(result, project(x))
    W = np.ones((3, 5), np.float32)
    assert static(x).dtype == project(x).dtype
    assert static.num_graphs == 3


def test_python_scalar_global_change_rebuilds():
    global SCALE
    static = make_project()
    x = np.ones((4, 3))
    np.testing.assert_array_equal(static(x), project(x))
    SCALE = 10.0
    np.testing.assert_array_equal(static(x), project(x))
    assert static.num_graphs == 2
    SCALE = 2.0  # the first graph still fits
    static(x)
    assert static.num_graphs == 2


def test_arrays_in_a_global_container_are_captures():
    def affine(x):
        return x * PARAMS["w"] + PARAMS["b"][0]

    static = dy2st.to_static(affine)
    x = np.arange(3.0)
    np.testing.assert_array_equal(static(x), affine(x))
    PARAMS["w"][:] = 4.0
    PARAMS["b"][0] = np.full(3, 0.5)
    np.testing.assert_array_equal(static(x), affine(x))
    assert static.num_graphs == 1


def make_closure(weight):
    def apply(x):
        return x * weight

    def set_weight(new):
        nonlocal weight
        weight = new

    return apply, set_weight


def test_closure_arrays_are_captures_seen_by_reference():
    weight = np.ones(3)
    apply, set_weight = make_closure(weight)
    static = dy2st.to_static(apply)
    x = np.arange(3.0)
    np.testing.assert_array_equal(static(x), x)
    weight[:] = 2.0  # in place: the cell still holds the same array
    np.testing.assert_array_equal(static(x), x * 2)
    set_weight(np.full(3, 7.0))  # the cell rebound to a new array
    np.testing.assert_array_equal(static(x), x * 7)
    assert static.num_graphs == 1
    set_weight(np.full(4, 1.0))  # another shape: rebuilt
    with pytest.raises(dy2st.GraphBuildError, match="multiply"):
        static(x)  # x (3,) * weight (4,) does not broadcast, as in NumPy
    np.testing.assert_array_equal(static(np.arange(4.0)), np.arange(4.0))


def test_two_closures_of_one_function_have_separate_captures():
    apply_2, _ = make_closure(np.full(3, 2.0))
    apply_3, _ = make_closure(np.full(3, 3.0))
    x = np.arange(3.0)
    np.testing.assert_array_equal(dy2st.to_static(apply_2)(x), x * 2)
    np.testing.assert_array_equal(dy2st.to_static(apply_3)(x), x * 3)


class Model:
    def __init__(self):
        self.weight = np.ones(3)

    @dy2st.to_static
    def __call__(self, x):
        return x * self.weight


def test_attribute_arrays_of_self_are_captures():
    model = Model()
    x = np.arange(3.0)
    np.testing.assert_array_equal(model(x), x)
    model.weight += 1  # in place
    np.testing.assert_array_equal(model(x), x * 2)
    model.weight = np.full(3, 5.0)  # rebinding the attribute
    np.testing.assert_array_equal(model(x), x * 5)


def test_a_capture_read_in_a_helper_is_shared_with_the_caller():
    def helper(x):
        return x @ W

    def caller(x):
        return helper(x) + x @ W

    graph = dy2st.to_static(caller).graph(np.ones((2, 3)), optimize=False)
    assert [v.name_hint for v in graph.captures] == ["W"]
