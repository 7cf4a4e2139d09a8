"""Index checks a compiled loop can make once, before its innermost counted loops run.

Compiled code checks every index before an element access (``loop_source``), and a check in the
loop body keeps LLVM from vectorizing it. In the innermost ``for j in range(S, B)`` loop the usual
indices are ``j + c`` for a literal ``c`` (``A[i, j - 1]``), values that do not change in the loop
(``A[i, j]``'s ``i``) and literals; for those, "every iteration's index is in ``[0, n)``" is one
test of ``S + c`` and ``B - 1 + c`` (or of the value) against the size, made before the loop. When
it holds, the loop runs without those checks; when not, it runs as written, every access checked,
so it raises at the same iteration, with the same effects before it, as eager code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dy2st.backend.numba.support import SMALL_INT, compiled_gather, small_int_constant
from dy2st.backend.numpy.lowering import defined_outside, loop_comparison
from dy2st.ir.core import Block, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, WHILE_LOOP
from dy2st.ir.opdefs import get_op, reads_element, stores_element
from dy2st.ops.indexing import TENSOR_SLOT


@dataclass(frozen=True)
class HoistedIndex:
    """One index of one element access whose check moves before the loop.

    Attributes:
        access: the element read or store.
        axis: the axis the index is for.
        offset: for ``counter + offset``, the offset; None for a value that does not change.
        value: the unchanging value (None for a literal or the counter).
        literal: the literal index (None otherwise).
    """

    access: Op
    axis: int
    offset: int | None = None
    value: Value | None = None
    literal: int | None = None


def is_innermost(loop: Op) -> bool:
    """Does the loop hold no other loop?"""
    return not any(op.name == WHILE_LOOP for region in loop.regions for op in region.block.walk())


def hoisted_indices(loop: Op, counted: int) -> list[HoistedIndex]:
    """The indices of the loop body's element accesses whose checks can move before the loop."""
    body = loop.regions[1].block
    counter = body.args[counted]
    found = []
    for op in body.walk():
        if not (reads_element(op) or stores_element(op)) or compiled_gather(op):
            continue  # a gather checks each index of its index array (``loop_source.emit_gather``)
        if any(isinstance(item, slice) or item is None for item in op.attrs["template"]):
            continue  # a view or a part: its int indices keep their checks
        first = 1 if reads_element(op) else 2
        tensors = iter(op.operands[first:])
        for axis, item in enumerate(op.attrs["template"]):
            if item is not TENSOR_SLOT:
                found.append(HoistedIndex(op, axis, literal=int(item)))
                continue
            hoisted = _hoisted(op, axis, next(tensors), counter, body)
            if hoisted is not None:
                found.append(hoisted)
    return found


def _hoisted(op: Op, axis: int, index: Value, counter: Value, body: Block) -> HoistedIndex | None:
    index = _through_python_numbers(index)
    if defined_outside(index, body):
        return HoistedIndex(op, axis, value=index)
    offset = counter_offset(index, counter)
    return None if offset is None else HoistedIndex(op, axis, offset=offset)


def counter_offset(value: Value, counter: Value, depth: int = 0) -> int | None:
    """``c`` where ``value`` is ``counter`` plus or minus small literals (``(1 + j) - 1``)."""
    value = _through_python_numbers(value)
    if value is counter:
        return 0
    owner = value.owner
    if depth > 4 or not isinstance(owner, Op) or get_op(owner.name).ufunc not in (np.add, np.subtract):
        return None
    a, b = owner.operands
    sign = 1 if get_op(owner.name).ufunc is np.add else -1
    constant = small_int_constant(b)
    inner = counter_offset(a, counter, depth + 1) if constant is not None else None
    if inner is None and sign == 1:
        constant = small_int_constant(a)
        inner = counter_offset(b, counter, depth + 1) if constant is not None else None
    if inner is None or constant is None:
        return None
    total = inner + sign * constant
    return total if abs(total) < SMALL_INT else None


def range_counter(loop: Op) -> int | None:
    """The carried value ``i`` of a loop ``while i < bound: ...; i = i + 1`` (or ``1 + i``) with a
    bound that does not change in the loop: it runs as ``for i in range(i0, bound)``. The NumPy
    lowering's ``counted_loop`` also needs the increment to be read by nothing else; here the
    body may read it (``for i in range(1, n)`` steps a hidden counter ``k`` and reads ``1 + k``)."""
    marked = loop.attrs.get("counted_loop")
    if marked is not None:
        return int(marked)
    cond_block, body = loop.regions[0].block, loop.regions[1].block
    compare = loop_comparison(cond_block)
    if compare is None or get_op(compare.name).ufunc is not np.less:
        return None
    counter, bound = compare.operands
    if counter not in cond_block.args or not defined_outside(bound, cond_block) or bound.type.ndim != 0:
        return None
    index = cond_block.args.index(counter)
    if not all(v.type.dtype.kind in "iu" and v.type.weak for v in (counter, bound, loop.operands[index])):
        return None
    stepped = counter_offset(body.ops[-1].operands[index], body.args[index])
    step = _through_python_numbers(body.ops[-1].operands[index]).owner
    return index if stepped == 1 and isinstance(step, Op) and get_op(step.name).ufunc is np.add else None


def _through_python_numbers(value: Value) -> Value:
    """The value an ``as_python_number`` chain converts (the conversion keeps it)."""
    owner = value.owner
    while isinstance(owner, Op) and owner.name == AS_PYTHON_NUMBER and owner.operands[0].type.dtype.kind in "iu":
        value = owner.operands[0]
        owner = value.owner
    return value
