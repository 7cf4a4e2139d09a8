"""The tape of a differentiated loop: the values each iteration left for its adjoint, recorded
while the loop runs forward and read while its adjoint runs the iterations backwards
(docs/autodiff.md). It takes one of two forms.

**Stacked rows**, for a loop whose trip count is known when it starts (a rolled ``for ... in
range(n)``): one array per saved value, of shape ``(rows, *saved_shape)``, allocated before the
loop by ``tape_rows_new`` and carried through it; iteration ``i`` writes its value into row ``i``
(``setitem``, which the ``in-place-updates`` pass runs in the array's own buffer) and the backward
loop reads row ``i`` back (``getitem``, a view). Nothing but the row is copied, and the arrays are
exactly the saved bytes. The rows are ordinary indexing so that the passes and both tiers treat
them as any in-place row update of a loop (``C[i, :] = v``). The RNN's hidden state, saved as
the value each step starts from and the one the loop ends with (``autodiff/stacked.py``)::

    %s = tape_rows_new 201 {dtype=float64, row_shape=(32,), rows=201, tape=0} : f64[201,32]
    %h_1, %i_1, %s_1 = while_loop (%h, 0, %s) ... body (%h_3, %i_2, %s_2) {
      %s_3 = setitem %s_2, %h_3, %i_2 {template=(%, :)} : f64[201,32]
      ...
      yield %h_4, %i_3, %s_3
    }
    %s_4 = setitem %s_1, %h_1, 200 {template=(%, :)} : f64[201,32]

**A list**, for the other loops (a ``while`` on a tolerance, a loop with ``break``), whose trip
count is known only once they end. A list tape is a run-time Python list, typed ``object[]`` in
the graph. Each op returns the tape it was given, updated: the autodiff transformation threads a
tape through the loop as a carried value and uses each tape value once, so the ops may update the
list in place and still read as pure functions of their operands. A push copies the arrays it
saves, because memory planning and in-place updates may later reuse the buffers of the values it
was given.

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

from dy2st.ir.core import Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, TAPE_NEW, TAPE_NONEMPTY, TAPE_POP, TAPE_PUSH, TAPE_ROWS_NEW
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import Dim, data_dependent_size, is_data_dependent
from dy2st.ir.types import TensorType
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.ops.linalg import ADD_MATMUL

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


# --- stacked rows ----------------------------------------------------------------------------
def _rows_new_rule(
    types: list[TensorType], *, rows: Dim | None, row_shape: tuple[Dim, ...], dtype: np.dtype, tape: int
) -> TensorType:
    if len(types) != 1 or types[0].ndim != 0 or types[0].dtype.kind not in "iu":
        raise TypeError("tape_rows_new takes the number of rows")
    # ``rows`` None: a count known only when the graph runs (``range(n)`` of a number input).
    return TensorType((data_dependent_size() if rows is None else rows, *row_shape), np.dtype(dtype))


def _rows_new(count: Any, *, rows: Any, row_shape: tuple[int, ...], dtype: np.dtype, tape: int) -> np.ndarray:
    return np.empty((int(count), *row_shape), dtype)


# ``rows``: the row count as the graph's types know it (an int, an argument's size, or None); the
# array takes its length from the operand. ``tape``: as for ``tape_new``, so that common
# subexpression elimination never merges two tapes into one array.
register(
    OpDef(
        TAPE_ROWS_NEW,
        _rows_new_rule,
        _rows_new,
        uninitialized=True,
        returns_fresh=True,
        doc="a new stacked tape: an array of a row per iteration, contents undefined",
    )
)


def stackable(t: TensorType) -> bool:
    """Can values of type ``t`` be saved as rows of one array? Numbers and arrays whose sizes are
    the same at every iteration (ints and the arguments' sizes, not data-dependent sizes), and
    Python numbers (read back as Python numbers)."""
    return t.dtype != np.dtype(object) and not any(is_data_dependent(d) for d in t.shape)


def new_rows(e: Emitter, count: Value, rows: Dim | None, like: TensorType, tape: int) -> Value:
    """A new stacked tape of ``count`` rows (``rows`` as the types know it, or None) for values of
    type ``like``."""
    return e.op(TAPE_ROWS_NEW, count, rows=rows, row_shape=tuple(like.shape), dtype=like.dtype, tape=tape)


def _row_template(ndim: int) -> tuple[Any, ...]:
    # ``A[i, :]`` rather than ``A[i]``: a store of an array into whole rows by slices is what
    # the compiled tier's part stores accept.
    return (TENSOR_SLOT, *([slice(None)] * ndim))


def write_row(e: Emitter, stack: Value, value: Value, row: Value) -> Value:
    """``stack`` with ``value`` stored in row ``row``."""
    return e.op("setitem", stack, value, row, template=_row_template(stack.type.ndim - 1))


def read_row(e: Emitter, stack: Value, row: Value, saved: TensorType) -> Value:
    """Row ``row`` of ``stack`` as a value of type ``saved`` (a view; a Python number again for a
    saved Python number)."""
    value = e.op("getitem", stack, row, template=_row_template(stack.type.ndim - 1))
    if saved.weak:
        value = e.op(AS_PYTHON_NUMBER, value)
    return value


# --- the counters of loops with stacked tapes ------------------------------------------------
# Python ints, as the counters of rolled ``for`` loops are: ``as_python_number`` keeps each result
# one (weakly typed), so the loops they count are the counted loops both tiers run as ``for``.
def python_int_sum(e: Emitter, a: Value | int, b: Value | int) -> Value:
    """``a + b`` as a Python int."""
    return e.op(AS_PYTHON_NUMBER, e.op("add", a, b))


def python_int_difference(e: Emitter, a: Value | int, b: Value | int) -> Value:
    """``a - b`` as a Python int."""
    return e.op(AS_PYTHON_NUMBER, e.op("subtract", a, b))


def python_int_remainder(e: Emitter, a: Value | int, b: Value | int) -> Value:
    """``a % b`` as a Python int."""
    return e.op(AS_PYTHON_NUMBER, e.op("remainder", a, b))


def python_either_zero(e: Emitter, a: Value, b: Value) -> Value:
    """``a == 0 or b == 0`` of two non-negative Python ints, as a Python bool: ``min(a, b) == 0``."""
    return e.op(AS_PYTHON_NUMBER, e.op("equal", e.op("minimum", a, b), 0))


def rows_between(e: Emitter, array: Value, start: Value, stop: Value) -> Value:
    """``array[start:stop]`` (a view) for Python int bounds."""
    return e.op("getitem", array, start, stop, template=(slice(TENSOR_SLOT, TENSOR_SLOT),))


def rows_from(e: Emitter, array: Value, start: Value) -> Value:
    """``array[start:]`` (a view) for a Python int ``start``."""
    return e.op("getitem", array, start, template=(slice(TENSOR_SLOT, None),))


def python_less(e: Emitter, a: Value, b: Value) -> Value:
    """``a < b`` as a Python bool (a loop condition)."""
    return e.op(AS_PYTHON_NUMBER, e.op("less", a, b))


def trip_count(e: Emitter, start: int, bound: Value | int) -> Value:
    """How many iterations ``for i in range(start, bound)`` runs: ``max(bound - start, 0)``."""
    if isinstance(bound, int):
        return e.value(max(bound - start, 0))
    return e.op(AS_PYTHON_NUMBER, e.op("maximum", e.op("subtract", bound, start), 0))


def without_last_rows(e: Emitter, array: Value, count: int) -> Value:
    """``array[:-count]`` (a view): its rows but the last ``count``, which may be a symbolic number."""
    return e.op("getitem", array, template=(slice(None, -count),))


def add_outer_products(e: Emitter, total: Value, left_rows: Value, right_rows: Value) -> Value:
    """``total`` plus the sum over rows ``j`` of the outer products of ``left_rows[j]`` and
    ``right_rows[j]``: ``total + left_rows.T @ right_rows``, added into ``total``'s own buffer
    where it is dead (``add_matmul``)."""
    return e.op(ADD_MATMUL, total, e.op("transpose", left_rows, axes=(1, 0)), right_rows)


def sum_of_outer_products(e: Emitter, left_rows: Value, right_rows: Value) -> Value:
    """The sum over rows ``j`` of the outer products of ``left_rows[j]`` and ``right_rows[j]``:
    ``left_rows.T @ right_rows``, one matrix product instead of one outer product per row."""
    return e.op("matmul", e.op("transpose", left_rows, axes=(1, 0)), right_rows)
