"""Sums, means, maxima and minima over axes inside compiled loops, computed as one loop nest that
visits the elements in NumPy's order.

``np.sum(window * weights, axis=(1, 2, 3))`` runs in eager NumPy as a product into a temporary,
then ``np.add.reduce`` of it. A compiled loop computes each element of the product where it is
added instead: no temporary, one pass (``loop_source.emit_axis_sum``). The summed array may also be
an array the loop holds (``x[i].sum(axis=0)``), read as it is.

NumPy's order of additions, for a C-contiguous float array ``x`` (eager's product of C-ordered
operands is one, see ``support._in_numpys_order``), read off its reduction machinery and checked
against ``np.sum`` on random shapes, axes and values (zeros of both signs, NaN, infinities):

- every result element starts at add's identity, 0.0;
- the iterator drops the axes of length 1 and visits the elements in C order, merging adjacent
  axes (all of them, in a C-contiguous array) into one inner loop along the last axis left;
- when that axis is kept, the inner loop adds element by element, ``out[k] = out[k] + x[..., k]``:
  each result element gets its terms one at a time, in the C order of the reduced axes;
- when it is reduced, the inner loop sums the run of trailing reduced axes (merged, and through
  the kept axes of length 1 among them) by NumPy's pairwise summation and adds that sum to the
  result element: ``out[k] = out[k] + pairwise(run)``, once per run in C order.

Whether the last axis left is kept depends on which sizes are 1: ``run_length`` works it out
from the static sizes, or writes the test made when the loop runs.

A mean is that sum divided by the count, as ``np.mean`` does: in float64 (it divides by an
``intp`` count), the quotient cast to the array's dtype.

Maxima and minima (``np.max``, ``np.minimum.reduce``) have no identity, so NumPy visits the same
elements in the same order but starts each result element at its first element instead of 0.0
(``PyArray_CopyInitialReduceValues``), and skips that element where it meets it again: along a
kept axis ``out[k] = maximum(out[k], x[..., k])`` after the first, and each run reduced by the
SIMD reduction ``extremes`` models, started from ``out[k]`` (the first run from its own first
element). A reduced axis of length 0 raises its ValueError, whatever the other sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dy2st.backend.numba.element_loops import CHECKED, COUNTER, broadcast_alignment, per_element
from dy2st.ir.core import Op, Value
from dy2st.ir.opdefs import get_op
from dy2st.ops.fused import FUSED
from dy2st.ops.reductions import mean_into

# The reductions compiled over axes, by the function NumPy's reduction is (the ``row_reduction``
# trait of the op): sums and means add, maxima and minima keep an element.
_ADDING = (np.add.reduce, mean_into)
_EXTREMES = (np.maximum.reduce, np.minimum.reduce)

# How an input axis is indexed by the counter of the summed array's axis it is aligned with.


@dataclass(frozen=True)
class AxisSum:
    """A sum, mean, maximum or minimum over axes compiled as one loop nest.

    Attributes:
        total: the ``sum`` op (or ``mean``, ``max``, ``min``).
        producer: the elementwise op (a ufunc, or a fused group of ufuncs) computing the summed
            array, which nothing else reads: its elements are computed where they are added and
            the array is never made. None: the summed array is read as it is.
        inputs: the values the summed elements are computed from: the producer's operands, or
            the summed array.
        axes: for each array input (by position), for each of its axes, the summed array's axis
            it is aligned with (from the last) and how it is indexed (``COUNTER``, ``ZERO``,
            ``CHECKED``).
        sizes: for each axis of the summed array, its static size, or the (input position, axis)
            of an input axis of that size.
        reduced: the summed axes, in order.
        keepdims: the result keeps them as axes of length 1.
    """

    total: Op
    producer: Op | None
    inputs: list[Value]
    axes: dict[int, list[tuple[int, str]]]
    sizes: list[int | tuple[int, int]]
    reduced: tuple[int, ...]
    keepdims: bool

    @property
    def summed(self) -> Value:
        return self.total.operands[0]

    @property
    def elements(self) -> int | None:
        """How many elements are summed, where the sizes are static."""
        if not all(isinstance(size, int) for size in self.sizes):
            return None
        return math.prod(size for size in self.sizes if isinstance(size, int))

    @property
    def averages(self) -> bool:
        """Is it a mean (the sum divided by the count)?"""
        return is_mean(self.total)

    @property
    def extreme(self) -> bool:
        """Is it a maximum or minimum (no identity: each result starts at its first element)?"""
        return get_op(self.total.name).row_reduction in _EXTREMES

    @property
    def maximum(self) -> bool:
        """Is it a maximum?"""
        return is_maximum(self.total)


def is_maximum(op: Op) -> bool:
    """Is the reduction ``op`` NumPy's max (else its min)?"""
    return get_op(op.name).row_reduction == np.maximum.reduce


def is_mean(op: Op) -> bool:
    """Is the reduction ``op`` NumPy's mean (a sum divided by the count)?"""
    return get_op(op.name).row_reduction is mean_into


def plan_axis_sum(total: Op) -> AxisSum | None:
    """How the ``sum``, ``mean``, ``max`` or ``min`` op ``total`` of an array over some of its axes
    is computed as one loop nest, or None where it is not: another reduction, a dtype argument,
    inputs that do not broadcast to the summed array in a way read off the IR. What compiled code
    can compute (dtypes, the producer's ufuncs, the layout of an array read as it is) is for
    ``support.compiled_axis_reduction`` to decide."""
    opdef = get_op(total.name)
    if not opdef.reduction or opdef.row_reduction not in (*_ADDING, *_EXTREMES) or len(total.operands) != 1:
        return None
    if total.attrs.get("dtype") is not None:
        return None
    summed = total.operands[0]
    shape = summed.type.shape
    axis = total.attrs.get("axis")
    reduced = tuple(range(len(shape))) if axis is None else tuple(sorted(axis))
    if not shape or not reduced:
        return None
    producer = _producer(summed, total)
    inputs = list(producer.operands) if producer is not None else [summed]
    axes: dict[int, list[tuple[int, str]]] = {}
    for position, value in enumerate(inputs):
        found = broadcast_alignment(value.type.shape, shape)
        if found is None:
            return None
        if value.type.ndim:
            axes[position] = found
    sizes = _sizes(shape, axes)
    if sizes is None:
        return None
    return AxisSum(total, producer, inputs, axes, sizes, reduced, bool(total.attrs.get("keepdims")))


def element_ops(plan: AxisSum) -> list[Op]:
    """The ops computing one summed element from one element of each input, in order."""
    producer = plan.producer
    if producer is None:
        return []
    return producer.regions[0].block.ops[:-1] if producer.name == FUSED else [producer]


def run_length(plan: AxisSum, size: Any) -> tuple[int | None, str]:
    """The length of the runs NumPy sums pairwise (1: it adds element by element), as a static
    int where the sizes decide it when the graph is built, else None, and the source computing it
    when the loop runs. ``size(axis)`` is the source of the summed array's size along ``axis``.

    Scanning from the last axis: a reduced axis lengthens the run; a kept axis of length 1 is
    dropped by NumPy's iterator, so the run goes on through it; any other kept axis ends it. A
    kept axis whose size is only known when the loop runs ends it unless that size is 1."""
    factors: list[str] = []
    static = 1
    open_while: list[str] = []  # the tests under which the run still goes on
    for axis in reversed(range(len(plan.sizes))):
        extent = plan.sizes[axis]
        if axis in plan.reduced:
            if open_while:
                factors.append(f"({size(axis)} if {' and '.join(open_while)} else 1)")
            elif isinstance(extent, int):
                static *= extent
            else:
                factors.append(size(axis))
        elif isinstance(extent, int):
            if extent != 1:
                break
        else:
            open_while.append(f"{size(axis)} == 1")
    source = " * ".join([str(static), *factors]) if factors else str(static)
    return (None if factors else static), source


def adds_element_by_element(plan: AxisSum) -> bool:
    """Does NumPy add the summed elements one at a time into the result, whatever the sizes
    when the loop runs (runs of length 1: a kept last axis)?"""
    return run_length(plan, str)[0] == 1


def _producer(summed: Value, total: Op) -> Op | None:
    """The elementwise op making ``summed`` right before ``total`` in its block, when ``total``
    alone reads it. Right before: its inputs, read by the sum, still hold what it would have read,
    and a ValueError of inputs that do not broadcast, raised by the sum, comes where it would."""
    owner = summed.owner
    block = total.parent
    if not isinstance(owner, Op) or block is None or len(owner.results) != 1:
        return None
    position = block.ops.index(total)
    if position == 0 or block.ops[position - 1] is not owner:
        return None
    if owner.name == FUSED:
        group = owner.regions[0].block
        yielded = group.ops[-1].operands
        if len(yielded) != 1 or yielded[0] in group.args:
            return None  # a result that is an input: not computed here
        if not all(per_element(inner) for inner in group.ops[:-1]):
            return None
    elif not per_element(owner):
        return None
    readers = sum(1 for op in block.walk() for operand in op.operands if operand is summed)
    return owner if readers == 1 else None


def _sizes(shape: tuple[Any, ...], axes: dict[int, list[tuple[int, str]]]) -> list[int | tuple[int, int]] | None:
    """Each axis's static size, or an input axis indexed by its counter (of its size); None where
    an axis has neither, or where inputs checked against a static size have no input of that size
    beside them (then only the IR's type would say the size, not an input)."""
    sizes: list[int | tuple[int, int]] = []
    for target, dim in enumerate(shape):
        aligned = [
            ((position, axis), how)
            for position, found in axes.items()
            for axis, (into, how) in enumerate(found)
            if into == target
        ]
        witness = next((where for where, how in aligned if how == COUNTER), None)
        if witness is None and any(how == CHECKED for _, how in aligned):
            return None
        if isinstance(dim, int):
            sizes.append(dim)
        elif witness is not None:
            sizes.append(witness)
        else:
            return None
    return sizes
