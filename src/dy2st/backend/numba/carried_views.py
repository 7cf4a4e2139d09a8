"""Views a compiled loop carries from one iteration to the next, and the overlap checks before its
stores: what lets a recursive filter compile.

PolyBench's Deriche filter keeps views of the columns it wrote last::

    for j in range(height):
        forward[:, j] = a1 * image[:, j] + a2 * x_prev + b1 * y_prev + b2 * y_prev2
        x_prev = image[:, j]
        y_prev2 = y_prev
        y_prev = forward[:, j]

**Carried views.** Inside compiled code a view is what NumPy's is: the same memory, read and
written through. Only the object handed back when the loop ends differs: Numba boxes a view as a
new array whose ``.base`` is Numba's record of the memory, not the array eager code's view has
(``y_prev.base is forward`` in eager code). Where no such object can reach the caller, nothing
shows the difference: ``observed_results`` names the loop's results that may, through views,
in-place updates and control flow, become a returned value or an operand of an op with effects
(``print``); the others (unused after the loop, or only read) may be views.

**Overlap checks.** The store ``forward[:, j] = ...`` runs in ``forward``'s buffer, but the view
``y_prev`` of the previous column is read after it (carried on as ``y_prev2``): the
``in-place-updates`` pass put a ``copy_if_overlapping`` before the store, which copies
``forward`` where the column stored into shares an element with ``y_prev``, keeping what
``y_prev`` holds. The NumPy tier asks ``np.shares_memory`` at every iteration. Here the answer is
found when the graph is built (``overlap_check_is_noop``): no copy is ever made when each checked
array is, at the first iteration, an array whose buffer is not the stored array's, and at each
later one the view the previous iteration handed on, of the same array, taken at an index that
along some axis differs from the store's by a constant: ``j - 1`` against ``j`` in an array of
at least two columns (distinct positions along one axis never share an element: an array that is
written to never overlaps itself). Loops whose checks cannot be shown to be no-ops stay on the
NumPy tier.
"""

from __future__ import annotations

from dy2st.ir.core import Block, Op, Value
from dy2st.ir.opcodes import CONST, WHILE_LOOP
from dy2st.ir.opdefs import get_op, overwritten_operand, reads_element
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import COPY_IF_OVERLAPPING
from dy2st.passes.dataflow import may_have
from dy2st.passes.loop_indices import indices_apart
from dy2st.passes.memory_plan import DEFAULT_TARGET


# --- results the caller may see -------------------------------------------------------------------
def observed_results(loop: Op) -> set[int]:
    """The positions of the loop's results whose array object may reach the caller: returned (or
    written back into an argument), or handed to an op with effects, as itself or through views,
    in-place updates and control flow."""
    top = _outermost_block(loop)
    observers = _observing_values(top)
    return {
        position
        for position, result in enumerate(loop.results)
        if result.type.ndim and not observers.isdisjoint(may_have(top, _may_be_the_array, initial=[result]))
    }


def _outermost_block(op: Op) -> Block:
    block = op.parent
    assert block is not None, "the loop is in a graph"
    while block.parent is not None and block.parent.parent is not None:
        outer = block.parent.parent.parent
        assert outer is not None, "every op of a region is in a block"
        block = outer
    return block


def _observing_values(top: Block) -> set[Value]:
    """The values the caller, or an op with effects, receives as objects."""
    found = set(top.ops[-1].operands)
    for op in top.walk():
        if get_op(op.name).side_effect:
            found.update(op.operands)
    return found


def _may_be_the_array(op: Op, found: set[Value]) -> list[Value]:
    """The results of ``op`` that may be one of the arrays ``found``, or views of them: an update
    run in place in one, a view of one, or the result of an op not known to make a new array."""
    overwritten = overwritten_operand(op)
    if overwritten is not None:
        return op.results if op.operands[overwritten] in found else []
    if op.name == FUSED:  # new arrays, but for an argument the group hands back as it is
        block = op.regions[0].block
        yielded = block.ops[-1].operands
        return [r for r, v in zip(op.results, yielded) if v in block.args and op.operands[v.index] in found]
    opdef = get_op(op.name)
    if DEFAULT_TARGET.returns_fresh(op) or opdef.structural:
        return []
    shared = op.operands[:1] if opdef.view else op.operands
    return op.results if any(v in found for v in shared) else []


# --- overlap checks that never copy -------------------------------------------------------------
def overlap_check_is_noop(check: Op) -> bool:
    """Does the ``copy_if_overlapping`` op ``check``, in a loop's body, never copy? (See the
    module docstring.) Compiled code then runs the store after it in the array itself."""
    body = check.parent
    loop = _loop_of(body)
    if body is None or loop is None:
        return False
    stored = _same_buffer_origin(check.operands[0])
    if stored not in body.args:
        return False
    checked = check.operands[1 + check.attrs["indices"] :]
    return all(_apart_at_every_iteration(check, stored, value, loop) for value in checked)


def _loop_of(body: Block | None) -> Op | None:
    """The ``while_loop`` whose body is ``body``, else None."""
    region = body.parent if body is not None else None
    loop = region.parent if region is not None else None
    if loop is None or loop.name != WHILE_LOOP or region is not loop.regions[1]:
        return None
    return loop


def _same_buffer_origin(value: Value) -> Value:
    """The value ``value`` is the buffer of: back through in-place updates and overlap checks
    (which a compiled loop holds no-ops: the loop compiles only where all of them are)."""
    owner = value.owner
    while isinstance(owner, Op):
        overwritten = overwritten_operand(owner)
        if overwritten is None and owner.name != COPY_IF_OVERLAPPING:
            break
        value = owner.operands[overwritten or 0]
        owner = value.owner
    return value


def _apart_at_every_iteration(check: Op, stored: Value, checked: Value, loop: Op) -> bool:
    """Is the checked array, at every iteration, apart from the part ``check``'s store writes:
    at the first, an array of another buffer; at each later one, the view the previous iteration
    handed on, of the stored array, along some axis at a constant distance from the store's
    index?"""
    body = loop.regions[1].block
    if checked not in body.args:
        return False
    slot = checked.index
    if not _distinct_buffers(loop.operands[slot], loop.operands[stored.index]):
        return False
    yielded = body.ops[-1].operands
    view = yielded[slot].owner
    if not isinstance(view, Op) or not (reads_element(view) and get_op(view.name).view):
        return False
    # The array the view is of is the stored array of the next iteration.
    if _same_buffer_origin(view.operands[0]) is not _same_buffer_origin(yielded[stored.index]):
        return False
    store_index = (check.attrs["template"], check.operands[1 : 1 + check.attrs["indices"]])
    return indices_apart(loop, check.operands[0].type.shape, store_index, view)


def _distinct_buffers(a: Value, b: Value) -> bool:
    """Are ``a`` and ``b`` arrays of different buffers in every call? Each is traced back through
    views and in-place updates: two new arrays made by different ops, a new array and a graph
    argument (two arguments may be one array), or a new array made after the other value was
    (``np.zeros(n)`` after a loop that gave the other)."""
    root_a, root_b = _buffer_root(a), _buffer_root(b)
    if root_a is not None and root_b is not None:
        return root_a is not root_b and (_is_new(root_a) or _is_new(root_b))
    return _made_after(root_a, b) or _made_after(root_b, a)


def _is_new(root: Value | None) -> bool:
    """Is ``root`` an array an op of the graph makes when it runs (not a graph argument, nor a
    constant, whose array the graph holds and may share between constants)?"""
    return root is not None and isinstance(root.owner, Op) and root.owner.name != CONST


def _made_after(new: Value | None, other: Value) -> bool:
    """Is ``new`` a new array made in the block that defines ``other`` (or takes it as an
    argument), after it? Its memory was not ``other``'s then."""
    if new is None or not _is_new(new):
        return False
    assert isinstance(new.owner, Op)
    block = new.owner.parent
    if block is None:
        return False
    if other.owner is block:
        return True
    before = isinstance(other.owner, Op) and other.owner.parent is block
    return before and block.ops.index(other.owner) < block.ops.index(new.owner)


def _buffer_root(value: Value) -> Value | None:
    """The new array (an op's result) or graph argument whose buffer ``value`` is in; None where
    that is not known (a loop's or a branch's result, an op that may return an operand)."""
    while True:
        value = _same_buffer_origin(value)
        owner = value.owner
        if isinstance(owner, Block):
            return value if owner.parent is None else None  # a loop's argument may be any array
        if not isinstance(owner, Op):
            return None
        opdef = get_op(owner.name)
        if owner.name == CONST or DEFAULT_TARGET.returns_fresh(owner):
            return value
        if not opdef.structural and not any(v.type.ndim for v in owner.operands):
            return value  # made from sizes and scalars alone (``np.zeros(n)``): a new array
        if not opdef.view:
            return None
        value = owner.operands[0]
