"""Checking the arguments of NumPy entry points: static shapes, axes, and rejected options.

Handlers accept NumPy's full signatures so a user's call binds the same way it does eagerly, then
refuse (with ``UnsupportedOpError`` naming the function, the argument and the user's line) every
argument whose behaviour dy2st does not reproduce, instead of silently ignoring it.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, UnsupportedOpError, user_location
from dy2st.errors import build_error as error_at_build
from dy2st.ir.symbolic import SymExpr

# Default values that mean "not given" for arguments we refuse.
NOT_GIVEN = object()


def reject_unsupported(func_name: str, **given: Any) -> None:
    """Raise ``UnsupportedOpError`` if any of ``given`` holds something other than its default.

    Each keyword maps an argument name to ``(value, default)``; a value that ``is`` the default
    (or equals it, for plain Python values) is accepted.
    """
    bad = [name for name, (value, default) in given.items() if not _is_default(value, default)]
    if bad:
        plural = "s" if len(bad) > 1 else ""
        raise UnsupportedOpError(
            f"{func_name}: the argument{plural} {', '.join(repr(b) for b in bad)} "
            f"{'are' if plural else 'is'} not supported on symbolic tensors",
            user_location(),
            "see docs/numpy-support.md for the supported surface",
        )


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    if isinstance(default, (bool, int, float, str)) and isinstance(value, (bool, int, float, str)):
        return type(value) is type(default) and value == default
    return False


def build_error(func_name: str, error: Exception) -> GraphBuildError:
    """NumPy's own complaint about a call, as a dy2st error at the user's line (also an instance
    of the complaint's class, as eager code raises it)."""
    return error_at_build(error, f"{func_name}: {error}", user_location())


def static_int(value: Any, what: str) -> int:
    """A Python int from a build-time value (a tensor here raises ``TensorValueError``)."""
    try:
        return operator.index(value)
    except TypeError:
        raise GraphBuildError(f"{what} must be an integer, got {type(value).__name__}", user_location()) from None


def _size_held(value: Any) -> SymExpr | None:
    """The size a staged number holds when it is one (``len(x[m])``, computed when the graph
    runs from the data-dependent size: ``GraphBuilder.size_value``), else None."""
    builder = getattr(value, "_builder", None)
    if builder is None:
        return None
    return builder.size_of_value.get(value._value)


def _dimension(d: Any, func_name: str) -> Any:
    if isinstance(d, SymExpr):
        return d
    held = _size_held(d)
    return held if held is not None else static_int(d, f"{func_name}: each dimension of the shape")


def static_shape(shape: Any, func_name: str) -> tuple[Any, ...]:
    """A shape argument (an int or a sequence of ints) as a tuple, checked like NumPy does. A
    symbolic size (``np.zeros((len(x), 3))`` in a graph serving many lengths) stays symbolic."""
    dims = (shape,) if not isinstance(shape, (tuple, list)) else shape
    result = tuple(_dimension(d, func_name) for d in dims)
    if any(d < 0 for d in result):
        raise GraphBuildError(f"{func_name}: negative dimensions are not allowed", user_location())
    return result


def normalize_axes(axis: Any, ndim: int, func_name: str) -> tuple[int, ...]:
    """An int or tuple of ints as non-negative axes of an array with ``ndim`` dimensions."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    result = []
    for a in axes:
        a = static_int(a, f"{func_name}: axis")
        if not -ndim <= a < ndim:
            raise axis_error(func_name, a, ndim)
        result.append(a % ndim)
    if len(set(result)) != len(result):
        raise error_at_build(ValueError("repeated axis"), f"{func_name}: repeated axis", user_location())
    return tuple(result)


def axis_error(func_name: str, axis: int, ndim: int) -> GraphBuildError:
    """NumPy's ``AxisError`` for an axis out of bounds, at the user's line (also an instance of
    ``AxisError``, ``ValueError`` and ``IndexError``, as eagerly)."""
    error = np.exceptions.AxisError(axis, ndim)
    return error_at_build(error, f"{func_name}: {error}", user_location(2))


def normalize_dtype(dtype: Any) -> np.dtype | None:
    """``np.dtype(dtype)``, or None for None (a hashable attribute for the op)."""
    return None if dtype is None else np.dtype(dtype)


def python_scalar(value: Any) -> Any:
    """A NumPy scalar as the equivalent Python scalar (a plain, hashable attribute value)."""
    return value.item() if isinstance(value, np.generic) else value
