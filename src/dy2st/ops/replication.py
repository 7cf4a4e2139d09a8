"""Replicating values: ``np.tile``, ``np.repeat`` and ``np.pad`` with static counts and widths.

Each result shape follows from the static arguments alone; the kernels are NumPy's own functions.

Before (user code)::

    padded = np.pad(image, ((1, 1), (2, 2)), constant_values=0.5)

After (IR)::

    %padded = pad %image {constant_values=0.5, mode='constant', pad_width=((1, 1), (2, 2))} : f32[6,8]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType
from dy2st.ops.arguments import build_error, normalize_axes, static_shape
from dy2st.ops.shape import as_array
from dy2st.staging.handlers import handles, method
from dy2st.staging.tensor import Tensor, apply


# --- tile ------------------------------------------------------------------------------------------
def _tile_rule(types, reps):
    (t,) = types
    ndim = max(t.ndim, len(reps))
    shape = (1,) * (ndim - t.ndim) + t.shape
    reps = (1,) * (ndim - len(reps)) + tuple(reps)
    return TensorType(tuple(d * r for d, r in zip(shape, reps)), t.dtype)


register(OpDef("tile", _tile_rule, lambda x, reps: np.tile(x, reps), doc="np.tile with static repetitions"))


@handles(np.tile)
def tile(A, reps):
    """Staged ``np.tile``."""
    return apply("tile", A, reps=static_shape(reps, "np.tile"))


# --- repeat ----------------------------------------------------------------------------------------
def _repeated_length(length: int, repeats) -> int:
    """The length of an axis of ``length`` elements after repeating by an int or per-element counts."""
    if not isinstance(repeats, tuple):
        return length * repeats
    if len(repeats) == 1:
        return length * repeats[0]
    if len(repeats) != length:
        raise ValueError(f"operands could not be broadcast together with shape ({length},) ({len(repeats)},)")
    return sum(repeats)


def _repeat_rule(types, repeats, axis):
    (t,) = types
    total = _repeated_length(t.size if axis is None else t.shape[axis], repeats)
    if axis is None:
        return TensorType((total,), t.dtype)
    return TensorType(t.shape[:axis] + (total,) + t.shape[axis + 1 :], t.dtype)


register(
    OpDef(
        "repeat", _repeat_rule, lambda x, repeats, axis: np.repeat(x, repeats, axis), doc="np.repeat with static counts"
    )
)


@handles(np.repeat)
@method("repeat")
def repeat(a, repeats, axis=None):
    """Staged ``np.repeat``: ``repeats`` is a Python int or a sequence of them."""
    if isinstance(repeats, (list, tuple, np.ndarray)):
        counts: Any = static_shape(tuple(np.asarray(repeats).reshape(-1).tolist()), "np.repeat")
    else:
        counts = static_shape(repeats, "np.repeat")[0]
    if axis is not None:
        if a.ndim == 0:
            raise build_error("np.repeat", np.exceptions.AxisError(axis, 0))
        axis = normalize_axes(axis, a.ndim, "np.repeat")[0]
    return apply("repeat", a, repeats=counts, axis=axis)


# --- pad -------------------------------------------------------------------------------------------
_PAD_MODES = {
    "constant": ("constant_values",),
    "edge": (),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
    "wrap": (),
}


def _pad_rule(types, pad_width, mode, **options):
    (t,) = types
    return TensorType(tuple(d + before + after for d, (before, after) in zip(t.shape, pad_width)), t.dtype)


def _pad_kernel(x, pad_width, mode, **options):
    return np.pad(x, pad_width, mode=mode, **options)


register(OpDef("pad", _pad_rule, _pad_kernel, doc="np.pad with static widths"))


def _static_nested(value: Any, func_name: str, what: str) -> Any:
    """A static number or nested sequence of numbers as hashable tuples."""
    if isinstance(value, Tensor) or (isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value)):
        raise UnsupportedOpError(
            f"{func_name}: a tensor as {what} is not supported", user_location(), f"pass {what} as Python numbers"
        )
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise build_error(func_name, TypeError(f"{what} must be numbers"))
    nested = array.tolist()
    return _as_tuples(nested)


def _as_tuples(value):
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list) else value


@handles(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    """Staged ``np.pad`` for the modes constant, edge, reflect, symmetric and wrap."""
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise UnsupportedOpError(
            f"np.pad: mode={mode!r} is not supported", user_location(), f"supported modes: {', '.join(_PAD_MODES)}"
        )
    unknown = sorted(set(kwargs) - set(_PAD_MODES[mode]))
    if unknown:
        raise build_error("np.pad", ValueError(f"unsupported keyword arguments for mode '{mode}': {unknown}"))
    widths = np.asarray(_static_nested(pad_width, "np.pad", "pad_width"))
    if widths.dtype.kind not in "iu":
        raise build_error("np.pad", TypeError("`pad_width` must be of integral type."))
    try:
        per_axis = np.broadcast_to(widths, (array.ndim, 2))
    except ValueError as e:
        raise build_error("np.pad", e) from None
    if (per_axis < 0).any():
        raise build_error("np.pad", ValueError("index can't contain negative values"))
    options = {}
    if "constant_values" in kwargs:
        options["constant_values"] = _static_nested(kwargs["constant_values"], "np.pad", "constant_values")
    if "reflect_type" in kwargs:
        options["reflect_type"] = str(kwargs["reflect_type"])
    if array.ndim == 0:  # no axis to pad: NumPy returns a copy, a 0-d array
        return as_array(apply("copy", array))
    return apply("pad", array, pad_width=_as_tuples(per_axis.tolist()), mode=mode, **options)
