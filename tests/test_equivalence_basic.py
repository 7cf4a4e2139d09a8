"""Whole converted functions give eager NumPy's results: values, shapes, dtypes and structure.

Individual ops are covered deeply by the ops tests; here the subject is the function boundary:
nested arguments and results, keywords and defaults, methods, helper calls, in-place updates of
arguments, and ownership of returned arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

import dy2st


def assert_same(got, want) -> None:
    """Same structure, same container and array types, same shapes and dtypes, equal values."""
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            assert_same(got[key], want[key])
    elif isinstance(want, (np.ndarray, np.generic)):
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, want)
    else:
        assert got == want


def check(fn, *args, **kwargs):
    """Run ``fn`` eagerly and converted on copies of the same arguments; compare everything."""
    want = fn(*_copy(args), **_copy(kwargs))
    got = dy2st.to_static(fn)(*_copy(args), **_copy(kwargs))
    assert_same(got, want)
    return got


def _copy(tree):
    if isinstance(tree, np.ndarray):
        return tree.copy()
    if isinstance(tree, tuple):
        return tuple(_copy(x) for x in tree)
    if isinstance(tree, list):
        return [_copy(x) for x in tree]
    if isinstance(tree, dict):
        return {k: _copy(v) for k, v in tree.items()}
    return tree


rng = np.random.default_rng(0)


def array(shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# --- dtypes, broadcasting, Python scalars --------------------------------------------------
def poly(x, y):
    return x * y + x - y, (x * 2) // 3 if x.dtype.kind == "i" else x * 2 / 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_arithmetic_per_dtype(dtype):
    check(poly, array((3, 4), dtype), array((3, 4), dtype))


@pytest.mark.parametrize("shape_x, shape_y", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((), (5,))])
def test_broadcasting_between_arguments(shape_x, shape_y):
    check(poly, array(shape_x, np.float32), array(shape_y, np.float32))


def mixed(a, b):
    return a + b, a * 1.5, b + 1, a > b


@pytest.mark.parametrize(
    "dtype_a, dtype_b", [(np.float32, np.float64), (np.int64, np.float32), (np.int64, np.bool_), (np.float32, np.int64)]
)
def test_promotion_between_dtypes(dtype_a, dtype_b):
    check(mixed, array((4,), dtype_a), array((4,), dtype_b))


def weak_scalars(x, s):
    return x * s, x + 2, x / 2, 3 - x, x**2


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("scalar", [2, 0.5, True])
def test_python_scalars_are_weakly_typed(dtype, scalar):
    got = check(weak_scalars, array((5,), dtype), scalar)
    assert got[1].dtype == dtype  # x + 2 keeps x's dtype (NumPy 2 promotion)


def logic(m, n):
    return m & n, m | ~n, m ^ n, (m == n).astype(np.int64)


def test_bool_arrays():
    check(logic, array((6,), np.bool_), array((6,), np.bool_))


def test_zero_d_arrays_and_numpy_scalars():
    result = check(mixed, np.array(2.5, np.float32), np.float64(4.0))
    assert all(isinstance(r, np.generic) for r in result)  # 0-d results are NumPy scalars, as in NumPy


# --- containers, keywords, defaults --------------------------------------------------------
def containers(pair, items, params):
    a, b = pair
    total = items[0] + items[1]
    return {"sum": a + b, "scaled": params["w"] * total}, [a - b, total], (params["b"],)


def test_tuples_lists_and_dicts_in_arguments_and_results():
    pair = (array((3,), np.float32), array((3,), np.float32))
    items = [array((2, 3), np.float64), array((3,), np.float64)]
    params = {"w": array((3,), np.float32), "b": array((), np.float32)}
    check(containers, pair, items, params)


def keywords(x, *, scale=2.0, shift=None, power=1):
    y = x * scale
    if shift is not None:  # a Python value: stays Python, runs once while the graph is built
        y = y + shift
    for _ in range(power - 1):  # Python bound: unrolled
        y = y * x
    return y


@pytest.mark.parametrize(
    "kwargs", [{}, {"scale": 3}, {"shift": 1.5}, {"power": 3, "scale": 0.5}, {"shift": np.arange(4.0)}]
)
def test_keyword_arguments_and_defaults(kwargs):
    check(keywords, np.linspace(0, 1, 4, dtype=np.float32), **kwargs)


def test_keyword_passed_positionally_or_by_name_agree():
    def f(x, y=1.0):
        return x - y

    static = dy2st.to_static(f)
    x = np.arange(3.0)
    assert_same(static(x, 2.0), f(x, 2.0))
    assert_same(static(x, y=2.0), f(x, 2.0))
    assert_same(static(y=2.0, x=x), f(x, 2.0))


# --- methods and helper functions ------------------------------------------------------------
class Layer:
    def __init__(self, weight, bias):
        self.weight = weight
        self.bias = bias

    @dy2st.to_static
    def forward(self, x):
        return np.maximum(x @ self.weight + self.bias, 0)

    def eager_forward(self, x):
        return np.maximum(x @ self.weight + self.bias, 0)


def test_to_static_on_a_method():
    layer = Layer(array((4, 3), np.float32), array((3,), np.float32))
    x = array((2, 4), np.float32)
    assert_same(layer.forward(x), layer.eager_forward(x))
    other = Layer(array((4, 3), np.float32), array((3,), np.float32))
    assert_same(other.forward(x), other.eager_forward(x))


def square_plus(v, k):
    return v * v + k


def uses_helpers(x, y):
    z = square_plus(x, 1)
    return square_plus(z + y, 2.0)


def test_helpers_are_converted_into_one_flat_graph():
    x, y = array((3,), np.float32), array((3,), np.float32)
    check(uses_helpers, x, y)
    graph = dy2st.to_static(uses_helpers).graph(x, y, optimize=False)
    names = [op.name for op in graph.walk()]
    # The helper's ops are inlined: no call op, nothing nested, and it was never to_static'd.
    assert all(not op.regions for op in graph.walk())
    assert names.count("multiply") == 2 and "call" not in names
    assert not isinstance(square_plus, dy2st.StaticFunction)


@dy2st.to_static
def static_helper(v):
    return v - 1


def calls_a_static_function(x):
    return static_helper(x) * 2


def test_calling_a_static_function_inlines_it():
    x = array((3,), np.float64)
    assert_same(dy2st.to_static(calls_a_static_function)(x), (x - 1) * 2)
    assert static_helper.num_graphs == 0  # inlined, not run as its own graph


# --- in-place updates of arguments ------------------------------------------------------------
def set_first(x):
    x[0] = 1
    return x.sum()


def add_in_place(x, y):
    x += 1
    y *= 2
    return x + y


def test_subscript_assignment_mutates_the_callers_array():
    eager_x, static_x = np.arange(4.0), np.arange(4.0)
    want = set_first(eager_x)
    got = dy2st.to_static(set_first)(static_x)
    assert_same(got, want)
    np.testing.assert_array_equal(static_x, eager_x)


def test_augmented_assignment_mutates_the_callers_arrays():
    eager = (np.arange(3, dtype=np.int64), np.ones((2, 3), np.float32))
    static = tuple(a.copy() for a in eager)
    static_fn = dy2st.to_static(add_in_place)
    want = add_in_place(*eager)
    got = static_fn(*static)
    assert_same(got, want)
    for s, e in zip(static, eager):
        assert_same(s, e)
    static_fn(*static)  # again, through the cached graph
    add_in_place(*eager)
    for s, e in zip(static, eager):
        assert_same(s, e)


def test_arrays_nested_in_arguments_are_mutated_too():
    def update(params):
        params["w"] -= 0.5 * params["g"]
        return params["w"].sum()

    eager = {"w": np.ones(3), "g": np.arange(3.0)}
    static = _copy(eager)
    assert_same(dy2st.to_static(update)(static), update(eager))
    assert_same(static, eager)


def test_numpy_scalars_are_not_mutated():
    def bump(s, x):
        s += 1  # s is an immutable np.float64: this rebinds the local name
        return s * x

    s, x = np.float64(2.0), np.arange(3.0)
    got = dy2st.to_static(bump)(s, x)
    assert_same(got, bump(np.float64(2.0), x))
    assert s == 2.0


# --- ownership of returned arrays -------------------------------------------------------------
def identity_and_twice(x):
    y = x * 2
    return x, y, y


def test_returned_arrays_are_the_callers_or_never_alias_inputs_or_other_results():
    static = dy2st.to_static(identity_and_twice)
    x = np.arange(4.0)
    a, b, c = static(x)
    assert_same((a, b, c), identity_and_twice(x))
    assert a is x  # `return x` hands back the caller's array itself, as eager NumPy does
    assert not np.shares_memory(b, x)
    # Eager NumPy returns the same object twice for `return y, y`; either that or two copies
    # is fine, but never a buffer the executor writes again.
    b[0] = 100.0  # the caller owns its results
    assert x[0] == 0.0
    a2, b2, _ = static(x)
    assert a2 is x and not np.shares_memory(b2, b)
    assert b[0] == 100.0


def test_returned_arrays_are_fresh_across_calls():
    static = dy2st.to_static(poly)
    x, y = array((3, 4), np.float32), array((3, 4), np.float32)
    first = static(x, y)
    kept = [r.copy() for r in first]
    second = static(x + 1, y)
    for a, b in zip(first, second):
        assert not np.shares_memory(a, b)
    for a, k in zip(first, kept):
        np.testing.assert_array_equal(a, k)  # the second call did not overwrite the first's results


def divmod_pairs(x, y):
    q, r = divmod(x, 3.0)
    q2, r2 = divmod(7, y)
    return q + r, q2 * r2


def test_builtin_divmod_on_tensors_matches_eager():
    x, y = np.array([1.5, -2.25, 7.0]), np.array([2, -3, 5])
    expected, got = divmod_pairs(x, y), dy2st.to_static(divmod_pairs)(x, y)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype
