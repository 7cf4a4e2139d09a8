"""to_static on what users pass it besides plain functions: bound methods, classmethods, callable
objects (converted and kept bound), lambdas, functools.partial objects (converted with their bound
arguments), and NumPy callables (refused at once, clearly)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import dy2st
from dy2st.errors import ConversionError
from eager_parity import assert_like_eager


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


# --- lambdas: their source is found by compiling each lambda on their line ------------------------
SCALE = 3.0
relu_scaled = lambda x: np.maximum(x, 0) * SCALE
magnitude = lambda v, *, floor=0.0: v if v.sum() > floor else -v
add_one, add_two = lambda x: x + 1, lambda x: x + 2
curried = lambda k: lambda x: x * k


def test_a_lambda_converts():
    x = np.array([-1.0, 2.0, 0.5])
    assert_like_eager(relu_scaled, x)
    assert_like_eager(magnitude, x)
    assert_like_eager(magnitude, -x)
    static = dy2st.to_static(magnitude)
    assert static.code.startswith("def <lambda>(v, *, floor=0.0):\n    return _dy2st.convert_ifexp(")
    assert "cond" in [op.name for op in static.graph(x).walk()]


def test_lambdas_sharing_a_line_each_convert_to_themselves():
    x = np.arange(3.0)
    assert_like_eager(add_one, x)
    assert_like_eager(add_two, x)
    assert_like_eager(curried(4.0), x)
    assert dy2st.to_static(add_two).code == "def <lambda>(x):\n    return x + 2\n"


def test_a_lambda_typed_in_an_interactive_session_is_refused():
    namespace: dict = {}
    exec(compile("f = lambda x: x + 1\n", "<stdin>", "exec"), namespace)
    with pytest.raises(ConversionError, match="cannot read the source of the lambda: it was not defined in a file"):
        dy2st.to_static(namespace["f"])(np.ones(2))


def test_lambdas_that_cannot_be_told_apart_are_refused(tmp_path):
    # Code made by exec from other text than its file's, with two lambdas on the line: compiling
    # them cannot say which one the code is, so dy2st does not guess.
    path = tmp_path / "generated.py"
    path.write_text("pair = (lambda x: x * 10, lambda x: x * 20)\n")
    namespace: dict = {"__name__": "generated_by_exec"}
    exec(compile("pair = (lambda x: x + 1, lambda x: x + 2)\n", str(path), "exec"), namespace)
    with pytest.raises(ConversionError, match="cannot tell which of the 2 lambdas on line 1 this is") as info:
        dy2st.to_static(namespace["pair"][1])(np.ones(2))
    assert info.value.note == "define the function with 'def' (or give the lambda a line of its own)"


# --- functools.partial: the function converted, the bound arguments passed at every call -------------
def affine(x, w, *, bias=0.0, relu=False):
    y = x * w + bias
    if relu:  # a Python flag: decided while the graph is built
        y = np.maximum(y, 0.0)
    if y.sum() > 0:  # a tensor condition: a cond op
        return y
    return -y


def test_a_partial_keeps_its_bound_arguments():
    x = np.array([-2.0, 0.5, 3.0])
    assert_like_eager(functools.partial(affine, w=np.float64(2.0), bias=-1.0), x)
    assert_like_eager(functools.partial(affine, bias=0.5, relu=True), x, np.full(3, -1.0))
    scale_by_three = functools.partial(affine, np.ones(3))
    assert_like_eager(scale_by_three, np.float64(3.0))


def test_a_partial_call_may_override_its_keywords_as_partial_does():
    x = np.array([-2.0, 0.5, 3.0])
    partial = functools.partial(affine, w=2.0, bias=1.0)
    static = dy2st.to_static(partial)
    dy2st_result, eager_result = static(x, bias=-5.0), partial(x, bias=-5.0)
    np.testing.assert_array_equal(dy2st_result, eager_result)
    assert "convert_ifelse" in static.code
    assert [op.name for op in static.graph(x).walk()].count("cond") == 1


def test_a_bound_array_is_a_graph_input_read_at_every_call():
    w = np.array([1.0, 2.0, 3.0])
    static = dy2st.to_static(functools.partial(affine, w=w))
    x = np.ones(3)
    np.testing.assert_array_equal(static(x), affine(x, w))
    w *= -1.0  # the partial holds this array: the next call reads it, as the eager partial does
    np.testing.assert_array_equal(static(x), affine(x, w))
    assert static.num_graphs == 1


def test_a_partial_of_a_method_and_of_a_lambda():
    x = np.array([1.0, -2.0])
    model = Model(np.eye(2) * 3)
    assert_like_eager(functools.partial(model.forward), x)
    assert_like_eager(functools.partial(lambda v, k: v if v.sum() > k else v * k, k=-0.5), x)


def test_a_partial_called_inside_a_converted_function_is_converted():
    half_affine = functools.partial(affine, w=0.5)

    def model(x):
        return half_affine(x, bias=1.0) * 2.0

    assert_like_eager(model, np.array([1.0, -4.0]))
    assert_like_eager(model, np.array([-1.0, -4.0]))


def test_a_converted_function_is_returned_as_it_is():
    static = dy2st.to_static(affine)
    assert dy2st.to_static(static) is static
    assert_like_eager(affine, np.ones(2), 2.0, converted=dy2st.to_static(static))


# --- decorated functions: the decorator's wrapper is what the name calls, so it is converted ---------
def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) * 2.0

    return wrapper


@doubled
def shifted(x):
    if x.sum() > 0:
        return x + 1.0
    return x - 1.0


@doubled
@dy2st.to_static
def shifted_static(x):
    return x + 1.0


def test_a_function_decorated_with_functools_wraps_keeps_its_decorator():
    assert_like_eager(shifted, np.ones(2))
    assert_like_eager(shifted, -np.ones(2))
    assert dy2st.to_static(shifted).code == (
        "def wrapper(*args, **kwargs):\n    return _dy2st.convert_call(fn)(*args, **kwargs) * 2.0\n"
    )


def test_a_decorator_over_to_static_is_converted_with_it():
    np.testing.assert_array_equal(dy2st.to_static(shifted_static)(np.ones(2)), np.full(2, 4.0))


# --- super() without arguments: converted code has no __class__ cell, so it is named -----------------
class Scaled(Model):
    def forward(self, x):
        y = super().forward(x)
        if y.sum() > 0:  # a tensor condition: this super() runs in a generated branch function
            return super().forward(y) * 0.5
        return y

    @classmethod
    def doubled(cls, x):
        return super().doubled(x) + 1.0


def test_methods_calling_super_convert():
    model = Scaled(np.eye(3) * 2)
    x = np.arange(3.0)
    assert_like_eager(model.forward, x)
    assert_like_eager(model.forward, -x)
    assert_like_eager(model, x)  # Model.__call__ calls self.forward: Scaled's, converted
    assert_like_eager(Scaled.doubled, x)
    assert "super(__class__, self).forward" in dy2st.to_static(model.forward).code


# --- private names: Python mangles them inside a class, converted code is compiled outside one -------
class _Private:
    def __init__(self):
        self.__scale = 3.0

    def __helper(self, x):
        return x * self.__scale

    def forward(self, x, __shift=1.0):
        def inner(v, __k=2.0):
            return v * __k

        if x.sum() > 0:
            return self.__helper(x) + __shift
        return inner(x)


def test_private_names_of_a_method_are_mangled_as_python_does():
    model = _Private()
    x = np.arange(3.0)
    assert_like_eager(model.forward, x)
    assert_like_eager(model.forward, -x)
    code = dy2st.to_static(model.forward).code
    assert code.startswith("def forward(self, x, _Private__shift=1.0):")
    assert "self._Private__helper" in code and "self.__helper" not in code
