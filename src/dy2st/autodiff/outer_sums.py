"""Weight cotangents of a counted loop summed by one matrix product after the backward loop.

The adjoint of ``h @ W`` inside a loop adds the outer product of ``h`` and the step's cotangent
``g`` to ``W``'s cotangent at every iteration: a ``(m, n)`` array made and added per step, which
costs far more than the step's own vector work (the RNN of the benchmark: two 32 x 32 outer
products per step against a 32-element recurrence). The backward loop of a stacked tape instead
keeps the rows ``h_j`` and ``g_j`` (``h_j`` usually is on the tape already, or is a row of an
input: ``xs[i]``) and the sum is ``H.T @ G`` once the loop ends. The sum is the same, added in
another order.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dy2st.ir.core import Block, Op, Value, use_counts
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import Dim
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.ops.shape import EXPAND_DIMS
from dy2st.ops.tape import new_rows, stackable, without_last_rows, write_row

_row_numbers = itertools.count()


@dataclass
class OuterProductSum:
    """A sum the backward iteration carries at argument ``position``, to which it adds the outer
    product of the vectors ``left`` and ``right`` (``left[:, None] * right[None, :]``)."""

    position: int
    left: Value
    right: Value


def outer_product_sums(step: Block, first_sum: int) -> list[OuterProductSum]:
    """The sums of the backward iteration ``step`` (its arguments from ``first_sum`` on) that it
    changes only by adding one outer product of two vectors of the sum's dtype."""
    finish = step.ops[-1]
    uses = use_counts(step)
    found = []
    for position in range(first_sum, len(step.args)):
        total = step.args[position]
        owner = finish.operands[position].owner
        if not isinstance(owner, Op) or owner.parent is not step or get_op(owner.name).ufunc is not np.add:
            continue
        if uses.get(total) != 1 or total not in owner.operands or len(owner.operands) != 2:
            continue
        product = owner.operands[1] if owner.operands[0] is total else owner.operands[0]
        factors = _outer_factors(product)
        if factors is not None and product.type == total.type and owner.results[0].type == total.type:
            found.append(OuterProductSum(position, *factors))
    return found


def _outer_factors(value: Value) -> tuple[Value, Value] | None:
    owner = value.owner
    if not isinstance(owner, Op) or get_op(owner.name).ufunc is not np.multiply or len(owner.operands) != 2:
        return None
    column, row = (v.owner for v in owner.operands)
    if not (_expanded(column, 1) and _expanded(row, 0)):
        return None
    assert isinstance(column, Op) and isinstance(row, Op)
    left, right = column.operands[0], row.operands[0]
    if not all(v.type.dtype == value.type.dtype and not v.type.weak and stackable(v.type) for v in (left, right)):
        return None
    return left, right


def _expanded(op: object, axis: int) -> bool:
    """Is ``op`` ``np.expand_dims(v, axis)`` of a vector ``v``?"""
    return (
        isinstance(op, Op)
        and op.name == EXPAND_DIMS
        and tuple(op.attrs["axes"]) == (axis,)
        and op.operands[0].type.ndim == 1
    )


class FactorRows:
    """Where the backward loop finds, after it ends, the rows of the factors of the deferred outer
    products, in the order of the forward iterations (row ``j`` for iteration ``j``): rows of an
    array from before the backward loop the factor was read from (``xs[i]``, a row of the tape),
    or rows the backward loop writes into a new array it carries."""

    def __init__(self, e: Emitter, step: Block, row: Value, count: Value, rows: Dim | None):
        self.e, self.step, self.row, self.count, self.rows = e, step, row, count, rows
        self.existing: dict[Value, Value] = {}
        self.recorded: dict[Value, int] = {}  # factor -> position of its array among the step's arguments
        self.initial: list[Value] = []

    def affordable(self, outer: OuterProductSum) -> bool:
        """Does deferring ``outer`` cost at most one new array of rows (the step's cotangent ``g``,
        usually shared by all the sums), the other factor's rows being there already?"""
        new = {f for f in (outer.left, outer.right) if f not in self.recorded and self._rows_read(f) is None}
        return len(new) <= 1

    def plan(self, factor: Value) -> None:
        """Decide where the rows of ``factor`` will be."""
        if factor in self.existing or factor in self.recorded:
            return
        source = self._rows_read(factor)
        if source is not None:
            self.existing[factor] = source
            return
        stack = new_rows(self.e, self.count, self.rows, factor.type, next(_row_numbers))
        self.initial.append(stack)
        self.recorded[factor] = len(self.step.args)
        self.step.add_arg(stack.type, "saved")

    def _rows_read(self, factor: Value) -> Value | None:
        """The array from before the backward loop of which ``factor`` is row ``j`` at iteration
        ``j`` (``xs[i]``, a row of the tape), if its length is the trip count plus a number known
        when the graph is built."""
        owner = factor.owner
        if not isinstance(owner, Op) or owner.parent is not self.step:
            return None
        opdef = get_op(owner.name)
        if not (opdef.view and opdef.index_operands == 1 and opdef.updates_operand is None):
            return None
        if len(owner.operands) != 2 or owner.operands[1] is not self.row:
            return None
        array = owner.operands[0]
        if array.type.ndim != 2 or owner.attrs.get("template") not in ((TENSOR_SLOT, slice(None)), (TENSOR_SLOT,)):
            return None
        if _defined_in(array, self.step):
            return None
        return array if self._extra_rows(array) is not None else None

    def _extra_rows(self, array: Value) -> int | None:
        """How many rows ``array`` has beyond the trip count, if a number known when the graph is
        built (``xs`` of 8 rows read for 5 steps, the tape's last row), else None."""
        if self.rows is None:
            return None
        extra = array.type.shape[0] - self.rows
        return extra if isinstance(extra, int) and extra >= 0 else None

    def write(self, finish: Op) -> None:
        """Make the step write the rows of the factors it records, just before its yield ``finish``."""
        inner = Emitter(Block(), self.e.loc)
        for factor, position in self.recorded.items():
            finish.operands.append(write_row(inner, self.step.args[position], factor, self.row))
        for op in inner.block.ops:
            op.parent = self.step
        self.step.ops[-1:-1] = inner.block.ops

    def rows_of(self, e: Emitter, factor: Value, results: list[Value]) -> Value:
        """The rows of ``factor`` after the backward loop, whose results are ``results``."""
        if factor in self.existing:
            array = self.existing[factor]
            extra = self._extra_rows(array)
            assert extra is not None
            return array if extra == 0 else without_last_rows(e, array, extra)
        return results[self.recorded[factor]]


def _defined_in(value: Value, block: Block) -> bool:
    if value in block.args:
        return True
    return any(value in op.results or any(value in r.block.args for r in op.regions) for op in block.walk())
