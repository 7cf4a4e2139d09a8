"""The NumPy kernels the generated executor calls with a planned buffer (``out=``)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from dy2st.backend.numpy.fused import build_fused_kernel
from dy2st.ir.core import Op, kernel_attrs
from dy2st.ir.opdefs import get_op


def out_kernel(op: Op) -> Callable:
    """The kernel of ``op`` taking ``out=``: ``kernel(*operands, out=buffer)`` returns ``buffer``.

    A ufunc is its own ``out=`` form; a fused group gets a tiled kernel built from its region;
    other ops declare theirs on the op definition (``OpDef.out_kernel``), called with the op's
    attributes.
    """
    opdef = get_op(op.name)
    if opdef.ufunc is not None:
        return opdef.ufunc
    if opdef.region_kernel:
        return build_fused_kernel(op).entry
    if opdef.out_kernel is None:
        raise KeyError(f"op {op.name!r} has no out= form (the planner only plans ops the target accepts)")
    attrs = kernel_attrs(op)
    return functools.partial(opdef.out_kernel, **attrs) if attrs else opdef.out_kernel
