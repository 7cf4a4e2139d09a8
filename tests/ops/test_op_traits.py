"""The traits ops declare on their definitions are consistent with what each op is.

Passes read these traits instead of op names (CSE: ``commutative``; fusion and the fused-kernel
runtime: ``row_reduction``; LICM: ``index_operands``; build-time literals: ``uninitialized``;
simplification: identities and ``involution``; memory planning: ``out_kernel``,
``returns_fresh``, ``c_ordered_result``), so a wrong flag would silently change what they do.
"""

import numpy as np
import pytest

import dy2st  # noqa: F401  (registers every op)
from dy2st.ir.opdefs import OPS


def _ops(trait):
    return sorted(name for name, opdef in OPS.items() if getattr(opdef, trait))


def test_every_commutative_op_is_a_binary_ufunc():
    assert _ops("commutative")
    for name in _ops("commutative"):
        ufunc = OPS[name].ufunc
        assert ufunc is not None and ufunc.nin == 2 and ufunc.nout == 1, name


@pytest.mark.parametrize("name", _ops("commutative"))
def test_commutative_ops_give_the_same_result_with_swapped_operands(name):
    ufunc = OPS[name].ufunc
    rng = np.random.default_rng(0)
    a, b = rng.integers(-5, 5, (2, 3, 4))
    assert np.array_equal(ufunc(a, b), ufunc(b, a))


def test_maximum_and_minimum_are_not_commutative():
    # Which of 0.0 and -0.0 they return depends on the operand order.
    assert not OPS["maximum"].commutative and not OPS["minimum"].commutative


def test_a_row_reduction_is_a_reduction():
    assert _ops("row_reduction")
    for name in _ops("row_reduction"):
        assert OPS[name].reduction, name


# float16 rows whose float16 running sum overflows: NumPy's mean accumulates them in float32.
_WIDE_ACCUMULATOR_ROWS = np.full((3, 4000), 30000, np.float16)


def _rows(dtype):
    if dtype == np.float16:
        return _WIDE_ACCUMULATOR_ROWS
    return np.random.default_rng(1).standard_normal((5, 7)).astype(dtype)


@pytest.mark.parametrize("name", _ops("row_reduction"))
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_row_kernels_compute_what_the_op_kernel_computes(name, keepdims, dtype):
    opdef = OPS[name]
    x = _rows(dtype)
    with np.errstate(over="ignore"):  # float16 sums overflow in eager NumPy too
        expected = opdef.kernel(x, axis=(1,), keepdims=keepdims)
        out = np.empty_like(expected)
        opdef.row_reduction(x, axis=-1, keepdims=keepdims, out=out)
    assert out.dtype == expected.dtype and np.array_equal(out, expected)


def test_indexing_ops_say_where_their_index_operands_start():
    indexing = {name: opdef.index_operands for name, opdef in OPS.items() if opdef.index_operands is not None}
    assert indexing == {"getitem": 1, "gather": 1, "setitem": 2, "index_add": 2}


def test_only_empty_and_stacked_tapes_have_uninitialized_results():
    assert sorted(_ops("uninitialized")) == ["empty", "tape_rows_new"]


@pytest.mark.parametrize("name", _ops("out_kernel"))
@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_out_kernels_write_what_the_kernel_returns(name, dtype):
    opdef = OPS[name]
    x = np.random.default_rng(2).standard_normal((4, 4)) if dtype == np.float64 else _WIDE_ACCUMULATOR_ROWS
    operands, attrs = {"matmul": ((x, x.T), {}), "astype": ((x,), {"dtype": np.dtype(np.float32)})}.get(
        name, ((x,), {"axis": (1,), "keepdims": False} if opdef.reduction else {})
    )
    with np.errstate(over="ignore"):  # float16 sums overflow in eager NumPy too
        expected = opdef.kernel(*operands, **attrs)
        out = np.empty_like(expected)
        assert opdef.out_kernel(*operands, out=out, **attrs) is out
    assert out.dtype == expected.dtype and np.array_equal(out, expected)


def test_identities_are_declared_on_binary_ops_and_involutions_on_unary_ones():
    for name, opdef in OPS.items():
        if opdef.right_identity is not None or opdef.left_identity is not None:
            assert opdef.ufunc is not None and opdef.ufunc.nin == 2, name
        if opdef.involution:
            assert opdef.ufunc is not None and opdef.ufunc.nin == 1, name


@pytest.mark.parametrize("name", sorted(n for n, d in OPS.items() if d.right_identity is not None))
def test_right_identity_leaves_the_operand_unchanged(name):
    opdef = OPS[name]
    x = np.array([-2.5, 0.0, 3.0])
    assert np.array_equal(opdef.kernel(x, opdef.right_identity), x)


@pytest.mark.parametrize("name", sorted(n for n, d in OPS.items() if d.left_identity is not None))
def test_left_identity_leaves_the_operand_unchanged(name):
    opdef = OPS[name]
    x = np.array([-2.5, 0.0, 3.0])
    assert np.array_equal(opdef.kernel(opdef.left_identity, x), x)


@pytest.mark.parametrize("name", _ops("involution"))
def test_involutions_undo_themselves(name):
    kernel = OPS[name].kernel
    x = np.array([-2.5, 0.0, 3.0])
    assert np.array_equal(kernel(kernel(x)), x)


@pytest.mark.parametrize("name", _ops("c_ordered_result"))
def test_c_ordered_results_are_c_ordered_whatever_the_operands_order(name):
    rng = np.random.default_rng(2)
    a = np.asfortranarray(rng.standard_normal((6, 5)))
    b = rng.standard_normal((4, 5)).T  # Fortran-ordered (5, 4)
    stacked = np.transpose(rng.standard_normal((5, 6, 3)), (2, 1, 0))  # (3, 6, 5), no order
    for left, right in ((a, b), (a.T.T, b), (stacked, b)):
        assert OPS[name].kernel(left, right).flags.c_contiguous, name
