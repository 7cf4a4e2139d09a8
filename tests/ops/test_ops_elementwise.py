"""Elementwise ops through to_static == eager NumPy: operators, ufuncs, where/clip/round, promotion."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, sample

import dy2st

ARITHMETIC_DTYPES = [np.float32, np.float64, np.int64, np.int32]


def arithmetic(x, y):
    return x + y, x - y, x * y, x / y, -x, abs(x), x**2


def integer_division(x, y):
    return x // y, x % y


def comparisons(x, y):
    return x < y, x <= y, x > y, x >= y, x == y, x != y


def bitwise(x, y):
    return x & y, x | y, x ^ y, ~x


@pytest.mark.parametrize("dtype", ARITHMETIC_DTYPES)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (4,)), ((2, 1, 4), (3, 1)), ((), (5,))])
def test_arithmetic_operators_broadcast(dtype, shapes):
    assert_equivalent(arithmetic, sample(shapes[0], dtype, 1), sample(shapes[1], dtype, 2))
    assert_equivalent(integer_division, sample(shapes[0], dtype, 1), sample(shapes[1], dtype, 2))


@pytest.mark.parametrize(
    "left, right",
    [
        (np.float32, np.float64),
        (np.int32, np.int64),
        (np.int32, np.float32),
        (np.bool_, np.int32),
        (np.int64, np.float32),
    ],
)
def test_mixed_dtypes_promote_like_numpy(left, right):
    assert_equivalent(mixed_arithmetic, sample((2, 3), left, 1), sample((2, 3), right, 2))


def mixed_arithmetic(x, y):
    return x + y, y - x, x * y, x / y, y // x if x.dtype != np.bool_ else y


def negate_bool(x):
    return -x


def test_negating_a_bool_tensor_fails_at_build_time_like_numpy():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(negate_bool)(np.ones(3, bool))
    assert_error_at(info.value, negate_bool, "return -x", "negative")


@pytest.mark.parametrize("dtype", DTYPES)
def test_comparisons(dtype):
    assert_equivalent(comparisons, sample((4, 3), dtype, 1), sample((3,), dtype, 2))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_bitwise_operators(dtype):
    assert_equivalent(bitwise, sample((4, 3), dtype, 1), sample((3,), dtype, 2))


def scalar_promotion(x):
    return x * 2.0, x + 1, 2 - x, x / 2, 1.5**x, x * True


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8, np.bool_])
def test_python_scalars_are_weak(dtype):
    assert_equivalent(scalar_promotion, sample((3,), dtype, 3))


def test_documented_promotions():
    f32_times_float = dy2st.to_static(lambda_free_multiply)(np.ones(3, np.float32))
    assert f32_times_float[0].dtype == np.float32  # f32 * 2.0 stays f32
    assert f32_times_float[1].dtype == np.float32
    i32 = dy2st.to_static(lambda_free_multiply)(np.ones(3, np.int32))
    assert i32[2].dtype == np.int32  # i32 + 1 stays i32
    i64 = dy2st.to_static(lambda_free_multiply)(np.ones(3, np.int64))
    assert i64[3].dtype == np.float64  # i64 / 2 is f64


def lambda_free_multiply(x):
    return x * 2.0, x * np.float32(2), x + 1, x / 2


def numpy_scalars_are_strong(x):
    return x * np.float64(2), x + np.int64(1)


def test_numpy_scalars_are_strong():
    assert_equivalent(numpy_scalars_are_strong, sample((3,), np.float32))
    assert_equivalent(numpy_scalars_are_strong, sample((3,), np.int32))


def unary_ufuncs(x):
    return (
        np.exp(x),
        np.log(np.abs(x) + 1),
        np.tanh(x),
        np.sqrt(np.abs(x)),
        np.sin(x),
        np.cos(x),
        np.abs(x),
        np.sign(x),
        np.negative(x),
        np.square(x),
        np.log1p(np.abs(x)),
        np.floor(x),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_unary_ufuncs(dtype):
    assert_equivalent(unary_ufuncs, sample((2, 5), dtype, 4))


def binary_ufuncs(x, y):
    return np.maximum(x, y), np.minimum(x, 0.5), np.power(np.abs(x), 2), np.arctan2(x, y), np.add(x, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_binary_ufuncs(dtype):
    assert_equivalent(binary_ufuncs, sample((2, 5), dtype, 4), sample((5,), dtype, 5))


def array_on_the_left(x):
    return np.ones(3, np.float32) + x, np.arange(3) * x


def test_concrete_array_on_the_left_of_an_operator():
    assert_equivalent(array_on_the_left, sample((2, 3), np.float64))


def where_and_clip(x, y):
    return (
        np.where(x > 0, x, 0.01 * x),
        np.where(x > y, 1, 2.5),
        np.clip(x, -0.5, 0.5),
        x.clip(0),
        np.clip(x, None, 1),
        np.clip(x, y, 1),
        x.clip(min=0, max=1),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_where_and_clip(dtype):
    assert_equivalent(where_and_clip, sample((3, 4), dtype, 1), sample((4,), dtype, 2))


def clip_with_huge_python_bounds(x):
    return np.clip(x, -1000, 1000), np.clip(x, 2, 300)


def test_clip_drops_python_int_bounds_beyond_an_integer_dtype():
    assert_equivalent(clip_with_huge_python_bounds, sample((5,), np.int8))


def where_weak_and_bool(c, x):
    return np.where(c, x, True), np.where(c, 1, 2), np.where(c, x, 2.0)


@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.bool_])
def test_where_promotes_like_numpy(dtype):
    assert_equivalent(where_weak_and_bool, sample((4,), np.bool_), sample((4,), dtype))


def rounding(x):
    return np.round(x), np.round(x, 2), x.round(1), np.around(x, -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_round(dtype):
    assert_equivalent(rounding, sample((6,), dtype) * (37 if dtype != np.bool_ else 1))


def ufunc_reduce(x):
    return np.add.reduce(x), np.maximum.reduce(x, axis=1), np.multiply.reduce(x, axis=None)


def test_ufunc_reduce_maps_to_reductions():
    assert_equivalent(ufunc_reduce, sample((3, 4), np.float64))


def ufunc_with_out(x):
    buffer = np.empty(3)
    np.exp(x, out=buffer)
    return buffer


def ufunc_with_dtype(x):
    return np.add(x, 1, dtype=np.float32)


def ufunc_accumulate(x):
    return np.add.accumulate(x)


def ufunc_outers(x, i):
    return np.add.outer(x, x), np.multiply.outer(x[0], i), np.subtract.outer(2, i), np.maximum.outer(x, 0.5)


def ufunc_keywords_and_methods(x, i):
    total = np.zeros(3)
    np.add(total, x, out=total)
    masked = np.full(3, -1.0)
    np.exp(x, out=masked, where=x > 0)  # where=: the other elements keep out's values
    counts = np.zeros(4, np.int64)
    np.add.at(counts, i, 1)  # repeated indices count twice, as only ufunc.at does
    return (
        total,
        masked,
        counts,
        np.add(x, 1, dtype=np.float32),
        np.add.accumulate(x),
        np.multiply.reduce(x, initial=2.0),
        np.add.reduceat(x, [0, 2]),
        np.maximum.accumulate(i),
    )


def test_out_where_dtype_and_the_other_ufunc_methods_call_numpy_when_the_graph_runs():
    assert_equivalent(ufunc_with_out, sample((3,), np.float64))
    assert_equivalent(ufunc_keywords_and_methods, sample((3,), np.float64), np.array([1, 3, 1, 0]))


def test_ufunc_outer_has_numpys_shapes_and_dtypes():
    # Python numbers become arrays first in ufunc.outer (np.subtract.outer(2, int8) is int64).
    assert_equivalent(ufunc_outers, sample((2, 3), np.float32), sample((4,), np.int8))


def one_argument_where(x):
    return np.where(x > 0)


def test_one_argument_where_is_nonzero():
    x = np.array([1.0, -1.0, 2.0])
    (indices,) = dy2st.to_static(one_argument_where)(x)
    np.testing.assert_array_equal(indices, np.nonzero(x > 0)[0])


def graph_of_elementwise(x):
    return np.where(x > 0, x, 0.0), np.clip(x, 0, 1), np.round(x)


def test_where_clip_round_are_elementwise_ops():
    from dy2st.ir.opdefs import get_op

    graph = dy2st.to_static(graph_of_elementwise).graph(np.ones(3), optimize=False)
    names = [op.name for op in graph.walk()]
    for name in ("where", "clip", "round"):
        assert name in names
        assert get_op(name).elementwise
    assert get_op("clip").ufunc is not None


def zero_dimensional_where(c, x):
    chosen = np.where(c, x, 0.0)
    alias = chosen
    chosen += 1  # np.where returns a 0-d array: updated in place, the alias sees it
    return alias


def test_where_of_zero_dimensional_operands_is_an_array():
    assert_equivalent(zero_dimensional_where, np.array(True), np.array(2.0))


def closeness(x, y):
    return (
        np.isclose(x, y),
        np.isclose(x, y, rtol=0.5),
        np.isclose(x, 1),
        np.isclose(x, y, atol=1, equal_nan=True),
        np.isclose(x, x + 1e-9),
        np.allclose(x, x),
        np.allclose(x, y, atol=10),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8])
def test_isclose_and_allclose(dtype):
    x, y = sample((2, 3), dtype, 1), sample((3,), dtype, 2)
    if dtype in (np.float32, np.float64):
        x[0, 0], y[0] = np.nan, np.nan
    actual = dy2st.to_static(closeness)(x, y)
    expected = closeness(x, y)
    for a, e in zip(actual[:5], expected[:5]):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a, e)
    assert [bool(a) for a in actual[5:]] == list(expected[5:])  # allclose: a 0-d bool, not a Python bool


def assert_close(x):
    assert np.allclose(x, 0), "x drifted"
    return x


def test_allclose_works_as_a_graph_assertion():
    static = dy2st.to_static(assert_close)
    static(np.zeros(3))
    with pytest.raises(AssertionError, match="x drifted"):
        static(np.ones(3))


def powers_numpy_takes_a_shortcut_for(z, x):
    w = z.copy()
    w **= 2
    return z**2, z**-1, z**0.5, z**2.0, z**3, w, x**2, x**0.5, x**-1, z[0] ** 2


def test_powers_by_two_minus_one_and_one_half_round_as_numpys_shortcuts():
    # ndarray ** 2 is np.square (z * z), ** -1 np.reciprocal and ** 0.5 np.sqrt: for complex
    # arrays each rounds otherwise than np.power, so the converted function must call the same.
    rng = np.random.default_rng(4)
    z = rng.standard_normal(64) + 1j * rng.standard_normal(64)
    x = rng.random(64).astype(np.float32)
    static = dy2st.to_static(powers_numpy_takes_a_shortcut_for)
    for got, want in zip(static(z, x), powers_numpy_takes_a_shortcut_for(z, x)):
        assert type(got) is type(want) and got.dtype == want.dtype
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    names = [op.name for op in static.graph(z, x).walk()]
    assert {"square", "reciprocal", "sqrt", "power"} <= set(names)
