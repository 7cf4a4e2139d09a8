"""Python builtins called on tensors in converted code: ``int``, ``float``, ``round``, ``bool``,
``min``, ``max``, ``sum``, and ``type``/``isinstance`` (``runtime/type_queries.py``).

Eagerly these turn a NumPy value into a Python number (``int(x.sum())``, ``round(v)``), pick one
of their arguments (``max(a, b)``), or iterate a tensor's rows (``max(x)``, ``sum(x)``). A
symbolic tensor has no value while the graph is built, so ``convert_call`` swaps in these
versions, which stage the same thing: the result is a Python number when the graph runs (a
``PythonNumber`` while it is built), the argument Python's comparison picks, or a reduction along
the first axis that gives what Python's loop over the rows gives. With no tensor argument, each
is the builtin itself.
"""

from __future__ import annotations

import builtins
import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, build_error, user_location
from dy2st.ir.symbolic import SymExpr
from dy2st.ops.python_numbers import PYTHON_CONVERSION
from dy2st.runtime.control_flow.cond import cond
from dy2st.runtime.control_flow.values import size_number, widened_keeping_kind, wrap_result
from dy2st.runtime.type_queries import staged_isinstance, staged_type
from dy2st.staging.tensor import Tensor, apply


def _converted(x: Tensor, builtin: Callable[..., Any], **options: Any) -> Any:
    """``builtin(x, **options)`` when the graph runs (``python_conversion``), a Python number to
    user code."""
    result = apply(PYTHON_CONVERSION, x, builtin=builtin, **options)
    return wrap_result(result._builder, result._value)


def staged_len(obj: Any) -> Any:
    """``len(t)``: the length of the first axis, a symbolic size where the graph serves many
    (used as a number, it is read when the graph runs; ``ir/symbolic.py``), a number computed
    when the graph runs where the length depends on the data."""
    if isinstance(obj, Tensor):
        shape = obj.shape
        if not shape:
            raise TypeError("len() of unsized object")
        if isinstance(shape[0], SymExpr) and shape[0].data_dependent:
            # No graph can be chosen by it: a number computed when the graph runs (``len(x[m]) > 0``
            # is a tensor condition), which a shape argument turns back into the size.
            return size_number(obj._builder, shape[0])
        return shape[0]
    return builtins.len(obj)


_NO_IMAG = object()


def staged_int(x: Any = 0, *args: Any) -> Any:
    """``int(t)``: truncates toward zero, raises on NaN and infinity, as eagerly. ``int`` of a
    symbolic size is the size."""
    if isinstance(x, SymExpr) and not args:
        return x
    if not isinstance(x, Tensor) or args:
        return builtins.int(x, *args)
    return _converted(x, builtins.int)


def staged_float(x: Any = 0.0) -> Any:
    """``float(t)``."""
    if not isinstance(x, Tensor):
        return builtins.float(x)
    return _converted(x, builtins.float)


def staged_round(number: Any, ndigits: Any = None) -> Any:
    """``round(v)`` / ``round(v, n)`` as eager code gives it: of a Python number, a Python number
    (Python's correctly rounded decimal rounding); of a NumPy scalar, a Python int or, with
    ``ndigits``, NumPy's rounding in the same dtype (``np.float64.__round__``). An ndarray has no
    ``__round__``: ``round(x)`` raises TypeError, as eagerly."""
    if not isinstance(number, Tensor):
        return builtins.round(number, ndigits)
    if number.type.weak:  # a Python number carried by the graph; ndigits must be a Python int
        return _converted(number, builtins.round, ndigits=None if ndigits is None else operator.index(ndigits))
    if not number._scalar:
        raise _eager_error(TypeError("type numpy.ndarray doesn't define __round__ method"))
    if ndigits is not None:
        return np.round(number, ndigits)
    return _converted(number, builtins.round)


def staged_bool(x: Any = False) -> Any:
    """``bool(t)`` of a one-element tensor or a Python number: a Python bool when the graph runs;
    of more elements or none, NumPy's ValueError, as eagerly (a symbolic size is checked when the
    graph runs, by NumPy)."""
    if not isinstance(x, Tensor):
        return builtins.bool(x)
    if isinstance(x.size, int) and x.size != 1:
        raise _eager_error(_truth_value_error(x.size))
    return _converted(x.reshape(()) if x.ndim else x, builtins.bool)


def staged_complex(real: Any = 0, imag: Any = _NO_IMAG) -> Any:
    """``complex(t)`` of a one-element tensor: a Python complex when the graph runs."""
    if imag is not _NO_IMAG or not isinstance(real, Tensor):
        return builtins.complex(real) if imag is _NO_IMAG else builtins.complex(real, imag)
    return _converted(real, builtins.complex)


def _eager_error(error: Exception) -> Exception:
    """``error``, which eager code raises here, as a build error at the user's line."""
    return build_error(error, f"{error} (NumPy raises here too)", user_location())


# --- builtins that iterate: a tensor's rows ------------------------------------------------------
# `max(x)`, `min(x)` and `sum(x)` of a tensor iterate its rows (NumPy scalars for a 1-d tensor).
# A graph cannot loop in Python over rows it does not have, and unrolling one op per row would
# grow with the array, so each is staged as a NumPy reduction along axis 0 that gives exactly
# what Python's loop gives: the same element, or the same sums in the same order.


def _rows(x: Tensor) -> Any:
    """The number of rows a builtin iterating ``x`` sees (NumPy's TypeError for a 0-d tensor)."""
    if x.ndim == 0:
        raise _eager_error(TypeError("iteration over a 0-d array"))
    return x.shape[0]


def _sum_of_rows(x: Tensor, start: Any) -> Any:
    """``sum(x, start)``: ``start + x[0] + x[1] + ...`` left to right, as one cumulative sum.

    ``np.sum`` would add pairwise (other rounding) and widen small integers; ``np.cumsum`` adds
    in Python's order, in the dtype of ``start + x[0]``, which the later additions keep.
    """
    rows = _rows(x)
    if rows == 0:
        return start
    total = start + x[0]
    if rows == 1:
        return total
    terms = np.concatenate([np.expand_dims(total, 0), x[1:]])
    return np.cumsum(terms, axis=0, dtype=total.dtype)[-1]


def _extreme_row(x: Tensor, largest: bool, builtin_name: str, default: Any) -> Any:
    """``max(x)`` / ``min(x)``: the row Python's comparisons pick, found with one arg-reduction.

    Python compares rows with ``>``/``<``: rows of one element compare by that element, longer
    (or empty) rows raise NumPy's ValueError, and a single row is returned without comparing.
    """
    rows = _rows(x)
    if rows == 0:
        if default is not _NO_DEFAULT:
            return default
        raise _eager_error(ValueError(f"{builtin_name}() iterable argument is empty"))
    if rows == 1:
        return x[0]
    row_size = x.size // rows
    if row_size != 1:
        raise _eager_error(_truth_value_error(row_size))
    values = x if x.ndim == 1 else x.reshape(rows)
    return x[_first_extreme_index(values, largest, builtin_name)]


def _first_extreme_index(values: Tensor, largest: bool, builtin_name: str) -> Any:
    """The index of the element Python's ``max``/``min`` keeps.

    Python keeps the first element and replaces it only by a strictly greater (smaller) one.
    Comparisons with NaN are false, so a NaN is kept only when it comes first, and later NaNs
    are skipped: that is the first extreme of the values with NaNs moved to the far end, unless
    the first value is NaN. ``argmax`` returns the first of equal values (``0.0`` and ``-0.0``)
    like Python.
    """
    arg_extreme = np.argmax if largest else np.argmin
    kind = values.dtype.kind
    if kind in "biu":
        return arg_extreme(values)
    if kind != "f":
        # Complex NumPy values compare by real part first even when the imaginary part is NaN,
        # an order no NumPy reduction follows.
        raise UnsupportedOpError(
            f"{builtin_name}() over the elements of a tensor of {values.dtype} is not supported",
            user_location(),
            f"use np.{builtin_name}(x), which orders NaNs differently, or a for loop",
        )
    nan = np.isnan(values)
    index = arg_extreme(np.where(nan, -np.inf if largest else np.inf, values))
    return np.where(nan[0], 0, index)


def _truth_value_error(size: Any) -> ValueError:
    if size == 0:
        return ValueError(
            "The truth value of an empty array is ambiguous. Use `array.size > 0` to check that an array is not empty."
        )
    return ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or a.all()")


_NO_DEFAULT = object()


def staged_sum(iterable: Any, /, start: Any = 0) -> Any:
    """``sum(x, start)``: over a tensor's rows, a cumulative sum in Python's order."""
    if isinstance(iterable, Tensor):
        return _sum_of_rows(iterable, start)
    return builtins.sum(iterable, start)


def _pick(largest: bool, builtin: Callable[..., Any]):
    """``max``/``min``: over a tensor's rows, an arg-reduction; over arguments or a list some of
    which are tensors, Python's pairwise pick, staged."""
    select = _greater_of if largest else _lesser_of

    def staged(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1:
            (iterable,) = args
            if isinstance(iterable, Tensor):
                if set(kwargs) <= {"default"}:
                    return _extreme_row(iterable, largest, builtin.__name__, kwargs.get("default", _NO_DEFAULT))
                return builtin(iterable, **kwargs)  # key=: refused as iterating a tensor
            # Iterate a generator once: the builtin, if it runs, must see the same items.
            items = iterable if isinstance(iterable, (list, tuple)) else tuple(iterable)
            args = (items,)
        else:
            items = args
        picks_tensors = any(isinstance(a, Tensor) for a in items)
        # `default` only matters for an empty iterable; `key` (and any misuse) goes to the builtin.
        if not picks_tensors or not items or (kwargs and (len(args) != 1 or set(kwargs) != {"default"})):
            return builtin(*args, **kwargs)
        return functools.reduce(select, items)

    return staged


def _greater_of(best: Any, candidate: Any) -> Any:
    # Python's max keeps the first of equal items and replaces it only when `candidate > best`.
    return _either(candidate > best, candidate, best)


def _lesser_of(best: Any, candidate: Any) -> Any:
    return _either(candidate < best, candidate, best)


def _either(take_candidate: Any, candidate: Any, best: Any) -> Any:
    if not isinstance(take_candidate, Tensor):
        return candidate if take_candidate else best
    if take_candidate.size != 1:  # Python asks for the truth value of the comparison
        raise _eager_error(_truth_value_error(take_candidate.size))
    if _python_kind(candidate) is not None and _python_kind(candidate) == _python_kind(best):
        # Python numbers of one kind (a counter and a literal): Python's max gives a Python number.
        return cond(take_candidate, lambda: candidate, lambda: best)
    dtype = np.result_type(*(v.dtype if isinstance(v, Tensor) else v for v in (candidate, best)))
    return cond(take_candidate, lambda: _as(candidate, dtype), lambda: _as(best, dtype))


def _python_kind(value: Any) -> str | None:
    """The dtype kind of a Python number (or a tensor standing for one: weakly typed), else None."""
    if isinstance(value, Tensor):
        return value.dtype.kind if value.type.weak else None
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return "b" if isinstance(value, bool) else np.asarray(value).dtype.kind
    return None


def _as(value: Any, dtype: np.dtype) -> Any:
    """``value`` in the pick's common dtype. A Python number stays one: the branch that picks it
    returns the Python number itself, as eager ``max(0.0, x[0])`` does (the cond records which kind
    each path returns)."""
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else widened_keeping_kind(value, dtype)
    if _python_kind(value) is not None:
        return value
    return np.asarray(value, dtype=dtype)[()]


staged_max = _pick(True, builtins.max)
staged_min = _pick(False, builtins.min)

STAGED_BUILTINS: dict[Any, Callable[..., Any]] = {
    builtins.len: staged_len,
    builtins.int: staged_int,
    builtins.float: staged_float,
    builtins.round: staged_round,
    builtins.bool: staged_bool,
    builtins.complex: staged_complex,
    builtins.max: staged_max,
    builtins.min: staged_min,
    builtins.sum: staged_sum,
    builtins.type: staged_type,
    builtins.isinstance: staged_isinstance,
}
