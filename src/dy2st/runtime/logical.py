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

from dy2st.errors import TensorValueError, user_location
from dy2st.ops.shape import RESHAPE
from dy2st.staging.tensor import Tensor, apply, apply_ufunc

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


def truth_value(tensor: Tensor) -> Tensor:
    """The truth value of a one-element tensor as a 0-d bool tensor, as ``bool(array)`` in NumPy.

    Raises:
        TensorValueError: the tensor has more or fewer than one element (NumPy raises too).
    """
    if tensor.size != 1:
        raise TensorValueError(
            f"the truth value of a tensor {tensor.type} with {tensor.size} elements is ambiguous "
            "(NumPy raises here too)",
            user_location(),
            "reduce it first with np.any(...) or np.all(...)",
        )
    if tensor.shape != ():
        tensor = apply(RESHAPE, tensor, shape=())
    if tensor.dtype.kind != "b":
        tensor = apply_ufunc(np.not_equal, tensor, 0)
    return tensor


def _truth(operand: Any) -> Any:
    """A tensor's truth value tensor, or a Python value's ``bool``."""
    return truth_value(operand) if isinstance(operand, Tensor) else bool(operand)


def convert_logical_and(left_fn: Callable[[], Any], right_fn: Callable[[], Any]) -> Any:
    """``left and right``: Python's ``and`` for a Python ``left``, ``logical_and`` for a tensor.

    Args:
        left_fn: computes the left operand.
        right_fn: computes the right operand; called only when Python's ``and`` would evaluate it,
            or always when the left operand is a tensor.
    """
    left = left_fn()
    if not isinstance(left, Tensor):
        return right_fn() if left else left
    left_truth = truth_value(left)
    return apply_ufunc(np.logical_and, left_truth, _truth(right_fn()))


def convert_logical_or(left_fn: Callable[[], Any], right_fn: Callable[[], Any]) -> Any:
    """``left or right``: Python's ``or`` for a Python ``left``, ``logical_or`` for a tensor."""
    left = left_fn()
    if not isinstance(left, Tensor):
        return left if left else right_fn()
    left_truth = truth_value(left)
    return apply_ufunc(np.logical_or, left_truth, _truth(right_fn()))


def convert_logical_not(operand: Any) -> Any:
    """``not operand``: Python's ``not`` for a Python value, ``logical_not`` of a tensor's truth."""
    if not isinstance(operand, Tensor):
        return not operand
    return apply_ufunc(np.logical_not, truth_value(operand))


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
