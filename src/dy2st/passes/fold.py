"""Constant folding of literal constants, and of ``cond`` ops whose predicate is a constant.

Before::

    %0 = const dense<[1., 2., 3.]> : f32[3]
    %1 = multiply %0, 2.0 : f32[3]
    %2 = add %x, %1 : f32[3]

After::

    %1 = const dense<[2., 4., 6.]> : f32[3]
    %2 = add %x, %1 : f32[3]

Only ``const`` ops count as constants: graph inputs and captured global arrays never do, because
captures are read by reference at every call. An op is folded when every operand is a constant,
it has no side effects and no regions, and each result has at most ``MAX_FOLDED_ELEMENTS``
elements. Its NumPy kernel runs at compile time on the same Python scalars and arrays the executor
would pass, so weak-scalar promotion is the same; the result becomes a constant only when it has
exactly the dtype and shape the op's rule gives: a strong array, or a Python number where the
result is weakly typed. An evaluation that would raise or warn
(``1.0 / 0``, an out-of-range index) is left to run time, where the user sees it as before.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dy2st.ir.core import COND, CONST, Block, Graph, Op, Value, kernel_attrs
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import has_symbolic
from dy2st.passes.base import Pass

MAX_FOLDED_ELEMENTS = 1024
"""Larger results stay computed at run time: a big constant costs memory and compile time."""


class ConstantFolding(Pass):
    """Evaluate ops on literal constants at compile time; inline ``cond`` on a constant."""

    name = "fold"

    def run(self, graph: Graph) -> bool:
        return fold_constants(graph)


def fold_constants(graph: Graph) -> bool:
    """Fold every foldable op of ``graph`` in place; return whether anything changed."""
    replacements: dict[Value, Value] = {}
    changed = _fold_block(graph.body, replacements)
    return changed or bool(replacements)


def constant_value(value: Value):
    """The literal a ``const`` op gives ``value``, or None when it is not a literal constant."""
    op = value.op
    if op is None or op.name != CONST:
        return None
    return op.attrs["value"]


def _fold_block(block: Block, replacements: dict[Value, Value]) -> bool:
    changed = False
    new_ops: list[Op] = []
    for op in block.ops:
        op.operands = [replacements.get(v, v) for v in op.operands]
        for region in op.regions:
            changed |= _fold_block(region.block, replacements)
        if op.name == COND and constant_value(op.operands[0]) is not None:
            new_ops.extend(_inline_taken_branch(op, replacements))
            continue
        folded = _evaluate(op)
        if folded is None:
            new_ops.append(op)
            continue
        for result, array in zip(op.results, folded):
            const = Op(CONST, [], [result.type], {"value": array}, loc=op.loc)
            const.results[0].name_hint = result.name_hint
            new_ops.append(const)
            replacements[result] = const.results[0]
    if changed or len(new_ops) != len(block.ops) or any(a is not b for a, b in zip(new_ops, block.ops)):
        block.set_ops(new_ops)
        changed = True
    return changed


def _inline_taken_branch(op: Op, replacements: dict[Value, Value]) -> list[Op]:
    """The ops of the branch a constant predicate selects; the cond's results become its yields."""
    taken = op.regions[0 if bool(np.asarray(constant_value(op.operands[0]))) else 1].block
    replacements.update(zip(op.results, taken.ops[-1].operands))
    return taken.ops[:-1]


def _exact_python_int(value: Any) -> np.ndarray | None:
    """An op's result on Python ints as an array; None for an int no int64 holds."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        return None
    return np.array(value, copy=True)


def is_foldable(op: Op) -> bool:
    """An op with a plain NumPy kernel, no effects, no regions, and only constant operands."""
    if not op.operands or op.regions or op.name == CONST:
        return False
    opdef = get_op(op.name)
    if opdef.kernel is None or opdef.side_effect or opdef.uninitialized:
        return False  # an uninitialized array folded would be a constant the graph copies at each call
    if any(has_symbolic(r.type.shape) or r.type.size > MAX_FOLDED_ELEMENTS for r in op.results):
        return False
    return all(constant_value(v) is not None for v in op.operands)


def _evaluate(op: Op) -> list[Any] | None:
    """The op's results computed now, or None if it cannot be folded exactly."""
    if not is_foldable(op):
        return None
    kernel = get_op(op.name).kernel
    assert kernel is not None  # is_foldable admits ops with a kernel only
    arguments = [constant_value(v) for v in op.operands]
    python_ints = all(isinstance(a, int) for a in arguments)
    if python_ints:
        # Python ints in eager code: computed as Python does (object arrays hold Python ints),
        # so ``2**62 * 2`` is 2**63, which no int64 constant holds (the check below refuses it).
        arguments = [np.asarray(a, dtype=object) for a in arguments]
    try:
        with warnings.catch_warnings(), np.errstate(all="raise"):
            warnings.simplefilter("error")
            outcome = kernel(*arguments, **kernel_attrs(op))
    except Exception:  # noqa: BLE001 - whatever NumPy raises, the op keeps raising at run time
        return None
    outcome = outcome if isinstance(outcome, tuple) else (outcome,)
    if len(outcome) != len(op.results):
        return None
    arrays = []
    for result, value in zip(op.results, outcome):
        # A copy: the kernel may return a view of (or the very object of) a constant operand.
        array = _exact_python_int(value) if python_ints else np.array(value, copy=True)
        if array is None or array.dtype != result.type.dtype or array.shape != result.type.shape:
            return None
        # A weakly typed result is a Python number in eager code (``as_python_number``): its
        # constant stays one, or the code after it would compute with NumPy's fixed-width
        # integers where eager code has Python's unbounded ones.
        arrays.append(array.item() if result.type.weak else array)
    return arrays
