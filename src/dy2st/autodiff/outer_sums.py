"""Weight cotangents of a counted loop summed by one matrix product after the backward loop.

The adjoint of ``h @ W`` inside a loop adds the outer product of ``h`` and the step's cotangent
``g`` to ``W``'s cotangent at every iteration: a ``(m, n)`` array made and added per step, which
costs far more than the step's own vector work (the RNN of the benchmark: two 32 x 32 outer
products per step against a 32-element recurrence). The backward loop of a stacked tape instead
keeps the rows ``h_j`` and ``g_j`` (``h_j`` usually is on the tape already, or is a row of an
input: ``xs[i]``) and the sum is ``H.T @ G`` once the loop ends. The sum is the same, added in
another order.

Keeping every ``g_j`` costs as many bytes as the tape (the RNN's peak was 1.75x what its forward
pass and the gradients need). A long loop (``BlockedSums``) keeps the last ``BLOCK_ROWS`` of them
in a ring instead, and adds ``H[j:j + BLOCK_ROWS].T @ ring`` into the sum (``add_matmul``, in the
sum's own buffer) each time the ring is full, inside the backward loop: the same products, in
blocks, for an array of 32 rows.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from dy2st.ir.core import Block, Op, Region, Value, use_counts
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import COND, YIELD
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import Dim
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.ops.shape import EXPAND_DIMS
from dy2st.ops.tape import (
    add_outer_products,
    new_rows,
    python_either_zero,
    python_int_difference,
    python_int_remainder,
    python_int_sum,
    rows_between,
    rows_from,
    stackable,
    without_last_rows,
    write_row,
)

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
        new = {f for f in (outer.left, outer.right) if f not in self.recorded and self.rows_before(f) is None}
        return len(new) <= 1

    def plan(self, factor: Value) -> None:
        """Decide where the rows of ``factor`` will be."""
        if factor in self.existing or factor in self.recorded:
            return
        source = self.rows_before(factor)
        if source is not None:
            self.existing[factor] = source
            return
        stack = new_rows(self.e, self.count, self.rows, factor.type, next(_row_numbers))
        self.initial.append(stack)
        self.recorded[factor] = len(self.step.args)
        self.step.add_arg(stack.type, "saved")

    def rows_before(self, factor: Value) -> Value | None:
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


BLOCK_ROWS = 32
"""The rows of the ring ``BlockedSums`` keeps: 32 rows of the RNN's 32-element cotangents (8 KiB)
and blocked matrix products that cost 1.6x the one product after the loop (34 against 21 us over
200 steps, both products of the RNN, BLAS on one core); 16 rows cost 2x, 64 rows 1.4x."""


@dataclass
class _BlockSum:
    """A deferred sum of ``BlockedSums``: ``rows`` holds the factor read from before the loop,
    row ``j`` for iteration ``j``; the ring holds the other one."""

    outer: OuterProductSum
    rows: Value
    rows_on_left: bool


class BlockedSums:
    """Deferred sums of a long counted backward loop (more than ``BLOCK_ROWS`` iterations) whose
    factors are a vector the step makes (the cotangent ``g``, shared by all the sums) and rows of
    arrays from before the loop (``xs[i]``, the tape's ``h``): ``g`` goes into a ring of
    ``BLOCK_ROWS`` rows, and when it is full the loop adds the block's matrix products to the
    sums. Backward iteration ``r`` (forward row ``j = T - 1 - r``) writes ring row
    ``BLOCK_ROWS - 1 - r % BLOCK_ROWS``, so a full ring holds rows ``j .. j + BLOCK_ROWS - 1`` in
    order, and at the last iteration its last ``T % BLOCK_ROWS`` rows hold the first rows.
    Nothing is left to add after the loop."""

    def __init__(self, e: Emitter, step: Block, row: Value, trip: int, sums: list[_BlockSum], shared: Value):
        self.e, self.step, self.row, self.trip, self.sums, self.shared = e, step, row, trip, sums, shared
        self.ring_position = -1

    @staticmethod
    def plan(factors: FactorRows, deferred: list[OuterProductSum]) -> BlockedSums | None:
        """Blocked sums for ``deferred``, where each has one factor in rows from before the loop
        and the same other factor, and the loop is long; else None."""
        trip = factors.rows
        if not deferred or not isinstance(trip, int) or trip <= 2 * BLOCK_ROWS:
            return None
        sums, shared = [], set()
        for outer in deferred:
            left, right = factors.rows_before(outer.left), factors.rows_before(outer.right)
            if (left is None) == (right is None):
                return None
            sums.append(_BlockSum(outer, left if left is not None else right, left is not None))  # type: ignore[arg-type]
            shared.add(outer.right if left is not None else outer.left)
        if len(shared) != 1:
            return None
        return BlockedSums(factors.e, factors.step, factors.row, trip, sums, shared.pop())

    def ring(self) -> Value:
        """The ring, made before the backward loop (the step takes it as its last argument)."""
        ring = new_rows(self.e, self.e.value(BLOCK_ROWS), BLOCK_ROWS, self.shared.type, next(_row_numbers))
        self.ring_position = len(self.step.args)
        self.step.add_arg(ring.type, "saved")
        return ring

    def write(self, finish: Op) -> None:
        """Make the step write ``g`` into the ring and add the ring's products to the sums when it
        is full or the loop ends (the first, partial block), just before its yield ``finish``."""
        inner = Emitter(Block(), self.e.loc)
        slot = python_int_difference(inner, BLOCK_ROWS - 1, python_int_remainder(inner, self.step.args[0], BLOCK_ROWS))
        ring = write_row(inner, self.step.args[self.ring_position], self.shared, slot)
        # Full (slot 0), or the last iteration (forward row 0): ring rows ``slot:`` hold rows
        # ``row:row + BLOCK_ROWS - slot``.
        last_of_block = python_either_zero(inner, slot, self.row)
        totals = [self.step.args[s.outer.position] for s in self.sums]
        adding = Emitter(Block(), self.e.loc)
        end = python_int_sum(adding, self.row, python_int_difference(adding, BLOCK_ROWS, slot))
        filled = rows_from(adding, ring, slot)
        added = [
            self._added(adding, total, rows_between(adding, s.rows, self.row, end), filled, s)
            for total, s in zip(totals, self.sums)
        ]
        adding.block.append(Op(YIELD, added, [], loc=self.e.loc))
        keeping = Block()
        keeping.append(Op(YIELD, list(totals), [], loc=self.e.loc))
        types = [t.type for t in totals]
        branches = [Region(adding.block), Region(keeping)]
        sums = inner.append(COND, [last_of_block], regions=branches, result_types=types).results
        for s, total in zip(self.sums, sums):
            finish.operands[s.outer.position] = total
        finish.operands.append(ring)
        for op in inner.block.ops:
            op.parent = self.step
        self.step.ops[-1:-1] = inner.block.ops

    @staticmethod
    def _added(e: Emitter, total: Value, rows: Value, ring: Value, s: _BlockSum) -> Value:
        """``total`` plus the outer products of the block's ``rows`` and ``ring`` rows."""
        return add_outer_products(e, total, rows, ring) if s.rows_on_left else add_outer_products(e, total, ring, rows)
