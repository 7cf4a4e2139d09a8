"""Complex parts: ``x.real``, ``x.imag`` (and ``np.real``, ``np.imag``), assigning them, and the
functions built on them: ``np.angle``, ``x.conj()``, ``np.iscomplex``, ``np.isreal``,
``np.iscomplexobj``, ``np.isrealobj``.

``x.real`` of a complex array is a view of its real parts (float64 for complex128, float32 for
complex64), and of a real array a view of the array itself; ``x.imag`` of a complex array is a
view of its imaginary parts, and of a real array a new read-only array of zeros. The views are
exact views (staging/views.py): they follow later updates of ``x``, and an update of the view
(``r += 1``, ``r[0] = 2``, ``x.imag *= -1``) is written into ``x``. ``x.real = v`` and
``x.imag = v`` are ``x.real[...] = v`` and ``x.imag[...] = v``, as in NumPy.

Before (user code)::

    power = X.real ** 2 + X.imag ** 2
    X.imag *= -1

After (IR)::

    %0 = real_part %X : f64[8]
    %1 = power %0, 2 : f64[8]
    %2 = imag_part %X : f64[8]
    %3 = power %2, 2 : f64[8]
    %power = add %1, %3 : f64[8]
    %4 = imag_part %X : f64[8]
    %5 = multiply %4, -1 : f64[8]
    %6 = with_imag_part %X, %5 : c128[8]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType
from dy2st.ops.arguments import build_error
from dy2st.ops.indexing import setitem
from dy2st.ops.shape import not_writable, same_kind
from dy2st.staging.handlers import handles, method, prop, setter
from dy2st.staging.tensor import Tensor, apply
from dy2st.staging.views import OpView, make_view

REAL_PART, IMAG_PART = "real_part", "imag_part"
_WITH_PART = {REAL_PART: "with_real_part", IMAG_PART: "with_imag_part"}
_ATTRIBUTE = {REAL_PART: "real", IMAG_PART: "imag"}


def part_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of either part of an array of ``dtype``: float32 for complex64, else ``dtype``."""
    return np.empty(0, dtype).real.dtype


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def _part_rule(types):
    (t,) = types
    return TensorType(t.shape, part_dtype(t.dtype))


def _with_part_rule(types):
    x, part = types
    if not is_complex(x.dtype):
        raise TypeError("array does not have imaginary part to set")
    if (part.shape, part.dtype) != (x.shape, part_dtype(x.dtype)):
        raise ValueError(f"the parts of {x} must be {TensorType(x.shape, part_dtype(x.dtype))}, not {part}")
    return x.strong()


def _with_real_part(x, part):
    out = np.array(x)  # a copy, and an array even where the executor holds a NumPy scalar
    out.real = part
    return out


def _with_imag_part(x, part):
    out = np.array(x)
    out.imag = part
    return out


def _set_real_part(x, part):
    """``x.real = part`` in ``x``'s own buffer (the ``in-place-updates`` pass: the old ``x`` is dead)."""
    x.real = part
    return x


def _set_imag_part(x, part):
    """``x.imag = part`` in ``x``'s own buffer (the ``in-place-updates`` pass: the old ``x`` is dead)."""
    x.imag = part
    return x


# np.real/np.imag, not the attribute: the executor may hold a 0-d value as a Python number.
register(OpDef(REAL_PART, _part_rule, np.real, view=True, doc="x.real: a view of the real parts"))
register(OpDef(IMAG_PART, _part_rule, np.imag, view=True, doc="x.imag: a view of the imaginary parts (zeros if real)"))
register(
    OpDef(
        _WITH_PART[REAL_PART],
        _with_part_rule,
        _with_real_part,
        returns_fresh=True,
        updates_operand=0,
        in_place_kernel=_set_real_part,
        doc="x with its real parts replaced: functionally x.real = v",
    )
)
register(
    OpDef(
        _WITH_PART[IMAG_PART],
        _with_part_rule,
        _with_imag_part,
        returns_fresh=True,
        updates_operand=0,
        in_place_kernel=_set_imag_part,
        doc="x with its imaginary parts replaced: functionally x.imag = v",
    )
)


def _write_back(part: str):
    """How an update of ``x.real``/``x.imag`` becomes one of ``x``: ``x`` with those parts replaced
    (the real part of a real array is the array itself)."""
    with_part = _WITH_PART[part]

    def write_back(parent: Tensor, new: Tensor, index_tensors: list[Tensor], attrs: dict[str, Any]) -> Tensor:
        return apply(with_part, parent, new) if is_complex(parent.dtype) else new

    return write_back


_RECIPES = {
    REAL_PART: OpView(REAL_PART, write_back_fn=_write_back(REAL_PART)),
    IMAG_PART: OpView(IMAG_PART, write_back_fn=_write_back(IMAG_PART)),
}
_REAL_ZEROS = OpView(IMAG_PART)  # x.imag of a real x: NumPy makes the zeros read-only


def complex_part(x: Any, part: str) -> Any:
    """``x.real`` (``part=REAL_PART``) or ``x.imag``: an exact view of ``x`` that follows its updates
    and writes its own into it (``x.imag`` of a real ``x``: read-only zeros). A NumPy scalar's part
    is a NumPy scalar, as in eager code."""
    result = same_kind(apply(part, x), x)
    if result._scalar:
        return result
    read_only = part == IMAG_PART and not is_complex(x.dtype)
    return make_view(result, x, _REAL_ZEROS if read_only else _RECIPES[part])


@prop("real")
def real_property(x):
    return complex_part(x, REAL_PART)


@prop("imag")
def imag_property(x):
    return complex_part(x, IMAG_PART)


@handles(np.real)
def real(val):
    """Staged ``np.real``: ``val.real``."""
    return complex_part(val, REAL_PART)


@handles(np.imag)
def imag(val):
    """Staged ``np.imag``: ``val.imag``."""
    return complex_part(val, IMAG_PART)


def _assign_part(part: str):
    name = _ATTRIBUTE[part]

    def assign(x: Tensor, value: Any) -> None:
        """``x.real = value`` / ``x.imag = value``: ``x.real[...] = value``, as NumPy does it."""
        if x._scalar:
            raise not_writable(x, name)
        if part == IMAG_PART and not is_complex(x.dtype):
            raise build_error(f"{name} assignment", TypeError("array does not have imaginary part to set"))
        if isinstance(value, Tensor) and value._parent is x and value._recipe is _RECIPES[part]:
            return  # ``x.imag *= -1`` updated x through the view, then assigns the view back
        view = complex_part(x, part)
        view._assign(setitem(view, Ellipsis, value), f"assignment to .{name}")

    return assign


setter("real")(_assign_part(REAL_PART))
setter("imag")(_assign_part(IMAG_PART))


@method("conj", "conjugate")
def conjugate_method(x):
    """Staged ``ndarray.conj()``: the conjugate of a complex array; a real array itself (the same
    array object, as NumPy returns it)."""
    if is_complex(x.dtype):
        return apply("conjugate", x)
    return x


@handles(np.angle)
def angle(z, deg=False):
    """Staged ``np.angle``: ``arctan2(z.imag, z.real)`` (``arctan2(0, z)`` for real ``z``), in
    degrees with ``deg``, computed as NumPy computes it."""
    if is_complex(z.dtype):
        result = apply("arctan2", complex_part(z, IMAG_PART), complex_part(z, REAL_PART))
    else:
        result = apply("arctan2", 0, z)
    if deg:
        result = apply("multiply", result, 180 / np.pi)
    return result


@handles(np.iscomplexobj)
def iscomplexobj(x):
    """Staged ``np.iscomplexobj``: a Python bool known from the dtype."""
    return is_complex(x.dtype)


@handles(np.isrealobj)
def isrealobj(x):
    """Staged ``np.isrealobj``: a Python bool known from the dtype."""
    return not is_complex(x.dtype)


@handles(np.iscomplex)
def iscomplex(x):
    """Staged ``np.iscomplex``: where the imaginary part is non-zero (nowhere, for a real array)."""
    return apply("not_equal", complex_part(x, IMAG_PART), 0)


@handles(np.isreal)
def isreal(x):
    """Staged ``np.isreal``: ``np.imag(x) == 0``."""
    return apply("equal", complex_part(x, IMAG_PART), 0)
