"""Python values a converted function reads from outside (globals, closures, attributes) are baked
into its graph; a change must rebuild the graph, on the fast and the general call path."""

import numpy as np
import pytest

import dy2st

CFG = {"scale": 2.0, "shift": [1.0, 0.0]}
FACTORS = [1.0, 2.0]
OFFSETS = (0.5, 0.25)
ACT = np.tanh
DTYPE = np.float32
LOG: list[str] = []


def scaled(x):
    return x * CFG["scale"] + CFG["shift"][0]


def by_list(x):
    return x * FACTORS[1]


def by_tuple(x):
    return x + OFFSETS[0]


def activated(x):
    return ACT(x)


def cast(x):
    return x.astype(DTYPE)


def logged(x):
    LOG.append("staged")
    return x + 1.0


def _calls(static, x):
    """The fast path (positional ndarray) and the general one (a keyword)."""
    return static(x), static(x=x)


def _check_rebuilds_on_change(fn, change, restore):
    static = dy2st.to_static(fn)
    x = np.linspace(0.0, 1.0, 4)
    try:
        for result in _calls(static, x):
            np.testing.assert_array_equal(result, fn(x))
        change()
        for result in _calls(static, x):
            assert result.dtype == fn(x).dtype
            np.testing.assert_array_equal(result, fn(x))
    finally:
        restore()
    for result in _calls(static, x):  # back to the first graph
        np.testing.assert_array_equal(result, fn(x))
    assert static.num_graphs == 2


def test_a_dict_changed_in_place_rebuilds():
    _check_rebuilds_on_change(scaled, lambda: CFG.update(scale=3.0), lambda: CFG.update(scale=2.0))


def test_a_nested_list_in_a_dict_changed_in_place_rebuilds():
    _check_rebuilds_on_change(
        scaled, lambda: CFG["shift"].__setitem__(0, -1.0), lambda: CFG["shift"].__setitem__(0, 1.0)
    )


def test_a_list_changed_in_place_rebuilds():
    _check_rebuilds_on_change(by_list, lambda: FACTORS.__setitem__(1, 5.0), lambda: FACTORS.__setitem__(1, 2.0))


def test_a_rebound_tuple_rebuilds():
    def change():
        global OFFSETS
        OFFSETS = (1.5, 0.25)

    def restore():
        global OFFSETS
        OFFSETS = (0.5, 0.25)

    _check_rebuilds_on_change(by_tuple, change, restore)


def test_a_rebound_function_rebuilds():
    def change():
        global ACT
        ACT = np.sin

    def restore():
        global ACT
        ACT = np.tanh

    _check_rebuilds_on_change(activated, change, restore)


def test_a_rebound_dtype_rebuilds():
    def change():
        global DTYPE
        DTYPE = np.float16

    def restore():
        global DTYPE
        DTYPE = np.float32

    _check_rebuilds_on_change(cast, change, restore)


@pytest.mark.parametrize("make_value", [lambda: np.tanh, lambda: {"k": 2.0}])
def test_closures_and_attributes_are_guarded_too(make_value):
    holder = [make_value()]

    def closure(x):
        value = holder[0]
        return value(x) if callable(value) else x * value["k"]

    class Model:
        def __init__(self):
            self.value = make_value()

        @dy2st.to_static
        def __call__(self, x):
            return self.value(x) if callable(self.value) else x * self.value["k"]

    x = np.ones(3)
    static, model = dy2st.to_static(closure), Model()
    static(x), model(x)
    holder[0] = np.sin if callable(holder[0]) else {"k": 5.0}
    model.value = holder[0]
    expected = closure(x)
    np.testing.assert_array_equal(static(x), expected)
    np.testing.assert_array_equal(model(x), expected)


def test_a_list_the_function_appends_to_is_not_a_guard():
    """A log the function writes while it is staged is a side effect, not a value the graph
    depends on: guarding it would rebuild at every call."""
    static = dy2st.to_static(logged)
    LOG.clear()
    for shape in [(3,), (4,), (3,), (4,)]:
        static(np.zeros(shape))
    assert LOG == ["staged", "staged"] and static.num_graphs == 2
