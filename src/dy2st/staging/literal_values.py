"""Build-time values of tensors computed from literals alone (created arrays and constants).

Creation functions are staged (``np.eye(3)`` is an op, so each run gets a fresh array), which makes
``np.kron(np.eye(2), block)`` a call on a tensor. When such a call has no symbolic form but every
tensor argument depends only on literals (no input, no capture, no region, nothing random or
side-effecting), its value is already determined: dy2st computes it with the op kernels at build
time and runs the NumPy function on concrete arrays, exactly as eager code would.

Example::

    grid = np.meshgrid(np.arange(3), np.arange(2))   # arange is staged; meshgrid runs at build time
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.core import CONST, ERRSTATE_ATTR, Value, kernel_attrs
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import has_symbolic

# Larger created arrays stay symbolic: computing them at build time would cost as much as a run.
MAX_LITERAL_ELEMENTS = 1 << 16


def literal_value(value: Value, memo: dict[Value, Any] | None = None) -> np.ndarray | None:
    """The concrete value of ``value`` if it depends on literals only, else None."""
    memo = {} if memo is None else memo
    if value in memo:
        return memo[value]
    memo[value] = result = _evaluate(value, memo)
    return result


def _evaluate(value: Value, memo: dict[Value, Any]) -> np.ndarray | None:
    op = value.op
    if (
        op is None
        or op.regions
        or get_op(op.name).uninitialized
        or has_symbolic(value.type.shape)
        or value.type.size > MAX_LITERAL_ELEMENTS
    ):
        return None  # a block argument (input, capture, loop-carried value) or a control-flow result
    if op.name == CONST:
        return np.asarray(op.attrs["value"])
    opdef = get_op(op.name)
    if opdef.kernel is None or opdef.side_effect:
        return None
    operands = [literal_value(v, memo) for v in op.operands]
    if any(o is None for o in operands):
        return None
    with np.errstate(**dict(op.attrs.get(ERRSTATE_ATTR, ()))):
        results = opdef.kernel(*operands, **kernel_attrs(op))
    results = results if isinstance(results, tuple) else (results,)
    return np.asarray(results[value.index])


def literal_arguments(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """``args``/``kwargs`` with every tensor (also inside lists/tuples) replaced by its literal value.

    None when some tensor depends on an input, a capture or anything else known only at run time.
    """
    from dy2st.staging.tensor import Tensor  # the tracer's own recursion: tensor.py imports this module

    memo: dict[Value, Any] = {}
    missing = object()

    def replace(obj):
        if isinstance(obj, Tensor):
            concrete = literal_value(obj._value, memo)
            return missing if concrete is None else concrete
        if isinstance(obj, (list, tuple)):
            items = [replace(x) for x in obj]
            return missing if any(x is missing for x in items) else type(obj)(items)
        return obj

    new_args = replace(tuple(args))
    new_kwargs = {k: replace(v) for k, v in kwargs.items()}
    if new_args is missing or any(v is missing for v in new_kwargs.values()):
        return None
    return new_args, new_kwargs
