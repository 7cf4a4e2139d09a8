"""In-place updates of arrays held in attributes and read-only containers (``self.w += x``,
``obj.buf *= 2``, ``PARAMS["w"] -= g``): Python stores back the very array it updated, so the
update happens (written back into the caller's array at every call) and the store changes
nothing. Storing any other value is still refused: it would run once, while the graph is built."""

import copy

import numpy as np
import pytest

import dy2st
from eager_parity import same_value


class Accumulator:
    def __init__(self):
        self.w = np.zeros(3)
        self.count = np.zeros((), np.int64)
        self.layers = [np.ones(3), np.full(3, 2.0)]
        self.params = {"b": np.zeros(3, np.float32)}

    def step(self, x):
        self.w += x
        self.count += 1
        return self.w.sum()

    def write_items(self, x):
        self.w[1] = x[0]
        self.w[::2] *= 2
        return self.w

    def in_a_tensor_loop(self, x, n):
        i = 0
        while i < n:
            self.w += x
            i += 1
        return self.w

    def under_a_tensor_if(self, x):
        if x.sum() > 0:
            self.w -= x
        return self.w

    def containers(self, x):
        self.layers[1] *= x
        self.params["b"] += 0.5
        return self.layers[0] + self.params["b"]


class Buffer:
    def __init__(self):
        self.buf = np.ones(3)


GLOBAL_BUFFER = Buffer()
PARAMS = {"w": np.ones(3), "steps": [np.zeros(2)]}


def doubles_an_argument_buffer(obj, x):
    obj.buf *= 2
    return obj.buf + x


def updates_global_objects(x):
    GLOBAL_BUFFER.buf *= 2
    PARAMS["w"] -= x
    PARAMS["steps"][0] += 1
    return x


def _state(obj):
    return {k: copy.deepcopy(v) for k, v in vars(obj).items()}


@pytest.mark.parametrize(
    "method, args",
    [
        (Accumulator.step, (np.array([1.0, 2.0, 3.0]),)),
        (Accumulator.write_items, (np.array([5.0, 6.0, 7.0]),)),
        (Accumulator.in_a_tensor_loop, (np.array([1.0, 2.0, 3.0]), np.array(2))),
        (Accumulator.under_a_tensor_if, (np.array([1.0, -2.0, 3.0]),)),
        (Accumulator.containers, (np.array([1.0, -2.0, 3.0]),)),
    ],
)
def test_attribute_arrays_updated_in_place_match_eager(method, args):
    eager_obj, converted_obj = Accumulator(), Accumulator()
    converted = dy2st.to_static(method)
    for _ in range(3):  # the graph built at the first call updates the arrays at every call
        same_value(converted(converted_obj, *copy.deepcopy(args)), method(eager_obj, *copy.deepcopy(args)))
        same_value(_state(converted_obj), _state(eager_obj), "attributes")
    assert converted.num_graphs == 1


def test_the_attribute_still_holds_the_same_array():
    obj = Accumulator()
    w = obj.w
    dy2st.to_static(Accumulator.step)(obj, np.ones(3))
    assert obj.w is w and obj.w.tolist() == [1.0, 1.0, 1.0]


def test_an_object_argument_buffer():
    eager_obj, converted_obj = Buffer(), Buffer()
    converted = dy2st.to_static(doubles_an_argument_buffer)
    for _ in range(2):
        x = np.array([1.0, 2.0, 3.0])
        same_value(converted(converted_obj, x), doubles_an_argument_buffer(eager_obj, x))
        same_value(converted_obj.buf, eager_obj.buf)


def test_global_objects_and_dicts():
    converted = dy2st.to_static(updates_global_objects)
    x = np.array([1.0, 2.0, 3.0])
    for calls in (1, 2):
        converted(x)
        assert GLOBAL_BUFFER.buf.tolist() == [2.0**calls] * 3
        assert PARAMS["w"].tolist() == (1 - calls * x).tolist()
        assert PARAMS["steps"][0].tolist() == [calls, calls]


class Rebinds:
    def __init__(self):
        self.w = np.zeros(3)
        self.n = 0
        self.s = np.float64(1.0)
        self.layers = [np.zeros(3)]

    def new_array(self, x):
        self.w = self.w * 2
        return x

    def python_number(self, x):
        self.n += 1
        return x

    def numpy_scalar(self, x):
        self.s += 1  # NumPy scalars are immutable: this rebinds the attribute
        return x

    def list_item(self, x):
        self.layers[0] = x
        return x


@pytest.mark.parametrize(
    "method, snippet",
    [
        (Rebinds.new_array, "self.w = self.w * 2"),
        (Rebinds.python_number, "self.n += 1"),
        (Rebinds.numpy_scalar, "self.s += 1"),
        (Rebinds.list_item, "self.layers[0] = x"),
    ],
)
def test_rebinding_an_attribute_or_item_is_still_refused(method, snippet):
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(method)(Rebinds(), np.ones(3))
    assert "test_attribute_updates.py" in str(info.value) and snippet in str(info.value)
