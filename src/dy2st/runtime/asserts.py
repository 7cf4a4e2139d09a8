"""``assert`` in converted code: Python's assert for Python values, a graph assertion for tensors.

A tensor condition is only known when the graph runs, so ``assert pred, msg`` on a tensor emits the
side-effecting ``assert`` op: it is never removed by the optimizing passes, and it raises
``GraphAssertionError`` naming the user's file and line at run time when ``pred`` is false. As in
NumPy, ``pred`` must have one element (``assert np.all(x > 0)``, not ``assert x > 0``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dy2st.errors import GraphBuildError, user_location
from dy2st.ops.structural import ASSERT, Formatted
from dy2st.runtime.control_flow.truth import truth_value
from dy2st.staging.builder import FORMAT_MARK
from dy2st.staging.tensor import Tensor, apply_effect


def convert_assert(pred: Any, message_fn: Callable[[], Any] | None = None) -> None:
    """``assert pred, message``.

    Args:
        pred: the asserted condition (a Python value or a tensor).
        message_fn: computes the message, or None when the ``assert`` has none. For a Python
            ``pred`` it is called only when the assertion fails, as Python evaluates the message;
            for a tensor ``pred`` it is called while the graph is built and must give a Python
            value (rendered with ``str``), shown if the assertion fails at run time.

    Raises:
        AssertionError: ``pred`` is a falsy Python value (exactly as Python's ``assert``).
        GraphBuildError: ``pred`` is a tensor and the message is a tensor.
        TensorValueError: ``pred`` is a tensor with more than one element (NumPy raises too).
    """
    if not isinstance(pred, Tensor):
        if not pred:
            raise AssertionError if message_fn is None else AssertionError(message_fn())
        return
    message = None if message_fn is None else message_fn()
    if isinstance(message, Tensor):
        raise GraphBuildError(
            "the message of a tensor 'assert' is a tensor; it must be a Python value",
            user_location(),
            "format the message from Python values, or print the tensor before the assert",
        )
    text = None if message is None else str(message)
    formatted: list[Tensor] = []
    if text is not None and FORMAT_MARK in text:  # f"n is {n}" of a tensor: formatted when it fails
        builder = pred._builder
        message = Formatted(builder.formatted_pieces(text, formatted))
        apply_effect(ASSERT, truth_value(pred), *formatted, message=message, loc=user_location())
        return
    apply_effect(ASSERT, truth_value(pred), message=text, loc=user_location())
