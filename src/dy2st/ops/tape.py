"""The tape of a differentiated loop: the values each iteration started from, pushed while the
loop runs forward and popped while its adjoint runs the iterations backwards (docs/autodiff.md).

A tape is a run-time Python list, typed ``object[]`` in the graph. Each op returns the tape it
was given, updated: the autodiff transformation threads a tape through the loop as a carried
value and uses each tape value once, so the ops may update the list in place and still read as
pure functions of their operands. A push copies the arrays it saves, because memory planning and
in-place updates may later reuse the buffers of the values it was given.

Before (a loop the gradient goes through)::

    %x_1 = while_loop (%x) ... body (%x_3: f64[]) { ... yield %x_4 }

After (its forward half)::

    %t = tape_new {tape=0} : object[]
    %x_1, %t_1 = while_loop (%x, %t) ... body (%x_3: f64[], %t_2: object[]) {
      %t_3 = tape_push %t_2, %x_3 : object[]
      ...
      yield %x_4, %t_3
    }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.opcodes import TAPE_NEW, TAPE_NONEMPTY, TAPE_POP, TAPE_PUSH
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType

TAPE_TYPE = TensorType((), np.dtype(object))
"""The graph type of a tape."""


def _new_rule(types: list[TensorType], tape: int) -> TensorType:
    return TAPE_TYPE


def _new(tape: int) -> list[Any]:
    return []


def _push_rule(types: list[TensorType]) -> TensorType:
    if not types or types[0] != TAPE_TYPE:
        raise TypeError("tape_push takes a tape and the values to save")
    return TAPE_TYPE


def _push(tape: list[Any], *values: Any) -> list[Any]:
    tape.append(tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values))
    return tape


def _pop_rule(types: list[TensorType], saved: tuple[TensorType, ...]) -> list[TensorType]:
    if len(types) != 1 or types[0] != TAPE_TYPE:
        raise TypeError("tape_pop takes a tape")
    return [TAPE_TYPE, *saved]


def _pop(tape: list[Any], saved: tuple[TensorType, ...]) -> Any:
    values = tape.pop()
    return (tape, *values) if saved else tape  # a one-result op returns its value itself


def _nonempty_rule(types: list[TensorType]) -> TensorType:
    return TensorType((), np.dtype(bool))


def _nonempty(tape: list[Any]) -> np.bool_:
    return np.bool_(len(tape) > 0)


# ``tape``: a number unique to each tape, so that common subexpression elimination never merges
# two new tapes into one list.
register(OpDef(TAPE_NEW, _new_rule, _new, returns_fresh=True, doc="a new empty tape (a loop's saved iterations)"))
register(OpDef(TAPE_PUSH, _push_rule, _push, doc="the tape with copies of the operands pushed"))
register(
    OpDef(
        TAPE_POP, _pop_rule, _pop, num_results=-1, doc="the tape and the values it pops (attribute saved: their types)"
    )
)
register(OpDef(TAPE_NONEMPTY, _nonempty_rule, _nonempty, doc="does the tape hold any values?"))
