"""``and``/``or``/``not``, chained comparisons and ternaries in converted code.

Python operands keep Python's semantics exactly: ``a and b`` returns ``a`` without evaluating ``b``
when ``a`` is falsy, and returns an operand, not a bool. A symbolic tensor has no truth value while
the graph is built, so when the deciding operand is a tensor the expression becomes a logical op on
the *truth values* of the operands, a 0-d bool tensor (as AutoGraph and Paddle define it)::

    a and b   ->  logical_and(bool(a), bool(b))     when a is a tensor
    a or b    ->  logical_or(bool(a), bool(b))      when a is a tensor
    not a     ->  logical_not(bool(a))              when a is a tensor

where ``bool(t)`` of a tensor is ``t != 0`` for a tensor with one element (NumPy's truth value) and
an error for any other size, as in NumPy. Both operands are then computed in the graph: guard an
operand that is only valid when the other holds (``i < n and x[i] > 0``) with a nested ``if``.

A ternary ``x if c else y`` with a tensor ``c`` becomes a ``cond`` op, like ``if``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.ir.types import TensorType
from dy2st.runtime.control_flow.cond import cond
from dy2st.runtime.control_flow.truth import truth_value
from dy2st.runtime.control_flow.values import is_python_number, python_number, static_type
from dy2st.staging.tensor import Tensor, apply_ufunc

_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtE": operator.le,
    "Gt": operator.gt,
    "GtE": operator.ge,
    "Is": operator.is_,
    "IsNot": operator.is_not,
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
}


def _truth(operand: Any) -> Any:
    """A tensor's truth value tensor, or a Python value's ``bool``."""
    return truth_value(operand) if isinstance(operand, Tensor) else bool(operand)


def convert_logical_and(left_fn: Callable[[], Any], right_fn: Callable[[], Any], truth_only: bool = False) -> Any:
    """``left and right`` with Python's semantics: ``right`` is evaluated only where ``left`` is
    true, and the result is the operand that decided.

    For a tensor ``left`` this is a ``cond`` on its truth value whose true branch computes
    ``right`` (so ``i < n and x[i] > 0`` never indexes where ``i < n`` is false) and whose false
    branch gives ``left`` back. Where only the truth of the result matters (``truth_only``: an
    ``if``/``while``/``assert`` test, the operand of ``not``), both branches give 0-d bools.

    Args:
        left_fn: computes the left operand.
        right_fn: computes the right operand; called only when Python's ``and`` would evaluate it
            (for a tensor ``left``: inside the branch that runs when it is true).
        truth_only: the caller only tests the result's truth value.
    """
    left = left_fn()
    if not isinstance(left, Tensor):
        return right_fn() if left else left
    left_truth = truth_value(left)
    if truth_only:
        return cond(left_truth, lambda: _truth_tensor(right_fn()), lambda: left_truth)
    return _pick_operand(left_truth, left, right_fn)


def convert_logical_or(left_fn: Callable[[], Any], right_fn: Callable[[], Any], truth_only: bool = False) -> Any:
    """``left or right``: like ``convert_logical_and``, with ``right`` evaluated where ``left`` is false."""
    left = left_fn()
    if not isinstance(left, Tensor):
        return left if left else right_fn()
    left_truth = truth_value(left)
    if truth_only:
        return cond(left_truth, lambda: left_truth, lambda: _truth_tensor(right_fn()))
    return _pick_operand(apply_ufunc(np.logical_not, left_truth), left, right_fn)


def _pick_operand(evaluate_right: Tensor, left: Tensor, right_fn: Callable[[], Any]) -> Any:
    """``right_fn()`` where ``evaluate_right`` holds, else ``left``: the operand Python returns.

    The two operands may have different dtypes (``count and 0.5``); eager code then returns a
    value whose type depends on the data, which one graph cannot, so both become their common
    dtype (values and truth are kept; docs/semantics.md).
    """
    common: list[np.dtype] = []

    def right_branch() -> Any:
        right = right_fn()
        common.append(np.result_type(left.dtype, right.dtype if isinstance(right, Tensor) else right))
        return _as_dtype(right, common[0])

    # cond traces the true branch first, so the common dtype is known when the left one is traced.
    return cond(evaluate_right, right_branch, lambda: _as_dtype(left, common[0]))


def _as_dtype(value: Any, dtype: np.dtype) -> Any:
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    if is_python_number(value) and static_type(value) == TensorType((), dtype, weak=True):
        return value  # with a Python number of its type on the other side, the result is one too
    return np.asarray(value, dtype=dtype)[()]


def _truth_tensor(operand: Any) -> Any:
    """The truth value of ``operand`` as a 0-d bool tensor (a Python value as a Python bool)."""
    return truth_value(operand) if isinstance(operand, Tensor) else np.bool_(bool(operand))


def convert_logical_not(operand: Any) -> Any:
    """``not operand``: Python's ``not`` for a Python value, ``logical_not`` of a tensor's truth."""
    if not isinstance(operand, Tensor):
        return not operand
    result = apply_ufunc(np.logical_not, truth_value(operand))
    return python_number(result) if operand.type.weak else result  # `not k` of a number: a bool


def convert_compare_chain(first_fn: Callable[[], Any], *links: tuple[str, Callable[[], Any]]) -> Any:
    """``a < b < c``: ``a < b and b < c`` with ``b`` computed once, as Python evaluates it.

    Args:
        first_fn: computes the leftmost operand.
        links: ``(comparison, operand_fn)`` pairs; ``comparison`` is the gast operator class name
            (``"Lt"``, ``"Eq"``, ...). An operand is computed only when the chain gets to it.
    """
    left = first_fn()
    result: Any = True
    for index, (comparison, operand_fn) in enumerate(links):
        right = operand_fn()
        current = _COMPARISONS[comparison](left, right)
        if index == 0:
            result = current
        else:
            result = convert_logical_and(lambda r=result: r, lambda c=current: c)  # type: ignore[misc]
        if not isinstance(result, Tensor) and not result:
            return result
        left = right
    return result
