"""Python numbers carried by staged control flow: ``as_python_number``."""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.opcodes import AS_PYTHON_NUMBER, DIM
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType


def _as_python_number_rule(types: list[TensorType]) -> TensorType:
    (t,) = types
    if t.shape != ():
        raise ValueError(f"only a 0-d value can become a Python number, got {t}")
    return TensorType((), t.dtype, weak=True)


def _as_python_number(value: Any) -> Any:
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


# A loop-carried Python number (``i = 0`` ... ``i += 1``) must stay a Python number from one
# iteration to the next, as in eager code, so it keeps promoting weakly (``x_f32 * i`` is f32).
# NumPy returns np.int64 for ``i + 1``; this op turns it back into an int before the next iteration.
register(
    OpDef(
        AS_PYTHON_NUMBER,
        _as_python_number_rule,
        _as_python_number,
        doc="a 0-d value as a Python number (weakly typed); loop-carried Python numbers",
        vjp=lambda e, op, cts: [cts[0]],
        onnx=lambda w, op: [w.input(op.operands[0], op.result.type.dtype)],
    )
)


# `int(t)`, `float(t)`, `round(t)` of a 0-d tensor: the builtin applied to the NumPy scalar when
# the graph runs, so the result is the same Python number eager code gets, and the same error
# (`int(nan)` is a ValueError, `int(inf)` an OverflowError). `round(n, ndigits)` of a Python
# number (attribute ndigits) is Python's rounding of it, of the number's own type; `bool(t)` is
# the truth value, `complex(t)` the Python complex.
PYTHON_CONVERSION = "python_conversion"
_CONVERSION_DTYPES = {
    int: np.dtype(np.int64),
    round: np.dtype(np.int64),
    float: np.dtype(np.float64),
    bool: np.dtype(np.bool_),
    complex: np.dtype(np.complex128),
}


def _python_conversion_rule(types: list[TensorType], *, builtin: Any, ndigits: int | None = None) -> TensorType:
    (t,) = types
    if t.shape != ():
        raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
    if t.dtype.kind == "c" and builtin not in (float, bool, complex):
        raise TypeError(f"{builtin.__name__}() of a complex value")
    if ndigits is not None:  # round(number, ndigits) keeps an int an int and a float a float
        return TensorType((), np.dtype(np.float64 if t.dtype.kind == "f" else np.int64), weak=True)
    return TensorType((), _CONVERSION_DTYPES[builtin], weak=True)


def _python_conversion(value: Any, *, builtin: Any, ndigits: int | None = None) -> Any:
    number = value[()] if isinstance(value, np.ndarray) else value
    if ndigits is None:
        return builtin(number)
    return builtin(_as_python_number(number), ndigits)


register(
    OpDef(
        PYTHON_CONVERSION,
        _python_conversion_rule,
        _python_conversion,
        doc="int/float/round/bool/complex of a 0-d value at run time: a Python number (attributes builtin, ndigits)",
        # float(x) passes the gradient on; int, round and bool results carry none
        vjp=lambda e, op, cts: [cts[0] if op.attrs["builtin"] is float else None],
    )
)


# A symbolic size used as a number (``x / len(x)``, ``n = x.shape[0]; s / n``): the size of an
# argument's axis, read when the graph runs, as the Python int eager code has (staging/builder.py
# ``size_value`` builds a polynomial size from these).


def _dim_rule(types: list[TensorType], *, axis: int) -> TensorType:
    (t,) = types
    if not 0 <= axis < t.ndim:
        raise ValueError(f"axis {axis} is out of bounds for {t}")
    return TensorType((), np.dtype(np.int64), weak=True)


def _dim(x: Any, *, axis: int) -> int:
    return x.shape[axis]


register(OpDef(DIM, _dim_rule, _dim, doc="the size of axis `axis` of an array, as a Python int"))


def python_power(base: Any, exponent: Any, expected: type) -> Any:
    """``base ** exponent`` on Python numbers, as Python computes it, for a power the graph typed
    ``expected`` when it was built. Python's result type depends on the values (``2 ** -1`` is a
    float, ``(-8.0) ** 0.5`` a complex), which one graph cannot follow: another type is refused
    here rather than carried on as a value of the wrong type."""
    result = base**exponent
    if type(result) is not expected:
        raise TypeError(
            f"{base!r} ** {exponent!r} is the Python {type(result).__name__} {result!r}, but the graph was built "
            f"for a Python {expected.__name__} here; make the base a float (or complex) before the power, "
            "so its type does not depend on the values"
        )
    return result
