"""Structural ops: constants, control flow, terminators, and side effects (print, assert).

``cond`` and ``while_loop`` get their result types from the staging runtime, which checks that
branch outputs and loop-carried values keep one type; their rule here only refuses re-inference.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from dy2st.errors import GraphAssertionError
from dy2st.ir.core import COND, CONST, RETURN, WHILE_LOOP, YIELD
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import type_of_array, type_of_python_scalar


def _const_type(types, value):
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return type_of_python_scalar(value)
    return type_of_array(np.asarray(value))


def _types_given_by_staging(types, **attrs):
    raise TypeError("result types are set when the op is staged")


def _no_results(types, **attrs):
    return []


def print_kernel(*arrays, template, sep=" ", end="\n"):
    """Print ``template`` with each ``None`` slot replaced by the next runtime array."""
    it = iter(arrays)
    parts = [next(it) if slot is None else slot.render(it) for slot in template]
    print(*parts, sep=sep, end=end, file=sys.stdout, flush=True)


class Formatted:
    """A string with tensors formatted into it (``f"loss={loss:.3f}"``), printed by the print op:
    ``pieces`` are literal text and, for each tensor, its format spec in a one-item tuple."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: tuple):
        self.pieces = pieces

    def render(self, arrays) -> str:
        return "".join(piece if isinstance(piece, str) else format(next(arrays), piece[0]) for piece in self.pieces)

    def __repr__(self) -> str:
        return repr("".join(piece if isinstance(piece, str) else "{:" + piece[0] + "}" for piece in self.pieces))

    def __eq__(self, other) -> bool:
        return isinstance(other, Formatted) and other.pieces == self.pieces

    def __hash__(self) -> int:
        return hash(self.pieces)


class Literal:
    """A Python value printed as-is by the print op (kept apart from tensor slots)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def render(self, arrays) -> Any:
        return self.value

    def __repr__(self) -> str:
        return repr(self.value)

    def __eq__(self, other) -> bool:
        return isinstance(other, Literal) and type(other.value) is type(self.value) and other.value == self.value

    def __hash__(self) -> int:
        return hash((type(self.value), repr(self.value)))


def assert_kernel(pred, *formatted, message, loc):
    """Raise the user's assertion error when a tensor ``assert`` fails at run time. ``message``:
    the text, or a ``Formatted`` rendered from the ``formatted`` values (``f"n is {n}"``)."""
    if not np.all(pred):
        if isinstance(message, Formatted):
            message = message.render(iter(formatted))
        text = "assertion failed" + (f": {message}" if message else "")
        raise GraphAssertionError(text, loc)


register(OpDef(CONST, _const_type, structural=True, doc="a literal constant; attribute value"))
register(
    OpDef(
        COND,
        _types_given_by_staging,
        num_results=-1,
        structural=True,
        control_flow=True,
        doc="if/else on a 0-d bool; regions then, else",
    )
)
register(
    OpDef(
        WHILE_LOOP,
        _types_given_by_staging,
        num_results=-1,
        structural=True,
        control_flow=True,
        doc="loop; regions cond, body over carried values",
    )
)
register(
    OpDef(
        YIELD,
        _no_results,
        num_results=0,
        structural=True,
        terminator=True,
        doc="ends a region, handing its values to the parent op",
    )
)
register(OpDef(RETURN, _no_results, num_results=0, structural=True, terminator=True, doc="ends the graph body"))
PRINT, ASSERT = "print", "assert"
"""Opcodes of the side-effecting ops the runtime stages for ``print(...)`` and tensor ``assert``."""

register(OpDef(PRINT, _no_results, print_kernel, side_effect=True, num_results=0, doc="print at run time"))
register(
    OpDef(
        ASSERT,
        _no_results,
        assert_kernel,
        side_effect=True,
        raises_when_run=True,
        num_results=0,
        doc="assert at run time",
    )
)
