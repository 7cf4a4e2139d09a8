"""Loops whose trip count is known when they start: the rolled ``for i in range(start, n)``, a
``while_loop`` that carries a Python int counter from a literal ``start``, adds 1 to it at every
iteration and runs while it is below a bound computed before the loop. Their gradients save each
iteration's values as rows of preallocated arrays (``ops/tape.py``) instead of on a list."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dy2st.ir.core import CONST, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, DIM
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import Dim, is_data_dependent


@dataclass(frozen=True)
class CountedLoop:
    """A loop ``i = start; while i < bound: ...; i = i + 1`` (iteration ``j`` has ``i = start + j``).

    Attributes:
        counter: the position of ``i`` among the loop's carried values.
        start: its first value, a literal int.
        bound: the bound: a literal int, or a value defined outside the loop.
        rows: the trip count as the graph's types can name it (an int, an argument's size), or
            None where it is known only when the loop starts (``range(n)`` of a number input).
    """

    counter: int
    start: int
    bound: Value | int
    rows: Dim | None


def counted_loop(op: Op) -> CountedLoop | None:
    """``op`` (a ``while_loop``) as a counted loop, or None if its trip count may depend on what
    its iterations compute (a tolerance, a ``break`` flag in the condition)."""
    cond_block, body = op.regions[0].block, op.regions[1].block
    compare = _without_python_number(cond_block.ops[-1].operands[0]).owner
    if not isinstance(compare, Op) or get_op(compare.name).ufunc is not np.less:
        return None
    counter, bound = compare.operands
    if counter not in cond_block.args or not _integer_number(bound):
        return None
    literal_bound = _literal_int(bound)
    if literal_bound is None and _defined_inside(bound, op):
        return None
    index = cond_block.args.index(counter)
    start = _literal_int(op.operands[index])
    if start is None or not _integer_number(counter):
        return None
    step = _without_python_number(body.ops[-1].operands[index]).owner
    if not isinstance(step, Op) or get_op(step.name).ufunc is not np.add or step.parent is not body:
        return None  # the counter must grow at every iteration, not in a branch
    operands = step.operands
    if not (
        (operands[0] is body.args[index] and _literal_int(operands[1]) == 1)
        or (operands[1] is body.args[index] and _literal_int(operands[0]) == 1)
    ):
        return None
    if literal_bound is not None:
        return CountedLoop(index, start, literal_bound, max(literal_bound - start, 0))
    return CountedLoop(index, start, bound, _known_rows(bound, start))


def _without_python_number(value: Value) -> Value:
    owner = value.owner
    while isinstance(owner, Op) and owner.name == AS_PYTHON_NUMBER:
        value = owner.operands[0]
        owner = value.owner
    return value


def _integer_number(value: Value) -> bool:
    return value.type.ndim == 0 and value.type.dtype.kind in "iu"


def _literal_int(value: Value) -> int | None:
    owner = value.owner
    if not isinstance(owner, Op) or owner.name != CONST:
        return None
    literal = owner.attrs["value"]
    if isinstance(literal, (bool, np.bool_)) or not isinstance(literal, (int, np.integer)):
        return None
    return int(literal)


def _defined_inside(value: Value, loop: Op) -> bool:
    """Is ``value`` a result or block argument of an op inside ``loop``?"""
    for inner in loop.walk():
        if inner is not loop and value in inner.results:
            return True
        if any(value in region.block.args for region in inner.regions):
            return True
    return False


def _known_rows(bound: Value, start: int) -> Dim | None:
    """The trip count as a size: for ``range(x.shape[k])`` (and ``for row in x``) the size itself.
    The rolled loop's bound is then ``max(size, 0)``, which staging writes ``(n + abs(n)) // 2``
    on Python ints (``runtime/control_flow/iterables.py``)."""
    if start != 0:
        return None
    size = _size_read(_at_least_zero_of(bound))
    return None if size is None or is_data_dependent(size) else size


def _at_least_zero_of(value: Value) -> Value:
    """``n`` where ``value`` is ``(n + abs(n)) // 2``, else ``value``."""
    halved = _without_python_number(value).owner
    if not isinstance(halved, Op) or get_op(halved.name).ufunc is not np.floor_divide:
        return value
    total, two = halved.operands
    summed = _without_python_number(total).owner
    if _literal_int(two) != 2 or not isinstance(summed, Op) or get_op(summed.name).ufunc is not np.add:
        return value
    n, magnitude = (_without_python_number(v) for v in summed.operands)
    absolute = magnitude.owner
    if not isinstance(absolute, Op) or get_op(absolute.name).ufunc is not np.absolute:
        return value
    return n if _without_python_number(absolute.operands[0]) is n else value


def _size_read(value: Value) -> Dim | None:
    """The size a ``dim`` op reads, if ``value`` is one's result."""
    owner = _without_python_number(value).owner
    if isinstance(owner, Op) and owner.name == DIM:
        return owner.operands[0].type.shape[owner.attrs["axis"]]
    return None
