"""Update destinations: an elementwise result that an update stores is computed in its place.

``A[1:-1] = 0.5 * (B[:-2] + B[2:])`` and ``C[:i, :] += X`` stage as an elementwise op (or a fused
group) that makes a new array, and an update that stores it into part of ``A``::

    %t = fused %B ... : f64[n - 2]
    %A_1 = setitem %A, %t {in_place_update=0, template=(1:-1,)} : f64[n]

Eager NumPy allocates ``t``, then copies it into ``A[1:-1]``. Where the update runs in ``A``'s own
buffer (the ``in-place-updates`` pass found ``A``'s old value dead) and the part it stores into
is a view of ``A`` (``OpDef.updated_region``: ints and slices), the op can write its result
straight into that view with ``out=``: no temporary, no copy. This pass marks the op
``writes_update=True`` and the update ``value_in_place=True``; the backend names the view where the
op runs and leaves nothing for the update to do::

    v2 = a0[1:-1]
    v3 = k_fused_4(a1, out=v2)

The rule, for an update ``S`` of ``A`` storing the result of ``E``:

- ``S`` runs in place and ``updated_region`` names its part of ``A`` as a view, of ``E``'s dtype
  and of at least ``E``'s rank (``out=`` broadcasts ``E``'s operands to it, as storing broadcasts
  the value);
- ``E`` is a single-result ufunc (NumPy copies operands that overlap ``out=`` first), a small
  fused group the backend runs op by op whose last op is one, or a fused group the backend runs
  as one tiled kernel, with no reduction, whose result has the region's shape (the kernel checks
  when it runs whether an input overlaps the view, ``A[2:]`` while it writes ``A[1:-1]``, and
  then computes into a temporary first);
- ``S`` is the only reader of ``E``'s result, in the same block, and nothing between them reads,
  writes or defines a value that may share ``A``'s memory, or defines an index of ``S``: ``E``
  now writes ``A`` where it runs, so the write moves up to there.

The memory planner gives ``E`` no buffer of its own.
"""

from __future__ import annotations

from dy2st.ir.core import (
    IN_PLACE_UPDATE,
    UPDATE_MAY_OVERLAP,
    VALUE_IN_PLACE,
    WRITES_UPDATE,
    Block,
    Graph,
    Op,
    Value,
    kernel_attrs,
)
from dy2st.ir.opdefs import get_op, overwritten_operand
from dy2st.passes.base import Pass
from dy2st.passes.carried_buffers import RotationGroups
from dy2st.passes.cse import same_attributes
from dy2st.passes.in_place import BufferClasses, buffer_classes
from dy2st.passes.memory_plan import DEFAULT_TARGET, MemoryTarget, schedule


class UpdateDestinations(Pass):
    """Compute an elementwise result that an in-place update stores straight into the updated
    array (see the module docstring).

    Args:
        target: what the backend that runs the graph can do (which fused groups it runs op by
            op); the op definitions' traits when None.
    """

    name = "update-destinations"

    def __init__(self, target: MemoryTarget | None = None):
        self.target = target or DEFAULT_TARGET

    def run(self, graph: Graph) -> bool:
        return choose_update_destinations(graph, self.target) > 0


def choose_update_destinations(graph: Graph, target: MemoryTarget = DEFAULT_TARGET) -> int:
    """Mark every (elementwise op, update) pair of ``graph`` that qualifies; return how many."""
    for op in graph.walk():
        for attr in (WRITES_UPDATE, VALUE_IN_PLACE, UPDATE_MAY_OVERLAP):
            op.attrs.pop(attr, None)
    classes = buffer_classes(schedule(graph), target)
    rotations = RotationGroups(graph, target)
    readers: dict[Value, int] = {}
    for op in graph.walk():
        for value in op.operands:
            readers[value] = readers.get(value, 0) + 1
    chosen = 0
    for update in list(graph.walk()):
        producer = _stored_producer(update, readers, classes, target)
        if producer is not None:
            producer.attrs[WRITES_UPDATE] = True
            update.attrs[VALUE_IN_PLACE] = True
            if _may_overlap(producer, update, classes, rotations):
                producer.attrs[UPDATE_MAY_OVERLAP] = True
            classes.union(producer.results[0], update.operands[0])  # it is a view of A now
            chosen += 1
    return chosen


def _stored_producer(update: Op, readers: dict[Value, int], classes: BufferClasses, target: MemoryTarget) -> Op | None:
    """The op whose result ``update`` stores, when it may compute it in place (the rule)."""
    opdef = get_op(update.name)
    if opdef.updated_region is None or overwritten_operand(update) != 0 or len(update.operands) < 2:
        return None
    array, value = update.operands[:2]
    producer = value.op
    if producer is None or producer.parent is not update.parent or readers.get(value) != 1:
        return None
    region = opdef.updated_region([v.type for v in update.operands], **kernel_attrs(update))
    result = value.type
    if region is None or result.weak or result.ndim == 0 or result.ndim > region.ndim:
        return None
    if result.dtype != array.type.dtype or IN_PLACE_UPDATE in producer.attrs:
        return None
    if not _computes_elementwise_into(producer, _region_shape(region.shape, producer, update), target):
        return None
    block = update.parent
    assert isinstance(block, Block)
    between = block.ops[block.ops.index(producer) + 1 : block.ops.index(update)]
    indices = set(update.operands[2:])
    for op in between:
        for inner in op.walk():
            if any(classes.same(v, array) for v in (*inner.operands, *inner.results)):
                return None
            if indices.intersection(inner.results):
                return None
    return producer


def _region_shape(shape: tuple, producer: Op, update: Op) -> tuple:
    """The shape of the part ``update`` stores into: that of an operand of ``producer`` reading
    that very part where there is one (``C[i, :i + 1] += ...``). Its sizes are the ones the graph
    shares with the values it is added to (a slice's data-dependent size, ``ops.indexing``), where
    the rule of the update's region gives a size of its own."""
    for operand in producer.operands:
        if views_the_same_part(operand, update) and operand.type.ndim == len(shape):
            return operand.type.shape
    return shape


def _computes_elementwise_into(producer: Op, region_shape: tuple, target: MemoryTarget) -> bool:
    """Can ``producer`` write its result into a view of the updated array with ``out=``?"""
    opdef = get_op(producer.name)
    if len(producer.results) != 1:
        return False
    if opdef.ufunc is not None:
        return opdef.ufunc.nout == 1
    if not opdef.region_kernel or not producer.regions:
        return False
    block = producer.regions[0].block
    if target.runs_unfused(producer):  # its last op computes the result: one ufunc call
        last = block.ops[-1].operands[0].op
        return last is not None and last.parent is block and _computes_elementwise_into(last, region_shape, target)
    if any(get_op(inner.name).reduction for inner in block.ops):
        return False
    return producer.results[0].type.shape == region_shape


def _may_overlap(producer: Op, update: Op, classes: BufferClasses, rotations: RotationGroups) -> bool:
    """May an operand of ``producer`` share memory with the part of the array ``update`` stores
    into, other than as that very part (``A[s] -= v`` reads ``A[s]`` itself)? Not an array a loop
    holds apart from the updated one (a rotation group: ``a, b = b, a``)."""
    array = update.operands[0]
    return any(
        classes.same(v, array) and not views_the_same_part(v, update) and not rotations.apart(v, array)
        for v in producer.operands
    )


def views_the_same_part(value: Value, update: Op) -> bool:
    """Is ``value`` a view of the part of the array that ``update`` stores into: the same indexing
    op on the same array with the same indices? (Only asked for updates whose part is a view.)"""
    op = value.op
    if op is None or not get_op(op.name).view or "template" not in op.attrs:
        return False
    if len(op.operands) != len(update.operands) - 1 or op.operands[0] is not update.operands[0]:
        return False
    if any(a is not b for a, b in zip(op.operands[1:], update.operands[2:])):
        return False
    return same_attributes(op, update, only=("template",))
