"""matmul, dot, outer and einsum through to_static == eager NumPy."""

import numpy as np
import pytest
from op_harness import assert_equivalent, assert_error_at, sample

import dy2st


def matmul_forms(a, b):
    return a @ b, np.matmul(a, b), np.dot(a, b) if a.ndim <= 2 and b.ndim <= 2 else a @ b


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2))],
)
@pytest.mark.parametrize(
    "dtypes",
    [
        (np.float32, np.float32),
        (np.float32, np.float64),
        (np.int32, np.int64),
        (np.bool_, np.bool_),
        (np.int64, np.float32),
    ],
)
def test_matmul_shapes_and_dtypes(shapes, dtypes):
    assert_equivalent(matmul_forms, sample(shapes[0], dtypes[0], 1), sample(shapes[1], dtypes[1], 2))


def dot(a, b):
    return np.dot(a, b), a.dot(b)


@pytest.mark.parametrize(
    "shapes", [((2, 3, 4), (4,)), ((2, 3, 4), (5, 4, 6)), ((4,), (2, 4, 3)), ((3,), ()), ((), (2, 2)), ((3, 4), (4, 2))]
)
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_dot_follows_numpy_for_every_rank(shapes, dtype):
    assert_equivalent(dot, sample(shapes[0], dtype, 1), sample(shapes[1], dtype, 2))


def dot_with_python_scalar(a):
    return np.dot(a, 2.0), np.dot(a, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_dot_with_a_python_scalar_promotes_like_numpy(dtype):
    assert_equivalent(dot_with_python_scalar, sample((3,), dtype))


def outer(a, b):
    return np.outer(a, b), np.outer(a, 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_outer(dtype):
    assert_equivalent(outer, sample((2, 2), dtype, 1), sample((3,), dtype, 2))


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bqd,bkd->bqk", [(2, 5, 4), (2, 6, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij...->...", [(2, 3, 4, 5)]),
    ("Ba,ab", [(2, 3), (3, 4)]),
    ("ij,j->i", [(2, 3), (1,)]),
    ("b h q d, b h k d -> b h q k", [(1, 2, 3, 4), (1, 2, 5, 4)]),
]


def einsum_call(subscripts, *operands):
    return np.einsum(subscripts, *operands)


@pytest.mark.parametrize("subscripts, shapes", EINSUM_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_einsum(subscripts, shapes, dtype):
    operands = [sample(shape, dtype, i) for i, shape in enumerate(shapes)]
    assert_equivalent(einsum_call, subscripts, *operands)


def einsum_mixed(a, b):
    return np.einsum("ij,jk->ik", a, b, optimize=True)


def test_einsum_mixed_dtypes_and_optimize():
    assert_equivalent(einsum_mixed, sample((2, 3), np.int32), sample((3, 4), np.float32))


def einsum_sublist(a):
    return np.einsum(a, [0, 1], [1, 0])


def einsum_bad(a, b):
    return np.einsum("ij,jk->ik", a, b)


def matmul_mismatch(a, b):
    return a @ b


def test_einsum_in_sublist_form_calls_numpy_when_the_graph_runs():
    assert_equivalent(einsum_sublist, sample((2, 3), np.float64))


def test_linalg_errors_name_the_line():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(einsum_bad)(np.ones((2, 3)), np.ones((4, 5)))
    assert_error_at(info.value, einsum_bad, "np.einsum(", "label 'j' has size 3 in one operand and 4")
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(matmul_mismatch)(np.ones((2, 3)), np.ones((4, 5)))
    assert_error_at(info.value, matmul_mismatch, "a @ b", "core dimension mismatch")


def norms(x):
    return (
        np.linalg.norm(x),
        np.linalg.norm(x, axis=-1),
        np.linalg.norm(x, axis=(0, 1), keepdims=True),
        np.linalg.norm(x, keepdims=True),
        np.linalg.norm(x[0]),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_two_norm_matches_numpy(dtype):
    assert_equivalent(norms, sample((3, 4), dtype))


def other_norms(x, m):
    return (
        np.linalg.norm(x, ord=1),
        np.linalg.norm(x, ord=np.inf),
        np.linalg.norm(m, ord="fro"),
        np.linalg.norm(m, ord="nuc"),
        np.linalg.norm(m, ord=-2),
        np.linalg.norm(m, ord=1, axis=(0, 1)),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_other_norm_orders_call_numpy_when_the_graph_runs(dtype):
    assert_equivalent(other_norms, sample((3,), np.float64).astype(dtype), sample((3, 4), np.float64).astype(dtype))


def dot_into_buffer(a, b):
    buffer = np.zeros(())
    return np.dot(a, b, out=buffer)


def test_dot_out_argument_writes_the_buffer_and_returns_it():
    assert_equivalent(dot_into_buffer, sample((3,), np.float64), sample((3,), np.float64))


def tensordots(a, b):
    return (
        np.tensordot(a, b),
        np.tensordot(a, b, axes=1) if a.shape[-1] == b.shape[0] else a,
        np.tensordot(a, b, axes=([1, 2], [0, 1])),
        np.tensordot(a, b, axes=(-1, 1)),
        np.tensordot(a, b, 0),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_tensordot(dtype):
    assert_equivalent(tensordots, sample((2, 3, 4), dtype, 1), sample((3, 4, 2), dtype, 2))


def convolution_by_windows(image, kernel):
    windows = np.lib.stride_tricks.sliding_window_view(image, kernel.shape)
    return np.einsum("ijkl,kl->ij", windows, kernel), np.lib.stride_tricks.sliding_window_view(image, 2, axis=0)


def test_convolution_with_sliding_windows():
    assert_equivalent(convolution_by_windows, sample((5, 6), np.float32), sample((2, 3), np.float32, 1))


def norm_of_order(x, ord, axis, keepdims):
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


# Orders whose staged form NumPy's own code runs op for op (3 and 4 would be x*x*x and (x*x)*(x*x) after simplification,
# within the 2 ulp the design licenses).
NORM_ORDERS = [None, 1, 2, -1, -2, 0.5, 2.5, -3.5, np.inf, -np.inf, 0, "fro", "nuc"]


@pytest.mark.filterwarnings("ignore::dy2st.RetracingWarning")
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (0,), (3, 0)])
@pytest.mark.parametrize("ord", NORM_ORDERS, ids=str)
def test_every_norm_order_matches_numpy(shape, ord):
    """Vector norms of every order and the matrix norms 1, -1, inf, -inf, 'fro' are staged as
    NumPy computes them; the SVD norms and NumPy's own errors come from NumPy."""
    converted = dy2st.to_static(norm_of_order, static_argnames=("ord", "axis", "keepdims"))
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    x.flat[:1] = 0.0
    for axis in [None, 0, -1, (0, 1), (1, 0), (0, 2)]:
        for keepdims in (False, True):
            with np.errstate(all="ignore"):
                try:
                    want = norm_of_order(x, ord, axis, keepdims)
                except Exception as error:
                    with pytest.raises(type(error)):
                        converted(x, ord, axis, keepdims)
                    continue
                got = converted(x, ord, axis, keepdims)
            assert type(got) is type(want) and np.shape(got) == np.shape(want)
            # A NumPy scalar's ** calls the C library's pow; the graph's 0-d power is the ufunc's
            # (SIMD) loop: within an ulp, the design's tolerance. Everything else is exact.
            np.testing.assert_allclose(got, want, rtol=0 if ord not in (2.5, -3.5) else 4e-16)


def test_norms_of_orders_other_than_two_are_staged_not_called():
    graph = dy2st.to_static(lambda x: np.linalg.norm(x, ord=1, axis=0) + np.linalg.norm(x, ord=np.inf)).graph(
        np.ones((3, 4))
    )
    assert "numpy_call" not in str(graph)
