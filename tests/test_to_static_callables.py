"""to_static on what users pass it besides plain functions: bound methods, classmethods, callable
objects (converted and kept bound), and NumPy callables (refused at once, clearly)."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.errors import ConversionError


class Model:
    def __init__(self, w):
        self.w = w

    def forward(self, x):
        if x.sum() > 0:
            return x @ self.w
        return -x @ self.w

    def __call__(self, x):
        return self.forward(x) * 2

    @classmethod
    def doubled(cls, x):
        return x * 2


def test_a_bound_method_keeps_its_instance():
    model = Model(np.eye(3) * 2)
    x = np.arange(3.0)
    static = dy2st.to_static(model.forward)
    np.testing.assert_array_equal(static(x), model.forward(x))
    np.testing.assert_array_equal(static(-x), model.forward(-x))
    assert static.num_graphs == 1 and "convert_ifelse" in static.code


def test_a_classmethod_and_a_callable_object_convert():
    x = np.arange(3.0)
    np.testing.assert_array_equal(dy2st.to_static(Model.doubled)(x), Model.doubled(x))
    model = Model(np.eye(3))
    np.testing.assert_array_equal(dy2st.to_static(model)(x), model(x))


@pytest.mark.parametrize("fn", [np.tanh, np.sum, len])
def test_numpy_callables_and_builtins_are_refused_at_once(fn):
    with pytest.raises(ConversionError, match="to_static converts Python functions"):
        dy2st.to_static(fn)
