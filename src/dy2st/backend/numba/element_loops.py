"""Fused elementwise groups inside compiled loops, computed as one loop over their elements.

Numba computes an array expression (``np.tanh(np.add(np.add(u, v), b))``) into a new array at
every iteration of the loop that holds it. A fused group whose arrays broadcast simply is instead
written as loops over its result's elements into an array the loop reuses (``buffers``): each
input element read at its broadcast position, the group's ops computed on scalars with NumPy's
semantics, each result element written once.

Broadcasting is read off the IR's shapes: aligned from the last axis, each axis of an input is
either the result's size (indexed by that axis's counter) or a static 1 where the result's is not
(indexed by 0); a group with any other shapes keeps Numba's array expressions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dy2st.ir.core import Op, Value
from dy2st.ir.opcodes import CONST
from dy2st.ir.opdefs import get_op
from dy2st.ops.fused import FUSED

# How an input's axis is indexed in a loop over a broadcast shape (``broadcast_alignment``).
COUNTER = "counter"  # the sizes are the same: by the counter
ZERO = "zero"  # a static 1 broadcast: by 0
CHECKED = "checked"  # a size known when the loop runs, either the summed axis's or 1 (checked)


@dataclass(frozen=True)
class ElementLoop:
    """How a fused group's element loop reads its inputs.

    Attributes:
        axes: for each array argument of the group's block (by position), for each of its axes,
            the result axis whose counter indexes it, or None (a size 1 broadcast: index 0).
        sizes: for each result axis, its static size, or the (argument position, axis) of an input
            axis that has that size.
    """

    axes: dict[int, list[int | None]]
    sizes: list[int | tuple[int, int]]


def element_loop(op: Op) -> ElementLoop | None:
    """How the fused group ``op`` runs as one element loop, or None where it cannot."""
    if op.name != FUSED or not op.results:
        return None
    shape = op.results[0].type.shape
    if not shape or any(r.type.shape != shape for r in op.results):
        return None
    block = op.regions[0].block
    if any(value in block.args for value in block.ops[-1].operands):
        return None  # a result that is an input: not a new array
    if not all(per_element(inner) for inner in block.ops[:-1]):
        return None
    return _broadcast(block.args, shape)


def _broadcast(args: list[Value], shape: tuple[Any, ...]) -> ElementLoop | None:
    """How arrays of the shapes of ``args`` broadcast to ``shape``, where they do simply."""
    axes: dict[int, list[int | None]] = {}
    sizes: list[int | tuple[int, int] | None] = [d if isinstance(d, int) else None for d in shape]
    for position, arg in enumerate(args):
        found = _aligned_axes(arg.type.shape, shape)
        if found is None:
            return None
        if arg.type.ndim:
            axes[position] = found
        for axis, target in enumerate(found):
            if target is not None and sizes[target] is None:
                sizes[target] = (position, axis)
    known = [size for size in sizes if size is not None]
    return ElementLoop(axes, known) if len(known) == len(sizes) else None


def per_element(op: Op) -> bool:
    """An op computed on one element at a time: a 0-d constant or a ufunc with one result."""
    if op.name == CONST:
        return op.results[0].type.ndim == 0
    ufunc = get_op(op.name).ufunc
    return ufunc is not None and ufunc.nout == 1 and len(op.results) == 1


def _aligned_axes(input_shape: tuple[Any, ...], shape: tuple[Any, ...]) -> list[int | None] | None:
    """For each axis of an input, the result axis indexing it (aligned from the last), or None
    where it broadcasts; None for all where the input does not broadcast to ``shape`` simply (a
    size known only when the loop runs against a static one is not simple here)."""
    found = broadcast_alignment(input_shape, shape)
    if found is None or any(how == CHECKED for _, how in found):
        return None
    return [axis if how == COUNTER else None for axis, how in found]


def broadcast_alignment(input_shape: tuple[Any, ...], shape: tuple[Any, ...]) -> list[tuple[int, str]] | None:
    """For each axis of an input, the axis of ``shape`` aligned with it (from the last) and how
    it is indexed; None where the IR's sizes tell it cannot broadcast to ``shape``, or not how."""
    offset = len(shape) - len(input_shape)
    if offset < 0:
        return None
    found: list[tuple[int, str]] = []
    for axis, dim in enumerate(input_shape):
        target = shape[axis + offset]
        if same_size(dim, target):
            found.append((axis + offset, COUNTER))
        elif isinstance(dim, int):
            if dim != 1:
                return None
            found.append((axis + offset, ZERO))
        elif isinstance(target, int):
            # NumPy broadcasts a size 1 and raises for any other than the target's: checked when
            # the loop runs. Against a symbolic target the result's size is not known here.
            found.append((axis + offset, CHECKED))
        else:
            return None
    return found


def same_size(a: object, b: object) -> bool:
    """Are two sizes the same in every call: equal ints, or the same symbolic form."""
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int) and a == b
    return a is b or a == b
