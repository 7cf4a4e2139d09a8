"""Every adjoint rule against central finite differences in float64 (docs/autodiff.md)."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import assert_gradient_matches

import dy2st

rng = np.random.default_rng(0)


def _inputs(low: float, high: float, shape=(3, 4)) -> np.ndarray:
    return rng.uniform(low, high, size=shape)


UNARY = [
    (np.absolute, -2, 2),
    (np.fabs, -2, 2),
    (np.square, -2, 2),
    (np.sqrt, 0.5, 3),
    (np.cbrt, 0.5, 3),
    (np.exp, -1, 1),
    (np.exp2, -1, 1),
    (np.expm1, -1, 1),
    (np.log, 0.5, 3),
    (np.log2, 0.5, 3),
    (np.log10, 0.5, 3),
    (np.log1p, -0.5, 2),
    (np.sin, -3, 3),
    (np.cos, -3, 3),
    (np.tan, -1, 1),
    (np.arcsin, -0.8, 0.8),
    (np.arccos, -0.8, 0.8),
    (np.arctan, -3, 3),
    (np.sinh, -2, 2),
    (np.cosh, -2, 2),
    (np.tanh, -2, 2),
    (np.arcsinh, -2, 2),
    (np.arccosh, 1.5, 3),
    (np.arctanh, -0.8, 0.8),
    (np.reciprocal, 0.5, 2),
    (np.negative, -2, 2),
    (np.positive, -2, 2),
    (np.deg2rad, -90, 90),
    (np.rad2deg, -2, 2),
]


@pytest.mark.parametrize("ufunc, low, high", UNARY, ids=[u.__name__ for u, _, _ in UNARY])
def test_unary_ufuncs(ufunc, low, high):
    def f(x):
        return (ufunc(x) * np.arange(1.0, 13.0).reshape(3, 4)).sum()

    assert_gradient_matches(f, _inputs(low, high))


BINARY = [
    (np.add, (-2, 2), (-2, 2)),
    (np.subtract, (-2, 2), (-2, 2)),
    (np.multiply, (-2, 2), (-2, 2)),
    (np.divide, (-2, 2), (0.5, 2)),
    (np.power, (0.5, 2), (-2, 2)),
    (np.maximum, (-2, 2), (-2, 2)),
    (np.minimum, (-2, 2), (-2, 2)),
    (np.fmax, (-2, 2), (-2, 2)),
    (np.fmin, (-2, 2), (-2, 2)),
    (np.arctan2, (-2, 2), (0.5, 2)),
    (np.hypot, (-2, 2), (-2, 2)),
    (np.logaddexp, (-2, 2), (-2, 2)),
    (np.logaddexp2, (-2, 2), (-2, 2)),
    (np.remainder, (0.1, 0.9), (1.0, 2.0)),
    (np.copysign, (-2, 2), (-2, 2)),
]


@pytest.mark.parametrize("ufunc, a_range, b_range", BINARY, ids=[u.__name__ for u, _, _ in BINARY])
@pytest.mark.parametrize("argnums", [0, 1])
def test_binary_ufuncs_with_broadcasting(ufunc, a_range, b_range, argnums):
    def f(a, b):
        return (ufunc(a, b) * np.arange(1.0, 13.0).reshape(3, 4)).sum()

    assert_gradient_matches(f, _inputs(*a_range), _inputs(*b_range, shape=(4,)), argnums=argnums)


def test_python_operators_and_scalars():
    def f(x):
        return (2.0 * x**3 - x / 3.0 + 1.0 / x + abs(x) + (-x) ** 2).sum()

    assert_gradient_matches(f, _inputs(0.5, 2))


def test_piecewise_constant_functions_have_zero_gradient():
    def f(x):
        return (np.floor(x) * x + np.sign(x) + np.round(x) + np.ceil(x) + np.trunc(x)).sum()

    x = _inputs(0.1, 0.4) + np.arange(12).reshape(3, 4)  # away from the jumps
    assert_gradient_matches(f, x)


def test_where_and_clip():
    def f(x, lo):
        return (np.where(x > 0.2, np.clip(x, lo, 0.7), -x) ** 2).sum()

    x = np.array([-0.5, 0.1, 0.3, 0.5, 0.9, 1.2])
    assert_gradient_matches(f, x, np.array(0.4))
    assert_gradient_matches(f, x, np.array(0.4), argnums=1)


@pytest.mark.parametrize(
    "name",
    ["sum", "mean", "max", "min", "var", "std", "ptp", "nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"],
)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    weights = rng.normal(size=(3, 4))

    def f(x):
        reduced = getattr(np, name)(x, axis=axis, keepdims=keepdims)
        return (np.sin(reduced) * np.broadcast_to(1.5, np.shape(reduced))).sum() + (weights * x).sum()

    assert_gradient_matches(f, _inputs(-2, 2))


@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"])
@pytest.mark.parametrize("axis", [None, 1])
def test_nan_reductions_skip_the_nans(name, axis):
    mask = np.zeros((3, 4), bool)
    mask[0, 1] = mask[2, 3] = True

    def f(x):
        with_nans = np.where(mask, np.nan, x)
        return (getattr(np, name)(with_nans, axis=axis) * 1.5).sum()

    assert_gradient_matches(f, _inputs(-2, 2))
    import dy2st

    g = dy2st.grad(f)(_inputs(-2, 2))
    assert g[0, 1] == 0.0 and g[2, 3] == 0.0


def test_nanvar_and_nanstd_with_ddof():
    mask = np.zeros((3, 4), bool)
    mask[1, 2] = True

    def f(x):
        with_nans = np.where(mask, np.nan, x)
        return np.nanstd(with_nans, axis=0, ddof=1).sum() + np.nanvar(with_nans, ddof=1, keepdims=True).sum()

    assert_gradient_matches(f, _inputs(-2, 2))


def test_ptp_splits_among_ties():
    import dy2st

    g = dy2st.grad(lambda x: np.ptp(x))(np.array([1.0, 3.0, 3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(g, [-0.5, 0.5, 0.5, -0.5, 0.0])


def test_max_splits_the_gradient_among_ties():
    import dy2st

    g = dy2st.grad(lambda x: np.max(x))(np.array([1.0, 3.0, 3.0, 2.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 0.5, 0.0])
    g = dy2st.grad(lambda x: np.maximum(x, 2.0).sum())(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(g, [0.0, 0.5, 1.0])


def test_var_and_std_with_ddof():
    def f(x):
        return x.var(ddof=1) + x.std(axis=0, ddof=1).sum()

    assert_gradient_matches(f, _inputs(-2, 2))


@pytest.mark.parametrize(
    "a_shape, b_shape", [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4, 2))]
)
@pytest.mark.parametrize("argnums", [0, 1])
def test_matmul(a_shape, b_shape, argnums):
    def f(a, b):
        return np.sin(a @ b).sum()

    assert_gradient_matches(f, rng.normal(size=a_shape), rng.normal(size=b_shape), argnums=argnums)


@pytest.mark.parametrize("a_shape, b_shape", [((3, 4), (4, 2)), ((4,), (4,)), ((), (4,))])
def test_dot(a_shape, b_shape):
    def f(a, b):
        return np.sin(np.dot(a, b)).sum()

    for argnums in (0, 1):
        assert_gradient_matches(f, rng.normal(size=a_shape), rng.normal(size=b_shape), argnums=argnums)


def test_shape_ops():
    def f(x):
        y = x.reshape(4, 3).T * np.arange(12.0).reshape(3, 4)
        z = np.transpose(x[None], (2, 0, 1)).astype(np.float64) * x.T[:, None, :]
        return (y**2).sum() + np.broadcast_to(x, (2, 3, 4)).sum() + z.copy().sum()

    assert_gradient_matches(f, _inputs(-1, 1))


def test_basic_and_advanced_indexing_scatter_add():
    idx = np.array([0, 2, 2, 1])

    def f(x):
        return (x[1:, ::2] ** 2).sum() + (x[idx] * 3.0).sum() + x[x > 0.5].sum() + x[0, -1]

    assert_gradient_matches(f, _inputs(0, 1))


def test_setitem():
    def f(x, v):
        y = x.copy()
        y[1] = v * 2.0
        y[:, 0] = 1.0
        return (y**2).sum()

    assert_gradient_matches(f, _inputs(-1, 1), _inputs(-1, 1, shape=(4,)))
    assert_gradient_matches(f, _inputs(-1, 1), _inputs(-1, 1, shape=(4,)), argnums=1)


def test_concatenate_and_stack():
    def f(x, y):
        return (np.concatenate([x, 2 * y], axis=1) ** 2).sum() + np.stack([x[:, :2], y], axis=1).std()

    assert_gradient_matches(f, _inputs(-1, 1), _inputs(-1, 1, shape=(3, 2)), argnums=1)
    assert_gradient_matches(f, _inputs(-1, 1, shape=(3, 2)), _inputs(-1, 1, shape=(3, 2)))


def test_float32_gradients_are_float32():
    import dy2st

    x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    g = dy2st.grad(lambda x: (np.sin(x) * 2.0).sum())(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * np.cos(x), rtol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumsum(axis):
    def f(x):
        return (np.sin(np.cumsum(x, axis=axis)) * 1.5).sum()

    assert_gradient_matches(f, _inputs(-1, 1))


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_with_and_without_zeros(axis):
    def f(x):
        return (np.prod(x, axis=axis) * 1.5).sum()

    assert_gradient_matches(f, _inputs(0.5, 1.5))
    with_zero = _inputs(0.5, 1.5)
    with_zero[1, 2] = 0.0
    assert_gradient_matches(f, with_zero)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_sort(axis):
    weights = np.arange(1.0, 13.0)

    def f(x):
        return (np.sort(x, axis=axis).reshape(-1) * weights).sum()

    assert_gradient_matches(f, _inputs(-1, 1))


def test_tril_and_triu():
    def f(x):
        return (np.tril(x, -1) ** 2).sum() + (np.triu(x, 1) * 3.0).sum()

    assert_gradient_matches(f, _inputs(-1, 1, shape=(4, 4)))


@pytest.mark.parametrize("subscripts", ["ij,jk->ik", "ij,j->i", "ij,ij->", "ij,kj", "ij->j", "ij,jk,k->i"])
def test_einsum(subscripts):
    shapes = {"i": 3, "j": 4, "k": 2}
    terms = subscripts.split("->")[0].split(",")
    args = tuple(rng.normal(size=tuple(shapes[c] for c in term)) for term in terms)

    def f(a, b, c):
        operands = (a, b, c)[: len(terms)]
        return np.sin(np.einsum(subscripts, *operands)).sum()

    args = args + (np.zeros(1),) * (3 - len(args))
    for k in range(len(terms)):
        assert_gradient_matches(f, *args, argnums=k)


def test_linalg_solve_inv_det():
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)

    def f(A, b):
        return np.linalg.solve(A, b).sum() + (np.linalg.inv(A) ** 2).sum() + np.linalg.det(A)

    assert_gradient_matches(f, a, rng.normal(size=3), rtol=1e-5)
    assert_gradient_matches(f, a, rng.normal(size=3), argnums=1)

    def g(A, B):
        return (np.linalg.solve(A, B) ** 2).sum()

    assert_gradient_matches(g, a, rng.normal(size=(3, 2)), rtol=1e-5)
    assert_gradient_matches(g, a, rng.normal(size=(3, 2)), argnums=1)


def test_norm_and_logsumexp():
    def f(x):
        m = x.max()
        return np.linalg.norm(x) + np.log(np.exp(x - m).sum()) + m

    assert_gradient_matches(f, _inputs(-1, 1, shape=(5,)))


def test_float_of_a_tensor_passes_the_gradient_on():
    def f(x):
        return float(x.sum()) * x[0]

    assert_gradient_matches(f, _inputs(-1, 1, shape=(3,)))


def test_functions_staged_through_other_ops():
    """tensordot, squeeze, expand_dims, .T, Python max of 0-d values: staged as ops with rules."""

    def f(x):
        return (
            np.tensordot(x, x, axes=1)
            + np.squeeze(np.expand_dims(x, 0) * 2.0).sum()
            + max(x[0], x[1])
            + x.T.sum()
            + np.linalg.norm(x)
        )

    assert_gradient_matches(f, np.array([0.3, -0.7, 1.1]))


def test_masked_augmented_assignment():
    def f(x, v):
        y = x * 1.0
        y[x > 0] += v
        y[np.array([0, 0, 2])] *= 2.0
        return (y**2).sum()

    x = np.array([0.5, -1.0, 2.0, -0.3])
    assert_gradient_matches(f, x, np.array(0.7))
    assert_gradient_matches(f, x, np.array(0.7), argnums=1)


def test_assignment_through_repeated_indices_gives_the_gradient_to_the_value_kept():
    import dy2st

    def f(x, v):
        y = x * 1.0
        y[np.array([0, 0, 2])] = v
        return (y * np.array([1.0, 2.0, 3.0])).sum()

    x, v = np.zeros(3), np.array([1.0, 2.0, 3.0])
    gv = dy2st.grad(f, argnums=1)(x, v)
    np.testing.assert_array_equal(gv, [0.0, 1.0, 3.0])  # y[0] keeps v[1], as NumPy leaves it
    assert_gradient_matches(f, x, v, argnums=1)
    assert_gradient_matches(f, x, v)


def test_compress_and_extract():
    mask = np.array([True, False, True, True])

    def f(x):
        return (np.compress(mask, x) ** 2).sum() + np.extract(x > 0.2, x).sum() * 3.0

    assert_gradient_matches(f, np.array([0.5, -0.3, 0.9, 0.1]))

    def g(x):
        return (np.compress(np.array([False, True, True]), x, axis=1) ** 2).sum()

    assert_gradient_matches(g, _inputs(-1, 1, shape=(2, 3)))


def test_tile_repeat_pad_split_roll():
    def f(x):
        a, b = np.split(x, 2)
        return (
            (np.tile(x, (2, 1)) * np.arange(8.0).reshape(2, 4)).sum()
            + (np.repeat(x, 3) ** 2).sum()
            + (np.pad(x, (1, 2)) * np.arange(7.0)).sum()
            + (a * b).sum()
            + (np.roll(x, 1) * np.arange(4.0)).sum()
        )

    assert_gradient_matches(f, np.array([0.5, -0.3, 0.9, 0.1]))

    def g(x):
        return (np.repeat(x, 2, axis=1) * np.arange(12.0).reshape(2, 6)).sum()

    assert_gradient_matches(g, _inputs(-1, 1, shape=(2, 3)))


@pytest.mark.parametrize("offset", [0, 1, -1])
def test_diagonal_and_trace(offset):
    def f(x):
        return (np.diagonal(x, offset) ** 2).sum() + np.trace(x) + np.diagonal(x, offset, 1, 0).sum() * 2.0

    assert_gradient_matches(f, _inputs(-1, 1, shape=(3, 4)))


def test_item():
    def f(x):
        return x.item(2) * x.max().item() + x.reshape(2, 2).item(1, 0)

    assert_gradient_matches(f, np.array([0.5, -0.3, 0.9, 0.1]))


def test_cholesky():
    def f(A):
        L = np.linalg.cholesky(A @ A.T + 4.0 * np.eye(3))
        return (L * np.arange(9.0).reshape(3, 3)).sum()

    assert_gradient_matches(f, _inputs(-1, 1, shape=(3, 3)))

    def g(S):
        return (np.linalg.cholesky(S) ** 2).sum()  # NumPy reads the lower triangle only

    assert_gradient_matches(g, np.array([[4.0, 0.3, 9.0], [0.5, 3.0, 9.0], [0.2, -0.4, 5.0]]))


# --- the rules added for the remaining differentiable ops ----------------------------------------
WEIGHTS = np.arange(1.0, 13.0).reshape(3, 4)

ELEMENTWISE_RULES = {
    "fmod": lambda x: np.fmod(x * 3.0, 1.7),
    "fmod_divisor": lambda x: np.fmod(2.9, x + 3.0),
    "floor_divide": lambda x: x // 0.3 + x * x,
    "divmod": lambda x: divmod(x, 0.3)[0] + divmod(x, 0.3)[1] ** 2,
    "divmod_divisor": lambda x: divmod(5.3, x + 3.0)[1],
    "modf": lambda x: np.modf(x * 3.0)[0] ** 2 + np.modf(x * 3.0)[1],
    "frexp": lambda x: np.frexp(x * 5.0)[0] ** 2,
    "ldexp": lambda x: np.ldexp(x, np.array([3, -2, 0, 5])),
    "heaviside": lambda x: np.heaviside(x, 0.5) * x,
    "nextafter": lambda x: np.nextafter(x, 2.0) * x,
}


@pytest.mark.parametrize("name", list(ELEMENTWISE_RULES))
def test_more_elementwise_rules(name):
    rule = ELEMENTWISE_RULES[name]

    def f(x):
        return (rule(x) * WEIGHTS).sum()

    # Away from the jumps of fmod, //, divmod and modf: one-sided differences agree there.
    x = np.array([[0.37, -1.13, 2.51, 0.71], [-0.43, 1.19, 0.58, -2.24], [1.61, -0.77, 0.14, 2.02]])
    assert_gradient_matches(f, x)


def test_heaviside_gives_the_value_at_zero_its_gradient():
    def f(x, h):
        return (np.heaviside(x, h) * WEIGHTS[0]).sum()

    x = np.array([0.0, 1.0, -1.0, 0.0])
    got = dy2st.grad(f, argnums=1)(x, np.full(4, 0.5))
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 4.0])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumprod_with_and_without_zeros(axis):
    def f(x):
        return (np.cumprod(x, axis=axis).reshape(-1) * np.arange(1.0, 13.0)).sum()

    assert_gradient_matches(f, _inputs(0.5, 1.5))
    zeros = _inputs(0.5, 1.5)
    zeros[0, 1] = zeros[0, 3] = zeros[2, 0] = zeros[1, 1] = 0.0  # a first and a second zero in a row
    assert_gradient_matches(f, zeros)


def test_diag_builds_a_matrix_on_its_diagonal():
    def f(v):
        return (np.diag(v) * WEIGHTS[:, :3]).sum() + (np.diag(v, 1) ** 2).sum() + np.diag(np.outer(v, v), -1).sum()

    assert_gradient_matches(f, np.array([0.3, -1.2, 2.5]))


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_median_of_odd_and_even_lengths(axis, keepdims):
    def f(x):
        return (np.median(x, axis=axis, keepdims=keepdims) * 1.5).sum() + np.median(x[:, :3], axis=axis).sum()

    assert_gradient_matches(f, _inputs(-2, 2))


def test_median_splits_among_ties():
    def f(x):
        return np.median(x)

    got = dy2st.grad(f)(np.array([1.0, 2.0, 2.0, 0.5, 2.0, 3.0]))
    np.testing.assert_allclose(got, [0, 1 / 3, 1 / 3, 0, 1 / 3, 0])


@pytest.mark.parametrize("axis", [None, 1])
def test_nanmedian_and_nanprod_skip_the_nans(axis):
    def f(x):
        y = np.where(x > 1.5, np.nan, x)
        return np.nanmedian(y, axis=axis).sum() + (np.nanprod(y, axis=axis) * 2.0).sum()

    x = _inputs(-2, 2)
    x[0, :3] = 1.8  # a row with one number
    got = dy2st.grad(f)(x)
    assert np.all(got[x > 1.5] == 0.0)
    assert_gradient_matches(f, x)


def test_putmask_with_values_of_the_array_shape_repeated_and_one_value():
    mask = np.array([[True, False, True, True], [False, True, True, False], [True, True, False, False]])

    def f(x, v):
        y = x * 1.0
        np.putmask(y, mask, v * 2.0)
        return (y * y * WEIGHTS).sum()

    x = _inputs(-1, 1)
    for values in (_inputs(-1, 1), np.array([0.3, -0.7, 1.1]), np.array(0.4)):
        assert_gradient_matches(f, x, values, argnums=0)
        assert_gradient_matches(f, x, values, argnums=1)


def test_add_at_with_repeated_indices():
    def f(x, v):
        y = x * 1.0
        np.add.at(y, (np.array([0, 2, 0]), slice(None)), v)
        np.add.at(y, np.array([1, 1]), v[0] * v[1])
        return (y**2 * WEIGHTS).sum()

    args = (_inputs(-1, 1), _inputs(-1, 1))
    assert_gradient_matches(f, *args, argnums=0)
    assert_gradient_matches(f, *args, argnums=1)
    assert dy2st.to_static(f)(*args) == pytest.approx(f(*args))


def test_sliding_window_view_adds_up_the_windows():
    def f(x):
        windows = np.lib.stride_tricks.sliding_window_view(x, (2, 3))
        rows = np.lib.stride_tricks.sliding_window_view(x, 2, axis=0)
        return (windows**3).sum() + (rows * rows).sum()

    assert_gradient_matches(f, _inputs(-1, 1))


@pytest.mark.parametrize(
    "ord, axis",
    [(1, 1), (3, 0), (0.5, 1), (np.inf, None), (-np.inf, 1), (1, None), (-1, None), (np.inf, (0, 1)), ("fro", None)],
    ids=str,
)
def test_norms_of_other_orders(ord, axis):
    def f(x):
        return np.linalg.norm(x, ord=ord, axis=axis).sum()

    assert_gradient_matches(f, np.array([[0.3, -1.2, 2.5], [0.7, -0.4, 1.1]]))


def test_roll_by_a_shift_computed_in_the_graph():
    def f(x):
        shift = int(x[0] > 0) + 2  # known when the graph runs: the generic layer calls np.roll
        y = x
        for i in range(4):  # a rolled loop's counter too
            y = np.roll(y, i) * 1.5 + x
        return (np.roll(y, shift) * np.arange(1.0, 7.0)).sum()

    x = np.array([0.3, -1.2, 2.5, 0.7, -0.4, 1.1])
    assert_gradient_matches(f, x)
    assert_gradient_matches(f, -x)


QUANTILES = {
    "percentile": lambda x: np.percentile(x, 30),
    "quantile_axis_keepdims": lambda x: np.quantile(x, [0.2, 0.9], axis=1, keepdims=True).sum(),
    "percentile_array": lambda x: (np.percentile(x, np.array([10.0, 50.0, 100.0]), axis=0) * WEIGHTS[:, :4]).sum(),
    "ends": lambda x: np.quantile(x, 0.0) + np.quantile(x, 1.0),
    "negative_axis": lambda x: np.percentile(x, 37.5, axis=-1).sum(),
}


@pytest.mark.parametrize("name", list(QUANTILES))
def test_percentile_and_quantile_interpolate_between_two_elements(name):
    assert_gradient_matches(QUANTILES[name], _inputs(-2, 2))


def test_quantile_with_another_method_is_refused_at_the_users_line():
    def f(x):
        return np.percentile(x, 30.0, method="nearest")

    with pytest.raises(dy2st.DifferentiationError, match="np.percentile") as info:
        dy2st.grad(f)(np.arange(3.0))
    assert 'method="nearest"' in str(info.value)


def test_in_place_sort_through_a_view():
    def f(x):
        y = x * 1.0
        y[:, 1:].sort(axis=0)
        return (y * WEIGHTS).sum()

    assert_gradient_matches(f, _inputs(-1, 1))
