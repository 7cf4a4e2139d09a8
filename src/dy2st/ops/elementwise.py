"""Elementwise ops: every NumPy ufunc that maps broadcast inputs element by element.

One rule serves them all: the result shape is the broadcast of the operand shapes and the dtype is
what ``ufunc.resolve_dtypes`` says, which implements NumPy 2 promotion exactly, including weak
Python scalars (``float32_array * 2.0`` stays float32).
"""

from __future__ import annotations

import numpy as np

from dy2st.ir.opdefs import OpDef, get_op, register
from dy2st.ir.symbolic import broadcast_shapes
from dy2st.ir.types import TensorType
from dy2st.ops.elementwise_adjoints import UFUNC_ADJOINTS


def promotion_operand(t: TensorType):
    """What to hand ``resolve_dtypes`` for one operand: its dtype, or the Python type if weak."""
    if not t.weak:
        return t.dtype
    if t.dtype == np.bool_:
        return t.dtype  # Python bools are not weak in NumPy 2 promotion
    return {"i": int, "f": float, "c": complex}.get(t.dtype.kind, t.dtype)


def ufunc_rule(ufunc: np.ufunc):
    """The shape/dtype rule of an elementwise ufunc."""

    def infer(types: list[TensorType]) -> list[TensorType]:
        if len(types) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__} takes {ufunc.nin} operands, got {len(types)}")
        shape = broadcast_shapes(*(t.shape for t in types))
        if all(t.weak for t in types):
            # Only constant folding builds these: both operands are Python scalars.
            probe = ufunc(*(t.dtype.type(1) for t in types))
            probe = probe if isinstance(probe, tuple) else (probe,)
            return [TensorType(shape, np.asarray(p).dtype) for p in probe]
        dtypes = tuple(promotion_operand(t) for t in types) + (None,) * ufunc.nout
        resolved = ufunc.resolve_dtypes(dtypes)
        return [TensorType(shape, resolved[ufunc.nin + i]) for i in range(ufunc.nout)]

    return infer


def _elementwise_ufuncs() -> list[np.ufunc]:
    found = {}
    # vars(), not dir()+getattr(): getattr would import NumPy's lazily loaded submodules (f2py,
    # ma, testing...), which costs more than the rest of `import dy2st`.
    for f in list(vars(np).values()):
        if isinstance(f, np.ufunc) and f.signature is None and f.nin in (1, 2):
            found[f.__name__] = f
    return [found[n] for n in sorted(found)]


ELEMENTWISE_UFUNCS = _elementwise_ufuncs()

# Identity elements simplification removes: ``x * 1``, ``x + 0``, ``x - 0``, ``x / 1``; ``1 * x``, ``0 + x``.
# Identities hold bit for bit, signed zeros included: x + (-0.0) is x for every float x, but
# x + 0.0 turns -0.0 into +0.0 (for integers both are 0); x - 0.0 is x, x - (-0.0) is not.
_RIGHT_IDENTITIES: dict[np.ufunc, float] = {np.multiply: 1, np.add: -0.0, np.subtract: 0.0, np.divide: 1}
_LEFT_IDENTITIES: dict[np.ufunc, float] = {np.multiply: 1, np.add: -0.0}

# Ufuncs whose result is the same with the operands swapped (IEEE addition and multiplication are
# commutative; only which NaN payload survives ``nan + nan`` may differ), so CSE merges ``x*y`` and
# ``y*x``. Not ``maximum``/``minimum``: which of ``0.0`` and ``-0.0`` they return depends on the order.
COMMUTATIVE_UFUNCS = frozenset(
    {
        np.add,
        np.multiply,
        np.logical_and,
        np.logical_or,
        np.logical_xor,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.equal,
        np.not_equal,
    }
)

# --- ONNX forms (dy2st.export_onnx) ----------------------------------------------------------
# The ONNX operator computing each ufunc on operands of one dtype, where one does exactly that.
_ONNX_OPERATORS: dict[np.ufunc, str] = {
    np.add: "Add", np.subtract: "Sub", np.multiply: "Mul", np.divide: "Div", np.power: "Pow",
    np.negative: "Neg", np.positive: "Identity", np.absolute: "Abs", np.fabs: "Abs", np.exp: "Exp",
    np.log: "Log", np.sqrt: "Sqrt", np.reciprocal: "Reciprocal", np.tanh: "Tanh", np.sin: "Sin",
    np.cos: "Cos", np.tan: "Tan", np.arcsin: "Asin", np.arccos: "Acos", np.arctan: "Atan",
    np.sinh: "Sinh", np.cosh: "Cosh", np.arcsinh: "Asinh", np.arccosh: "Acosh", np.arctanh: "Atanh",
    np.floor: "Floor", np.ceil: "Ceil", np.rint: "Round", np.sign: "Sign", np.isnan: "IsNaN",
    np.greater: "Greater", np.less: "Less", np.greater_equal: "GreaterOrEqual",
    np.less_equal: "LessOrEqual", np.equal: "Equal", np.logical_and: "And", np.logical_or: "Or",
    np.logical_xor: "Xor", np.logical_not: "Not", np.maximum: "Max", np.minimum: "Min",
    np.bitwise_and: "BitwiseAnd", np.bitwise_or: "BitwiseOr", np.bitwise_xor: "BitwiseXor",
}  # fmt: skip


def loop_dtypes(op) -> list[np.dtype]:
    """The dtypes NumPy's loop for an elementwise op computes in: one per operand, then one per
    result (operands are cast to them first, as NumPy casts them)."""
    ufunc = get_op(op.name).ufunc
    assert ufunc is not None, "an elementwise ufunc op"
    types = [v.type for v in op.operands]
    operands = tuple(t.dtype if all(t.weak for t in types) else promotion_operand(t) for t in types)
    resolved = ufunc.resolve_dtypes(operands + (None,) * ufunc.nout)
    return [np.dtype(d) for d in resolved]


def _onnx_ufunc(operator: str):
    def export(w, op) -> list[str]:
        dtypes = loop_dtypes(op)
        inputs = [w.input(v, dtypes[k]) for k, v in enumerate(op.operands)]
        out = w.node(operator, inputs)[0]
        return [w.cast(out, dtypes[len(op.operands)], op.result.type.dtype)]

    return export


def _onnx_square(w, op) -> list[str]:
    (dtype,) = {op.result.type.dtype}
    x = w.input(op.operands[0], dtype)
    return [w.node("Mul", [x, x])[0]]


def _onnx_not_equal(w, op) -> list[str]:
    dtypes = loop_dtypes(op)
    inputs = [w.input(v, dtypes[k]) for k, v in enumerate(op.operands)]
    return [w.node("Not", w.node("Equal", inputs))[0]]


def _onnx_integer_division(remainder: bool):
    """``%`` and ``//`` of integers: ONNX's ``Mod`` takes the divisor's sign, as Python and
    NumPy do; the quotient is then exact. Floats are not exported (NumPy's float ``%`` is
    computed with ``fmod`` and a correction ONNX has no operator for)."""

    def export(w, op) -> list[str]:
        dtype = op.result.type.dtype
        if dtype.kind not in "iu":
            raise w.refuse(f"{op.name} of {dtype} values")
        a, b = (w.input(v, dtype) for v in op.operands)
        mod = w.node("Mod", [a, b], fmod=0)[0]
        return [mod] if remainder else [w.node("Div", [w.node("Sub", [a, mod])[0], b])[0]]

    return export


_ONNX_FORMS = {ufunc: _onnx_ufunc(name) for ufunc, name in _ONNX_OPERATORS.items()}
_ONNX_FORMS.update(
    {
        np.square: _onnx_square,
        np.not_equal: _onnx_not_equal,
        np.remainder: _onnx_integer_division(True),
        np.floor_divide: _onnx_integer_division(False),
    }
)

for _ufunc in ELEMENTWISE_UFUNCS:
    register(
        OpDef(
            name=_ufunc.__name__,
            infer=ufunc_rule(_ufunc),
            kernel=_ufunc,
            elementwise=True,
            ufunc=_ufunc,
            num_results=_ufunc.nout,
            commutative=_ufunc in COMMUTATIVE_UFUNCS,
            right_identity=_RIGHT_IDENTITIES.get(_ufunc),
            left_identity=_LEFT_IDENTITIES.get(_ufunc),
            involution=_ufunc is np.negative,
            vjp=UFUNC_ADJOINTS.get(_ufunc),
            onnx=_ONNX_FORMS.get(_ufunc),
            doc=f"np.{_ufunc.__name__}",
        )
    )
