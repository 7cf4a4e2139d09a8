"""Lowering for the NumPy backend: the decisions about how each op runs, recorded on the graph.

Runs after the default pipeline (after memory planning, whose buffers it reads) and writes op
attributes the code generator emits from, so every such rewrite shows in ``dy2st dump --passes``:

    counted_loop=I    a ``while_loop`` whose carried value I is a counter ``i = 0; while i < n:
                      ...; i = i + 1``: it runs as ``for i in range(0, n)``.
    python_operator=S an elementwise op on 0-d values written as Python's operator S (``<``,
                      ``+``, ``abs`` ...), which reaches NumPy's scalar math at a tenth of the cost.
    unfused=True      a small fused group run op by op (see ``target.runs_unfused``).
    overwrites=I      inside such a group, an op that writes its result over its operand I, a
                      temporary of the group that dies there (one allocation fewer).
    counter_step=True an ``as_python_number(i + 1)`` on a counter that is always a Python number:
                      no conversion is emitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.backend.numpy.target import NUMPY_TARGET, runs_unfused
from dy2st.ir.core import ANNOTATION_ATTRS, CONST, WHILE_LOOP, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op
from dy2st.ops.python_numbers import AS_PYTHON_NUMBER
from dy2st.passes.base import Pass
from dy2st.passes.dataflow import may_have
from dy2st.passes.pipeline import default_passes

# The op attributes this pass writes; kernels never see them.
LOWERING_ATTRS = ("counted_loop", "counter_step", "python_operator", "unfused", "overwrites")
ANNOTATION_ATTRS.update(LOWERING_ATTRS)

_INLINE_TYPES = (bool, int, float, complex)


def is_inline_literal(value: Any) -> bool:
    """Can the generated code write this constant as a Python literal?"""
    if isinstance(value, float):
        return np.isfinite(value)
    if isinstance(value, complex):
        return np.isfinite(value.real) and np.isfinite(value.imag)
    return isinstance(value, _INLINE_TYPES)


def defined_outside(value: Value, block: Block) -> bool:
    """Is ``value`` defined outside ``block`` (and so unchanged while the loop runs)?"""
    owner = value.owner
    while owner is not None:
        home = owner.parent if isinstance(owner, Op) else owner
        if home is block:
            return False
        region = home.parent if home is not None else None
        owner = region.parent if region is not None else None
    return True


def counted_loop(op: Op) -> tuple[int, Op] | None:
    """(counter index, its ``as_python_number`` step op) when ``op`` is a while loop of the form
    ``i = literal int; while i < bound: ...; i = i + 1`` with a loop-invariant integer bound, the
    condition being just that comparison and the step's values used by nothing else; else None."""
    cond_block, body_block = op.regions[0].block, op.regions[1].block
    if len(cond_block.ops) != 2:
        return None
    compare = cond_block.ops[0]
    if _ufunc_of(compare) is not np.less or cond_block.ops[-1].operands[0] is not compare.results[0]:
        return None
    counter, bound = compare.operands
    if counter not in cond_block.args or not defined_outside(bound, cond_block):
        return None
    if bound.type.ndim != 0 or bound.type.dtype.kind not in "iu":
        return None
    index = cond_block.args.index(counter)
    init = op.operands[index].owner
    if not (_is_literal(op.operands[index]) and type(init.attrs["value"]) is int):
        return None
    step = body_block.ops[-1].operands[index].owner
    if not isinstance(step, Op) or step.name != AS_PYTHON_NUMBER or step.parent is not body_block:
        return None
    add = step.operands[0].owner
    if not (isinstance(add, Op) and _ufunc_of(add) is np.add and add.parent is body_block and _is_counter_step(step)):
        return None
    if (
        add.operands[0] is not body_block.args[index]
        or not _is_literal(add.operands[1])
        or type(add.operands[1].owner.attrs["value"]) is not int
        or add.operands[1].owner.attrs["value"] != 1
    ):
        return None
    uses = [v for inner in body_block.ops for v in inner.operands]
    if uses.count(add.results[0]) != 1 or uses.count(step.results[0]) != 1:
        return None
    return index, step


def _is_counter_step(op: Op) -> bool:
    """``as_python_number(i + 1)`` where ``i`` is a loop-carried counter that starts at a Python
    literal and is carried back from this very op: by induction ``i`` is always a Python number,
    and so is ``i + 1`` (the scalar operators keep Python numbers Python), so no check is needed."""
    step = op.operands[0].owner
    if not isinstance(step, Op) or _ufunc_of(step) not in (np.add, np.subtract) or not _is_scalar_arithmetic(step):
        return False
    return all(_is_literal(v) or _is_counter_of(v, op) for v in step.operands)


def _is_literal(value: Value) -> bool:
    owner = value.owner
    return (
        isinstance(owner, Op)
        and owner.name == CONST
        and is_inline_literal(owner.attrs["value"])
        and not isinstance(owner.attrs["value"], (bool, complex))
    )


def _is_counter_of(value: Value, step: Op) -> bool:
    """Is ``value`` a while body argument whose initial value is a literal and whose next value
    is ``step``'s result?"""
    block = value.owner
    if not isinstance(block, Block) or block.parent is None or block.parent.parent is None:
        return False
    loop = block.parent.parent
    if loop.name != WHILE_LOOP or block is not loop.regions[1].block:
        return False
    index = block.args.index(value)
    return _is_literal(loop.operands[index]) and block.ops[-1].operands[index] is step.results[0]


# Elementwise ops written as Python operators when every operand and the result are 0-d.
# Keyed by the op's ufunc: the NumPy function is the fact that matters, whatever the op's name.
_SCALAR_OPERATORS: dict[Any, str] = {
    np.less: "<",
    np.less_equal: "<=",
    np.greater: ">",
    np.greater_equal: ">=",
    np.equal: "==",
    np.not_equal: "!=",
    np.add: "+",
    np.subtract: "-",
    np.multiply: "*",
}
_UNARY_SCALAR_FUNCTIONS: dict[Any, str] = {np.absolute: "abs"}
_SCALAR_OPERATORS.update({np.divide: "/", **_UNARY_SCALAR_FUNCTIONS})
_COMPARISONS = frozenset({np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal})


def _ufunc_of(op: Op) -> np.ufunc | None:
    """The NumPy ufunc ``op`` computes, if it is an elementwise ufunc op."""
    return get_op(op.name).ufunc


def _is_scalar_arithmetic(op: Op) -> bool:
    """0-d operands and result, no planned buffer, and no bools in arithmetic (``True + True`` is
    2 in Python but ``True`` in NumPy)."""
    arity = 1 if _ufunc_of(op) in _UNARY_SCALAR_FUNCTIONS else 2
    if "out_buffer" in op.attrs or len(op.operands) != arity or op.results[0].type.ndim != 0:
        return False
    if any(v.type.ndim != 0 for v in op.operands):
        return False
    if _ufunc_of(op) in _COMPARISONS:
        return True
    return op.results[0].type.dtype.kind in "iuf" and all(v.type.dtype.kind != "b" for v in op.operands)


def may_be_python_numbers(graph: Graph) -> set[Value]:
    """Values the generated code may hold as Python numbers rather than NumPy values: inline
    literals, loop counters (``as_python_number``), Python operators on those only, and what
    control flow carries or yields from them. Arguments and kernel results are NumPy values."""
    return may_have(graph, _python_number_results)


def _python_number_results(op: Op, found: set[Value]) -> list[Value]:
    if op.name == CONST and is_inline_literal(op.attrs["value"]):
        return op.results
    if op.name == AS_PYTHON_NUMBER:
        return op.results
    if _ufunc_of(op) in _SCALAR_OPERATORS and op.operands and all(v in found for v in op.operands):
        return op.results
    if get_op(op.name).region_kernel and op.regions:  # small groups run op by op on the same names
        block = op.regions[0].block
        args = [arg for arg, operand in zip(block.args, op.operands) if operand in found]
        return args + [r for r, v in zip(op.results, block.ops[-1].operands) if v in found]
    return []


def _in_place_temporaries(block: Block) -> dict[Op, Value]:
    """In a small fused group run op by op: op -> an operand it may overwrite. The operand is a
    temporary of the group (a fresh ufunc result, not yielded) that dies at this op and has the
    result's shape and dtype; ufuncs read each element before writing it, so the values are the
    same, one allocation fewer (RNN: ``tanh(a + b + bias)`` allocates once per step, not twice)."""
    ops = block.ops[:-1]
    yielded = set(block.ops[-1].operands)
    last_use = {v: i for i, op in enumerate(ops) for v in op.operands}
    temporaries = {r for op in ops if _writes_fresh_array(op) for r in op.results}
    chosen: dict[Op, Value] = {}
    for i, op in enumerate(ops):
        if not _writes_fresh_array(op):
            continue
        result = op.results[0].type
        for operand in op.operands:
            if (
                operand in temporaries
                and operand not in yielded
                and last_use[operand] == i
                and operand.type.shape == result.shape
                and operand.type.dtype == result.dtype
            ):
                chosen[op] = operand
                break
    return chosen


def _writes_fresh_array(op: Op) -> bool:
    """A single-output ufunc with an array (not 0-d) result: accepts ``out=`` with no change."""
    ufunc = get_op(op.name).ufunc
    return ufunc is not None and ufunc.nout == 1 and op.results[0].type.ndim > 0 and "out_buffer" not in op.attrs


# The Python operators among the scalar ones: comparisons, and those whose Python semantics differ
# from NumPy's on Python numbers (``1 / 0`` raises, NumPy gives inf).
COMPARISON_OPERATORS = frozenset({"<", "<=", ">", ">=", "==", "!="})
NUMPY_ONLY_OPERATORS = frozenset({"/", "abs"})
UNARY_FUNCTIONS = frozenset(_UNARY_SCALAR_FUNCTIONS.values())


def _lower_block(block: Block) -> None:
    for op in block.ops:
        for region in op.regions:
            _lower_block(region.block)
        decision = _decision(op)
        if decision is not None:
            key, value = decision
            op.attrs[key] = value
        if op.attrs.get("unfused"):
            for inner, operand in _in_place_temporaries(op.regions[0].block).items():
                inner.attrs["overwrites"] = inner.operands.index(operand)


def _decision(op: Op) -> tuple[str, Any] | None:
    """The attribute recording how ``op`` runs, if it runs other than as a kernel call."""
    if op.name == WHILE_LOOP:
        counted = counted_loop(op)
        return None if counted is None else ("counted_loop", counted[0])
    if runs_unfused(op):
        return "unfused", True
    if op.name == AS_PYTHON_NUMBER and _is_counter_step(op):
        return "counter_step", True
    if _ufunc_of(op) in _SCALAR_OPERATORS and _is_scalar_arithmetic(op):
        return "python_operator", _SCALAR_OPERATORS[_ufunc_of(op)]
    return None


def clear_lowering(graph: Graph) -> bool:
    """Remove this pass's attributes; True if there were any."""
    cleared = False
    for op in graph.walk():
        for key in LOWERING_ATTRS:
            cleared |= op.attrs.pop(key, None) is not None
    return cleared


class NumpyLowering(Pass):
    """Record how the NumPy backend runs loops, scalar arithmetic and small fused groups."""

    name = "numpy-lowering"

    def run(self, graph: Graph) -> bool:
        before = _recorded(graph)
        clear_lowering(graph)
        _lower_block(graph.body)
        return _recorded(graph) != before


def _recorded(graph: Graph) -> dict[tuple[Op, str], Any]:
    """This pass's attributes on ``graph``, by (op, attribute name)."""
    return {(op, key): op.attrs[key] for op in graph.walk() for key in LOWERING_ATTRS if key in op.attrs}


def numpy_passes() -> list[Pass]:
    """The passes a graph goes through before the NumPy backend emits it: the default pipeline,
    planning memory for NumPy's kernels, then this backend's lowering."""
    return [*default_passes(NUMPY_TARGET), NumpyLowering()]
