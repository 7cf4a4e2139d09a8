"""Elementwise ops: every NumPy ufunc that maps broadcast inputs element by element.

One rule serves them all: the result shape is the broadcast of the operand shapes and the dtype is
what ``ufunc.resolve_dtypes`` says, which implements NumPy 2 promotion exactly, including weak
Python scalars (``float32_array * 2.0`` stays float32).
"""

from __future__ import annotations

import numpy as np

from dy2st.ir.opdefs import OpDef, register
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
            doc=f"np.{_ufunc.__name__}",
        )
    )
