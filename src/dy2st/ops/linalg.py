"""Linear algebra: matmul (``@``), dot, outer, tensordot and the 2-norm."""

from __future__ import annotations

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import UFUNC_OPS, OpDef, register
from dy2st.ir.symbolic import Dim, broadcast_shapes, dim_product, dims_equal, has_symbolic
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents, swap_last_axes
from dy2st.ops.arguments import build_error, normalize_axes, reject_unsupported
from dy2st.ops.elementwise import promotion_operand
from dy2st.ops.generic import NUMPY_CALL_ADJOINTS, emit_numpy_call, plain_call_rule
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import apply


def matmul_shape(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """NumPy's matmul shape rule, 1-d operands included."""
    if not a or not b:
        raise ValueError("matmul: input operand does not have enough dimensions (0-d operand)")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if not dims_equal(a2[-1], b2[-2]):
        raise ValueError(
            f"matmul: core dimension mismatch: {a2[-1]} (last of the left operand) is not {b2[-2]} "
            f"(second to last of the right operand)"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_rule(types):
    a, b = types
    dtype = np.matmul.resolve_dtypes((promotion_operand(a), promotion_operand(b), None))[2]
    return TensorType(matmul_shape(a.shape, b.shape), dtype)


def _dot_rule(types):
    a, b = types
    if a.ndim == 0 or b.ndim == 0:
        return TensorType(broadcast_shapes(a.shape, b.shape), np.result_type(a.dtype, b.dtype))
    if a.ndim <= 2 and b.ndim <= 2:
        return _matmul_rule(types)
    k = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if a.shape[-1] != k:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim {a.ndim - 1}) != {k}")
    # dot sums over the last axis of a and the second-to-last of b (the only one of a 1-d b).
    shape = a.shape[:-1] + (b.shape[:-2] + b.shape[-1:] if b.ndim > 1 else ())
    return TensorType(shape, np.result_type(a.dtype, b.dtype))


def _matmul_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``y = a @ b``: ``g @ b.T`` and ``a.T @ g``, with 1-d operands made matrices first (a row
    for ``a``, a column for ``b``) and the added axis dropped from their cotangents; the caller
    sums over broadcast batch axes."""
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    if a.type.ndim == 0 or b.type.ndim == 0:  # np.dot with a scalar is a product
        return [e.op("multiply", g, b), e.op("multiply", g, a)]
    if op.name == "dot" and (a.type.ndim > 2 or b.type.ndim > 2):
        raise DifferentiationError("the gradient of np.dot of arrays with more than two axes", op.loc)
    if a.type.ndim == 1 or b.type.ndim == 1:
        vector_grads = _vector_product_vjp(e, a, b, g)
        if vector_grads is not None:
            return vector_grads
    a2 = a if a.type.ndim > 1 else e.op("expand_dims", a, axes=(0,))
    b2 = b if b.type.ndim > 1 else e.op("expand_dims", b, axes=(1,))
    g2 = g
    if a.type.ndim == 1:  # the row axis matmul dropped from the result
        g2 = e.op("expand_dims", g2, axes=(g2.type.ndim - (b.type.ndim > 1),))
    if b.type.ndim == 1:  # the column axis
        g2 = e.op("expand_dims", g2, axes=(g2.type.ndim,))
    da = e.op("matmul", g2, swap_last_axes(e, b2))
    db = e.op("matmul", swap_last_axes(e, a2), g2)
    if a.type.ndim == 1:
        da = e.op("getitem", da, template=(Ellipsis, 0, slice(None)))
    if b.type.ndim == 1:
        db = e.op("getitem", db, template=(Ellipsis, 0))
    return [da, db]


def _onnx_matmul(w, op) -> list[str]:
    a, b = op.operands
    dtype = op.result.type.dtype
    if op.name == "dot" and (a.type.ndim > 2 or b.type.ndim > 2):
        raise w.refuse("np.dot of arrays with more than two axes")
    operator = "Mul" if a.type.ndim == 0 or b.type.ndim == 0 else "MatMul"
    return [w.node(operator, [w.input(a, dtype), w.input(b, dtype)])[0]]


register(
    OpDef(
        "matmul",
        _matmul_rule,
        np.matmul,
        out_kernel=np.matmul,
        returns_fresh=True,
        c_ordered_result=True,
        doc="np.matmul / @",
        vjp=_matmul_vjp,
        onnx=_onnx_matmul,
    )
)
# ``@`` and np.matmul on tensors stage this op. Not OpDef.ufunc: that marks elementwise ufuncs.
UFUNC_OPS[np.matmul] = "matmul"


ADD_MATMUL = "add_matmul"
"""``c + a @ b`` of matrices: a sum of products the autodiff transformation adds to, block by
block (``autodiff/outer_sums.py``). As a functional update of ``c`` (``OpDef.accumulates``), the
``in-place-updates`` pass runs it in ``c``'s own buffer where ``c``'s old value is dead, and the
compiled tier writes it out as loops adding each product into ``c``, with no array for ``a @ b``."""


def _add_matmul_rule(types):
    c, a, b = types
    product = _matmul_rule([a, b])
    if a.ndim != 2 or b.ndim != 2 or product.shape != c.shape or product.dtype != c.dtype:
        raise TypeError(f"add_matmul: {c} + {a} @ {b} does not keep the sum's type")
    return c


def _add_matmul(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return c + a @ b


def _add_matmul_in_place(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    c += a @ b
    return c


register(
    OpDef(
        ADD_MATMUL,
        _add_matmul_rule,
        _add_matmul,
        returns_fresh=True,
        updates_operand=0,
        accumulates=True,
        in_place_kernel=_add_matmul_in_place,
        doc="c + a @ b, adding to c in place where its old value is dead",
    )
)


def _vector_product_vjp(e: Emitter, a: Value, b: Value, g: Value) -> Cotangents | None:
    """The cotangents of a product with a vector and no batch axes, in as few ops as the
    vector-matrix forms allow (a loop over a recurrence runs them at every step): ``v @ M``
    gives ``M @ g`` and the outer product of ``v`` and ``g``; ``M @ v`` the outer product of
    ``g`` and ``v`` and ``g @ M``; ``u @ v`` gives ``g v`` and ``g u``. None for batched forms."""
    if a.type.ndim == 1 and b.type.ndim == 1:
        return [e.op("multiply", g, b), e.op("multiply", g, a)]
    if a.type.ndim == 1 and b.type.ndim == 2:
        return [e.op("matmul", b, g), _outer(e, a, g)]
    if a.type.ndim == 2 and b.type.ndim == 1:
        return [_outer(e, g, b), e.op("matmul", g, a)]
    return None


def _outer(e: Emitter, u: Value, v: Value) -> Value:
    return e.op("multiply", e.op("expand_dims", u, axes=(1,)), e.op("expand_dims", v, axes=(0,)))


def _inv_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``Y = inv(A)``: ``-Y^T g Y^T``."""
    (g,) = cts
    if g is None:
        return [None]
    y_t = swap_last_axes(e, op.result)
    return [e.op("negative", e.op("matmul", e.op("matmul", y_t, g), y_t))]


def _solve_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``x = solve(A, b)``: ``b`` gets ``solve(A^T, g)``, ``A`` minus that times ``x^T`` (an outer
    product where ``b`` is a vector, which NumPy 2 takes it to be when it is 1-d)."""
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    gb = emit_numpy_call(e, "np.linalg.solve", swap_last_axes(e, a), g, result=g.type)
    x = op.result
    if b.type.ndim == 1:
        ga = _outer(e, gb, x)
    else:
        ga = e.op("matmul", gb, swap_last_axes(e, x))
    return [e.op("negative", ga), gb]


def _det_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``d = det(A)``: ``g d inv(A)^T``."""
    (g,) = cts
    if g is None:
        return [None]
    (a,) = op.operands
    inverse = emit_numpy_call(e, "np.linalg.inv", a, result=a.type)
    scale = e.op("multiply", g, op.result)
    scale = e.op("expand_dims", scale, axes=(scale.type.ndim, scale.type.ndim + 1))
    return [e.op("multiply", scale, swap_last_axes(e, inverse))]


def _cholesky_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``L = cholesky(S)`` (S read from its lower triangle, as NumPy reads it): with
    ``phi(X)`` the lower triangle of ``X`` with its diagonal halved,
    ``S_bar = L^-T phi(L^T g) L^-1``, and the gradient is ``phi(S_bar + S_bar^T)``: zero above the
    diagonal, which NumPy never reads (for a symmetric ``S = A A^T`` the gradient in ``A`` is the
    same as with a symmetric convention)."""
    (g,) = cts
    if g is None:
        return [None]
    (s,) = op.operands
    if s.type.ndim != 2 or has_symbolic(s.type.shape):
        raise DifferentiationError("the gradient of np.linalg.cholesky of other than one matrix of static size", op.loc)
    halve_diagonal = 1.0 - 0.5 * np.eye(int(s.type.shape[0]), dtype=s.type.dtype)
    lower = op.result

    def phi(x: Value) -> Value:
        return e.op("multiply", e.op("tril", x, k=0), halve_diagonal)

    inverse = emit_numpy_call(e, "np.linalg.inv", lower, result=lower.type)
    inner = phi(e.op("matmul", swap_last_axes(e, lower), g))
    s_bar = e.op("matmul", e.op("matmul", swap_last_axes(e, inverse), inner), inverse)
    return [phi(e.op("add", s_bar, swap_last_axes(e, s_bar)))]


NUMPY_CALL_ADJOINTS.update(
    {
        "np.linalg.inv": plain_call_rule(_inv_vjp),
        "np.linalg.solve": plain_call_rule(_solve_vjp),
        "np.linalg.det": plain_call_rule(_det_vjp),
        "np.linalg.cholesky": plain_call_rule(_cholesky_vjp),
    }
)


register(
    OpDef(
        "dot",
        _dot_rule,
        np.dot,
        returns_fresh=True,
        c_ordered_result=True,
        doc="np.dot",
        vjp=_matmul_vjp,
        onnx=_onnx_matmul,
    )
)


@handles(np.dot)
@method("dot")
def dot(a, b, out=None):
    """Staged ``np.dot`` / ``ndarray.dot``."""
    reject_unsupported("np.dot", out=(out, None))
    return apply("dot", a, b)


@handles(np.outer)
def outer(a, b, out=None):
    """Staged ``np.outer``: NumPy's own definition, ``ravel(a)[:, None] * ravel(b)[None, :]``."""
    reject_unsupported("np.outer", out=(out, None))
    column = apply("reshape", a, shape=(dim_product(np.shape(a)), 1))
    row = apply("reshape", b, shape=(1, dim_product(np.shape(b))))
    return apply("multiply", column, row)


@handles(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):
    """Staged ``np.linalg.norm`` of real arrays: the vector norms of every order and the matrix
    norms ``1, -1, inf, -inf, 'fro'`` (the spectral and nuclear norms need an SVD: the generic
    layer calls NumPy for them).

    Emits the very ops NumPy's implementation runs (``dot`` of the flattened array for the
    2-norm without an axis, ``sum`` of squares with one, ``abs`` then a reduction for the others),
    so the rounding matches eager NumPy and each differentiates by its reduction's rule.
    """
    if x.dtype.kind == "c":
        raise UnsupportedOpError("np.linalg.norm of a complex tensor is not supported", user_location())
    if x.dtype.kind not in "fc":
        x = apply("astype", x, dtype=np.dtype(float))
    two_norm = ord is None or (ord in ("f", "fro") and x.ndim == 2) or (_is_number(ord) and ord == 2 and x.ndim == 1)
    if axis is None and two_norm:
        flat = apply("reshape", x, shape=(x.size,))
        result = apply("sqrt", apply("dot", flat, flat))
        return apply("reshape", result, shape=(1,) * x.ndim) if keepdims else result
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim, "np.linalg.norm")
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, bool(keepdims))
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, bool(keepdims))
    raise build_error("np.linalg.norm", ValueError("Improper number of dimensions to norm."))


def _is_number(ord) -> bool:
    return isinstance(ord, (int, float, np.integer, np.floating)) and not isinstance(ord, bool)


def _vector_norm(x, ord, axes: tuple[int, ...], keepdims: bool):
    """NumPy's vector norms along one axis, op for op."""
    if ord is None or (_is_number(ord) and ord == 2):
        return np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdims))
    if not _is_number(ord):
        raise build_error("np.linalg.norm", ValueError(f"Invalid norm order '{ord}' for vectors"))
    if ord == np.inf:
        _require_nonempty(x, axes, "the infinity norm")  # NumPy's max(initial=0) of no element is 0
        return np.max(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axes, keepdims=keepdims)
    if ord == 0:
        return np.sum((x != 0).astype(x.dtype), axis=axes, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axes, keepdims=keepdims)
    total = np.sum(np.abs(x) ** ord, axis=axes, keepdims=keepdims)
    return total ** np.reciprocal(ord, dtype=total.dtype)


def _matrix_norm(x, ord, axes: tuple[int, int], keepdims: bool):
    """NumPy's matrix norms over two axes: the largest or smallest column (``1``) or row
    (``inf``) sum of absolute values, or the Frobenius norm."""
    rows, cols = axes
    if rows == cols:
        raise build_error("np.linalg.norm", ValueError("Duplicate axes given."))
    if ord in (None, "fro", "f"):
        result = np.sqrt(np.sum(x * x, axis=axes))
    elif _is_number(ord) and ord in (1, -1, np.inf, -np.inf):
        summed, kept = (rows, cols) if ord in (1, -1) else (cols, rows)
        kept -= kept > summed  # the summed axis is gone
        sums = np.sum(np.abs(x), axis=summed)
        if ord > 0:
            _require_nonempty(sums, (kept,), "this matrix norm")
            result = np.max(sums, axis=kept)
        else:
            result = np.min(sums, axis=kept)
    else:
        raise UnsupportedOpError(f"np.linalg.norm with ord={ord!r} (an SVD)", user_location())
    if keepdims:
        result = np.expand_dims(result, tuple(sorted(axes)))
    return result


def _require_nonempty(x, axes: tuple[int, ...], what: str) -> None:
    """NumPy gives 0 for the maximum of no element here; the staged ``max`` would raise. Sizes
    that may be 0 go to the generic layer, which calls NumPy."""
    for k in axes:
        size = x.shape[k]
        if not isinstance(size, int) or size == 0:
            raise UnsupportedOpError(f"np.linalg.norm: {what} of an axis that may be empty", user_location())


def _tensordot_axes(axes, a_ndim: int, b_ndim: int) -> tuple[list[int], list[int]]:
    """``axes`` of np.tensordot as two lists of non-negative axes (an int n: last n of a, first n of b)."""
    if isinstance(axes, (int, np.integer)):
        return list(range(a_ndim - int(axes), a_ndim)), list(range(int(axes)))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return [int(x) % max(a_ndim, 1) for x in axes_a], [int(x) % max(b_ndim, 1) for x in axes_b]


@handles(np.tensordot)
def tensordot(a, b, axes=2):
    """Staged ``np.tensordot``, as NumPy computes it: transpose, reshape to matrices, ``dot``, reshape."""
    a_shape, b_shape = np.shape(a), np.shape(b)
    axes_a, axes_b = _tensordot_axes(axes, len(a_shape), len(b_shape))
    if len(axes_a) != len(axes_b) or any(a_shape[i] != b_shape[j] for i, j in zip(axes_a, axes_b)):
        raise build_error("np.tensordot", ValueError("shape-mismatch for sum"))
    kept_a = [k for k in range(len(a_shape)) if k not in axes_a]
    kept_b = [k for k in range(len(b_shape)) if k not in axes_b]
    summed = dim_product([a_shape[i] for i in axes_a])
    a_matrix = apply(
        "reshape",
        apply("transpose", a, axes=tuple(kept_a + axes_a)),
        shape=(dim_product([a_shape[i] for i in kept_a]), summed),
    )
    b_matrix = apply(
        "reshape",
        apply("transpose", b, axes=tuple(axes_b + kept_b)),
        shape=(summed, dim_product([b_shape[i] for i in kept_b])),
    )
    product = apply("dot", a_matrix, b_matrix)
    result = apply("reshape", product, shape=tuple(a_shape[i] for i in kept_a) + tuple(b_shape[i] for i in kept_b))
    result._scalar = False  # NumPy's reshape of the product: a 0-d array, not a scalar
    return result
