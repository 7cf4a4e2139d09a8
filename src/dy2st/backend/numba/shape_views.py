"""Numba source for the reshaped views compiled loops make of whole arrays
(``support.reshaped_view``)."""

from __future__ import annotations

from dy2st.ir.core import Op
from dy2st.ops.shape import EXPAND_DIMS


def reshaped(array: str, op: Op) -> str:
    """``array.reshape((...))`` to the result's shape, a view of the C-contiguous ``array`` as
    NumPy's: its sizes as built, where known; for ``np.expand_dims``, the others are ``array``'s
    own, with the unit axes inserted."""
    shape = op.results[0].type.shape
    if op.name == EXPAND_DIMS:
        axes = {axis % len(shape) for axis in op.attrs["axes"]}
        sizes = iter(range(op.operands[0].type.ndim))
        dims = ["1" if k in axes else _size(shape[k], f"{array}.shape[{next(sizes)}]") for k in range(len(shape))]
    else:
        dims = [str(d) for d in shape]
    return f"{array}.reshape(({', '.join(dims)},))"


def _size(dim: object, read: str) -> str:
    return str(dim) if isinstance(dim, int) else read
