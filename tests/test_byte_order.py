"""Arrays in non-native byte order (big-endian data read from files): types compare by the native
dtype, so a loop carrying a '>f8' argument into the '<f8' result of ``x + 1`` keeps one type,
while results keep eager's dtypes byte order included (``x + 1`` is native, ``return x`` and
``np.zeros_like(x)`` are big-endian), in-place updates land in the caller's big-endian array, and
big-endian globals are read at every call without rebuilding the graph."""

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def grows_in_a_loop(x):
    for i in range(x.shape[0]):
        if x[i] > 0:
            x = x + 1
    return x


def grows_in_a_tensor_while(x, n):
    i = 0
    while i < n:
        x = x + 1
        i += 1
    return x


def updated_in_a_tensor_while(x, n):
    i = 0
    while i < n:
        x += 1
        i += 1
    return x


def updated_under_a_tensor_if(x):
    if x.sum() > 2:
        x *= 2
    return x


def updated_in_place(x):
    x[0] = 7
    x += 1
    return x


def updated_without_return(x):
    x -= 0.5


def arithmetic_and_reductions(x):
    return x + 1, -x, x.sum(), x[1], np.sqrt(np.abs(x)), max(x), x @ x


def data_movement(x):
    return x, x.copy(), x[1:], x[[0, 2]], np.sort(x), np.concatenate([x, x]), x.reshape(2, 2)


def casts_and_likes(x):
    return (
        x.astype(np.float64),
        np.asarray(x, dtype=np.float64),
        x.astype(">f8"),
        x.astype(np.float32),
        np.zeros_like(x),
        np.full_like(x, 3),
        np.empty_like(x).dtype,
    )


def dtype_checks(x):
    return x.dtype == np.float64, x.dtype.byteorder, np.zeros(2, x.dtype), (x + 1).dtype == np.float64


def with_a_big_endian_constant(x):
    offsets = np.array([1.0, 2.0, 3.0, 4.0], dtype=">f8")
    return x + offsets, offsets


BIG = np.arange(4.0).astype(">f8")


@pytest.mark.parametrize("x", [BIG, BIG.astype("<f8")], ids=["big-endian", "native"])
@pytest.mark.parametrize(
    "fn, extra",
    [
        (grows_in_a_loop, ()),
        (grows_in_a_tensor_while, (np.array(2),)),
        (grows_in_a_tensor_while, (np.array(0),)),
        (updated_in_a_tensor_while, (np.array(2),)),
        (updated_in_a_tensor_while, (np.array(0),)),
        (updated_under_a_tensor_if, ()),
        (updated_in_place, ()),
        (updated_without_return, ()),
        (arithmetic_and_reductions, ()),
        (data_movement, ()),
        (casts_and_likes, ()),
        (with_a_big_endian_constant, ()),
        (dtype_checks, ()),
    ],
)
def test_big_endian_arguments_match_eager(fn, extra, x):
    assert_like_eager(fn, x, *extra)


@pytest.mark.parametrize("dtype", [">i4", ">f4", ">c16", ">u2", "<i8"])
def test_other_non_native_dtypes(dtype):
    x = np.array([1, 2, 3, 4]).astype(dtype)
    for fn in (grows_in_a_loop, updated_in_place, casts_and_likes):
        assert_like_eager(fn, x)


def test_the_loop_types_compare_by_the_native_dtype():
    graph = dy2st.to_static(grows_in_a_tensor_while).graph(BIG, np.array(2))
    assert str(graph.body.args[0].type) == "f64[4]"


def test_big_endian_and_native_arguments_get_a_graph_each():
    converted = dy2st.to_static(updated_in_place)
    for x in (BIG, BIG.astype("<f8"), BIG, BIG.astype("<f8")):
        assert converted(x.copy()).dtype == x.dtype
    assert converted.num_graphs == 2


WEIGHTS = np.array([0.5, 1.5, 2.5, 3.5], dtype=">f8")


def reads_a_big_endian_global(x):
    return x * WEIGHTS, WEIGHTS


def updates_a_big_endian_global(x):
    WEIGHTS[:] += x
    return WEIGHTS


def test_big_endian_globals_are_read_at_every_call_without_rebuilding():
    global WEIGHTS
    converted = dy2st.to_static(reads_a_big_endian_global)
    x = np.ones(4)
    for _ in range(3):
        product, weights = converted(x)
        assert product.dtype == np.float64 and weights.dtype == np.dtype(">f8")
        assert weights.tolist() == WEIGHTS.tolist()
    assert converted.num_graphs == 1
    saved = WEIGHTS
    try:
        WEIGHTS = WEIGHTS.astype("<f8")  # another byte order: another graph
        assert converted(x)[1].dtype == np.dtype("<f8")
        assert converted.num_graphs == 2
    finally:
        WEIGHTS = saved


def test_a_big_endian_global_updated_in_place_stays_big_endian():
    saved = WEIGHTS.copy()
    try:
        converted = dy2st.to_static(updates_a_big_endian_global)
        for calls in (1, 2):
            result = converted(np.ones(4))
            assert WEIGHTS.dtype == np.dtype(">f8") and result.dtype == np.dtype(">f8")
            assert WEIGHTS.tolist() == (saved + calls).tolist() == result.tolist()
        assert converted.num_graphs == 1
    finally:
        WEIGHTS[...] = saved
