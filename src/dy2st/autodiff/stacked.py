"""The stacked tape of a counted loop (``counted.py``): the values an iteration's adjoint reads,
saved as rows of arrays allocated before the loop (``ops/tape.py``, docs/autodiff.md).

The forward loop writes row ``i - start`` of each array at iteration ``i``; the backward loop is a
counted loop too, whose iteration ``k`` reads row ``j = rows - 1 - k``. A value the loop carries
(a hidden state ``h``) is saved once for both of its uses: its array has a row for the value each
iteration starts from (written when the iteration starts) and one more for the value the loop ends
with (written after it), so that the value iteration ``j`` ends with is row ``j + 1``. Values
computed from the counter and from values defined before the loop (``xs[i]``, ``i % 2 == 0``) are
not saved at all: the backward iteration computes them again.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from dy2st.autodiff.counted import CountedLoop
from dy2st.ir.core import CONST, Block, Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, DIM
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import Dim
from dy2st.ir.types import TensorType
from dy2st.ops.tape import (
    new_rows,
    python_int_difference,
    python_int_sum,
    read_row,
    stackable,
    trip_count,
    write_row,
)

_stack_numbers = itertools.count()


@dataclass
class SavedRow:
    """Where a saved value of the forward loop lives: row ``j + offset`` of ``stack`` (the array the
    forward pass ends with) holds its value at iteration ``j``."""

    stack: Value
    offset: int


@dataclass
class StackedTape:
    """What the forward loop recorded: its trip count (a Python int computed before it) and, for each
    saved value, its rows."""

    count: Value
    rows: list[SavedRow]


def can_stack(saved: list[Value]) -> bool:
    """Can every value of ``saved`` be kept as rows of an array?"""
    return all(stackable(v.type) for v in saved)


def record_rows(op: Op, counted: CountedLoop, saved: list[Value]) -> StackedTape:
    """Make the forward loop ``op`` write each value of ``saved`` (its body's arguments and results)
    into a row of a preallocated array it carries, and return where they are."""
    block = op.parent
    assert block is not None
    body = op.regions[1].block
    ends = body.ops[-1].operands
    before = Emitter(Block(), op.loc)
    count = trip_count(before, counted.start, counted.bound)
    carried_offsets: dict[int, set[int]] = {}
    placement: list[tuple[str, int]] = []  # ("carried", k) or ("own", position in saved)
    for position, value in enumerate(saved):
        k = _carried_position(body, ends, value, counted.counter)
        if k is None:
            placement.append(("own", position))
        else:
            offset = 0 if value is body.args[k] else 1
            carried_offsets.setdefault(k, set()).add(offset)
            placement.append(("carried", k))
    first = Emitter(Block(), op.loc)
    row = body.args[counted.counter]
    if counted.start:
        row = python_int_difference(first, row, counted.start)
    last = Emitter(Block(), op.loc)
    after = Emitter(Block(), op.loc)
    finals: dict[tuple[str, int], Value] = {}
    for key in dict.fromkeys(placement):
        kind, index = key
        if kind == "carried":
            with_end = 1 in carried_offsets[index]
            like = body.args[index].type
            rows_count = count if not with_end else _plus_one(before, count)
            rows_dim = _plus_one_dim(counted.rows) if with_end else counted.rows
            stack = new_rows(before, rows_count, rows_dim, like, next(_stack_numbers))
            stack_in = _carry(op, stack)
            _yield(body, write_row(first, stack_in, body.args[index], row))
            final = op.results[-1]
            if with_end:
                final = write_row(after, final, op.results[index], count)
        else:
            value = saved[index]
            stack = new_rows(before, count, counted.rows, value.type, next(_stack_numbers))
            stack_in = _carry(op, stack)
            _yield(body, write_row(last, stack_in, value, row))
            final = op.results[-1]
        finals[key] = final
    at = block.ops.index(op)
    _splice(block, at + 1, after.block.ops)
    _splice(block, at, before.block.ops)
    _splice(body, 0, first.block.ops)
    _splice(body, len(body.ops) - 1, last.block.ops)
    rows = []
    for (kind, index), value in zip(placement, saved):
        offset = 1 if kind == "carried" and value is not body.args[index] else 0
        rows.append(SavedRow(finals[(kind, index)], offset))
    return StackedTape(count, rows)


def _carried_position(body: Block, ends: list[Value], value: Value, counter: int) -> int | None:
    """The carried value ``value`` is (what an iteration starts or ends with), if it is one whose
    array can hold both."""
    for k, (start, end) in enumerate(zip(body.args, ends)):
        if k != counter and (value is start or value is end) and start.type == end.type:
            return k
    return None


def _plus_one(e: Emitter, count: Value) -> Value:
    return python_int_sum(e, count, 1)


def _plus_one_dim(rows: Dim | None) -> Dim | None:
    return None if rows is None else rows + 1


def _carry(op: Op, initial: Value) -> Value:
    """Make the loop ``op`` carry ``initial`` as a new last value; return its body argument (the
    body's yield is completed by ``_yield``, the loop's result is its last)."""
    check, body = (region.block for region in op.regions)
    check.add_arg(initial.type, "saved")
    inside = body.add_arg(initial.type, "saved")
    op.operands.append(initial)
    op.results.append(Value(initial.type, "saved", op, len(op.results)))
    return inside


def _yield(body: Block, value: Value) -> None:
    body.ops[-1].operands.append(value)


def _splice(block: Block, index: int, ops: list[Op]) -> None:
    for op in ops:
        op.parent = block
    block.ops[index:index] = ops


def read_rows(e: Emitter, tape: StackedTape, row: Value, types: list[TensorType]) -> list[Value]:
    """The saved values of the iteration whose row is ``row``, as values of ``types``."""
    next_row: Value | None = None
    values = []
    for saved, saved_type in zip(tape.rows, types):
        index = row
        if saved.offset:
            next_row = next_row or python_int_sum(e, row, 1)
            index = next_row
        values.append(read_row(e, saved.stack, index, saved_type))
    return values


# --- what the backward iteration computes again ----------------------------------------------
def recomputable(value: Value, counter: Value, starts: set[Value], copies: set[Value]) -> bool:
    """Can the backward iteration compute ``value`` (a copy of a forward value) again at little
    cost instead of reading it from the tape? Where it comes, through numbers and basic indexing
    only, from the counter ``counter`` and values defined before the loop: ``xs[i]``,
    ``i % 2 == 0``. ``starts``: the copies of the values the iteration started from; ``copies``:
    the results of the copies of the body's ops."""
    if value is counter:
        return True
    if value in starts:
        return False
    if value not in copies:
        return True  # defined before the loop
    owner = value.owner
    assert isinstance(owner, Op)
    if not _cheap(owner):
        return False
    return all(recomputable(v, counter, starts, copies) for v in owner.operands)


def _cheap(op: Op) -> bool:
    """An op as cheap to run again as to read its result from memory, and deterministic: a
    constant, a size, a Python number, arithmetic on numbers, basic indexing (a view)."""
    if op.regions:
        return False
    if op.name in (CONST, AS_PYTHON_NUMBER, DIM):
        return True
    opdef = get_op(op.name)
    if opdef.ufunc is not None:
        return all(r.type.ndim == 0 for r in op.results)
    return opdef.view and opdef.index_operands == 1 and opdef.updates_operand is None
