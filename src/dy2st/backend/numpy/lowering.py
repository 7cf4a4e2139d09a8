"""Lowering for the NumPy backend: the decisions about how each op runs, recorded on the graph.

Runs after the default pipeline (after memory planning, whose buffers it reads) and writes op
attributes the code generator emits from, so every such rewrite shows in ``dy2st dump --passes``:

    counted_loop=I    a ``while_loop`` whose carried value I is a counter ``i = 0; while i < n:
                      ...; i = i + 1``: it runs as ``for i in range(0, n)``.
    python_operator=S an elementwise op on 0-d values written as Python's operator S (``<``,
                      ``+``, ``abs``, ``divmod`` ...). On the eager code's Python numbers it is
                      what the eager code ran (``k << 30`` on unbounded ints); with a NumPy
                      operand it reaches NumPy's scalar math, a tenth of a ufunc call's cost.
    unfused=True      a small fused group run op by op (see ``target.runs_unfused``).
    overwrites=I      inside such a group, or one of symbolic size (which may run op by op),
                      an op that writes its result over its operand I, a temporary of the
                      group that dies there (one allocation fewer).
    truth_test=True   the ``x != 0`` staging makes of ``if x:`` for a 0-d number, read only as a
                      condition: the generated code tests ``x`` itself, as the eager code did.
    already_python=True
                      an ``as_python_number`` of a Python operator's result (``k + 1``,
                      ``k << 3``): already a Python number, so nothing is emitted.
    releases=(I, ...) the operands I, values NumPy allocated (no planned buffer), that die at
                      this op: the generated code drops its names for them right after it, so
                      NumPy can reuse their memory. Without it an unrolled loop would keep the
                      temporaries of every iteration until the function returns, as eager code,
                      which rebinds its names, never does. An operand the op overwrites (its
                      result is the same array under another name) is released too: the array
                      lives on under the result's name until that one is released.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from dy2st.backend.numpy.target import NUMPY_TARGET, runs_unfused
from dy2st.ir.core import ANNOTATION_ATTRS, COND, CONST, WHILE_LOOP, Block, Graph, Op, Value
from dy2st.ir.opdefs import PYTHON_DIVISIONS, get_op, in_place_results
from dy2st.ir.symbolic import has_symbolic
from dy2st.ops.python_numbers import AS_PYTHON_NUMBER
from dy2st.passes.base import Pass
from dy2st.passes.memory_plan import live_intervals, reads_memory_order, schedule
from dy2st.passes.pipeline import default_passes

# The op attributes this pass writes; kernels never see them.
LOWERING_ATTRS = (
    "counted_loop",
    "already_python",
    "python_operator",
    "truth_test",
    "unfused",
    "overwrites",
    "releases",
)
ANNOTATION_ATTRS.update(LOWERING_ATTRS)

_INLINE_TYPES = (bool, int, float, complex)


def is_inline_literal(value: Any) -> bool:
    """Can the generated code write this constant as a Python literal? Not a NumPy scalar:
    ``np.float64(0.5)`` is a subclass of ``float``, but written out it is a call that makes the
    scalar again every time the line runs."""
    if type(value) is float:
        return bool(np.isfinite(value))
    if type(value) is complex:
        return bool(np.isfinite(value.real) and np.isfinite(value.imag))
    return type(value) in _INLINE_TYPES


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
    compare = loop_comparison(cond_block)
    if compare is None or _ufunc_of(compare) is not np.less:
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
    if not (isinstance(add, Op) and _ufunc_of(add) is np.add and add.parent is body_block):
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


def loop_comparison(cond_block: Block) -> Op | None:
    """The comparison that is all of a loop condition (``i < n``; of two Python numbers, turned
    back into a Python bool by ``as_python_number``), or None."""
    ops = cond_block.ops[:-1]
    condition = cond_block.ops[-1].operands[0].owner
    if len(ops) == 2 and condition is ops[1] and ops[1].name == AS_PYTHON_NUMBER:
        condition = ops[1].operands[0].owner
    elif len(ops) != 1:
        return None
    return ops[0] if condition is ops[0] and _ufunc_of(ops[0]) is not None else None


def _is_literal(value: Value) -> bool:
    owner = value.owner
    return (
        isinstance(owner, Op)
        and owner.name == CONST
        and is_inline_literal(owner.attrs["value"])
        and not isinstance(owner.attrs["value"], (bool, complex))
    )


# Python's operators, keyed by the ufunc an op computes (the NumPy function is the fact that
# matters, whatever the op's name): the spelling the generated code writes, and the operator.
_PYTHON_OPERATORS: dict[Any, tuple[str, Any]] = {
    np.add: ("+", operator.add),
    np.subtract: ("-", operator.sub),
    np.multiply: ("*", operator.mul),
    np.true_divide: ("/", operator.truediv),
    np.floor_divide: ("//", operator.floordiv),
    np.remainder: ("%", operator.mod),
    np.power: ("**", operator.pow),
    np.left_shift: ("<<", operator.lshift),
    np.right_shift: (">>", operator.rshift),
    np.bitwise_and: ("&", operator.and_),
    np.bitwise_or: ("|", operator.or_),
    np.bitwise_xor: ("^", operator.xor),
    np.less: ("<", operator.lt),
    np.less_equal: ("<=", operator.le),
    np.greater: (">", operator.gt),
    np.greater_equal: (">=", operator.ge),
    np.equal: ("==", operator.eq),
    np.not_equal: ("!=", operator.ne),
    np.divmod: ("divmod", divmod),
    np.negative: ("-", operator.neg),
    np.positive: ("+", operator.pos),
    np.invert: ("~", operator.invert),
    np.absolute: ("abs", abs),
    np.logical_not: ("not", operator.not_),
}
COMPARISON_OPERATORS = frozenset({"<", "<=", ">", ">=", "==", "!="})
FUNCTION_OPERATORS = frozenset({"abs", "divmod"})  # written as calls: ``abs(x)``, ``divmod(a, b)``
# The ops Python's operators also run on NumPy scalars: there they reach NumPy's scalar math,
# which gives the values and types of the ufunc at a tenth of the cost of calling it.
_NUMPY_SCALAR_UFUNCS = frozenset(
    {np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal}
    | {np.add, np.subtract, np.multiply, np.true_divide, np.absolute}
)
# And those whose scalar math matches the ufunc's only on integers (a CRC's ``crc & 1``,
# ``c >> 1``) and, for ``//`` and ``%``, on float32 and float64. Not ``**`` (scalar float powers
# round differently in the last bit) nor ``-`` of unsigned integers (scalar math warns of the
# wrap-around, the ufunc does not).
_NUMPY_SCALAR_INTEGER_UFUNCS = frozenset(
    {np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift, np.invert}
    | {np.floor_divide, np.remainder}
)
_NUMPY_SCALAR_FLOAT_UFUNCS = frozenset({np.floor_divide, np.remainder})
_PYTHON_SAMPLES = {"b": True, "i": 1, "u": 1, "f": 1.0, "c": 1 + 0j}
_PYTHON_KINDS = {bool: "b", int: "i", float: "f", complex: "c"}


def _ufunc_of(op: Op) -> np.ufunc | None:
    """The NumPy ufunc ``op`` computes, if it is an elementwise ufunc op."""
    return get_op(op.name).ufunc


def _all_zero_d(op: Op) -> bool:
    """0-d operands and results, and no planned buffer."""
    values = [*op.operands, *op.results]
    return bool(op.operands) and "out_buffer" not in op.attrs and all(v.type.ndim == 0 for v in values)


def _is_scalar_arithmetic(op: Op) -> bool:
    """An op Python's operator may run on NumPy scalars: 0-d, and no bools in arithmetic
    (``True + True`` is 2 in Python but ``True`` in NumPy)."""
    ufunc = _ufunc_of(op)
    if ufunc is None or not _all_zero_d(op):
        return False
    result = op.results[0].type.dtype
    if ufunc in _NUMPY_SCALAR_INTEGER_UFUNCS and all(v.type.dtype.kind in "iu" for v in (*op.operands, *op.results)):
        return True
    if ufunc in _NUMPY_SCALAR_FLOAT_UFUNCS and result in (np.float32, np.float64):
        return all(v.type.dtype.kind in "iuf" for v in op.operands)
    if ufunc not in _NUMPY_SCALAR_UFUNCS:
        return False
    if _PYTHON_OPERATORS[ufunc][0] in COMPARISON_OPERATORS:
        return True
    return result.kind in "iuf" and all(v.type.dtype.kind != "b" for v in op.operands)


def holds_python_number(value: Value) -> bool:
    """Does the generated code hold ``value`` as a Python number (else as a NumPy value)?

    Weakly typed values are the eager code's Python numbers (literals, loop-carried numbers,
    ``int(t)``) and run as such; so do the results of Python's operators on them
    (``_runs_python_operator``), which only ``as_python_number`` reads."""
    owner = value.owner
    return value.type.weak or (
        isinstance(owner, Op) and "python_operator" in owner.attrs and all(v.type.weak for v in owner.operands)
    )


def _runs_python_operator(op: Op, users: dict[Value, list[Op]]) -> bool:
    """Is ``op`` Python's own operator on Python numbers in the eager code (``k << 30``, ``i / 2``)?

    Its operands are Python numbers and each result becomes one again at once (``PythonNumber``
    staged the operator and ``as_python_number`` after it), so Python runs it: unbounded ints,
    ``1 / 0`` raising. ``np.add(i, 1)`` is NumPy's in eager code too and keeps its kernel (nothing
    turns its result back into a Python number); so does an operator whose Python result type is
    not the graph's (``~True`` is an int, NumPy's a bool)."""
    ufunc = _ufunc_of(op)
    if ufunc not in _PYTHON_OPERATORS or not _all_zero_d(op) or not all(v.type.weak for v in op.operands):
        return False
    readers = [user for result in op.results for user in users.get(result, [])]
    if not readers:
        # Kept only because it may raise (``may_raise``): its ``as_python_number`` was dead. It is
        # Python's ``k // 0`` that raises; NumPy's gives 0.
        return ufunc in PYTHON_DIVISIONS and _python_types_agree(op, _PYTHON_OPERATORS[ufunc][1])
    if any(user.name != AS_PYTHON_NUMBER for user in readers):
        return False
    return _python_types_agree(op, _PYTHON_OPERATORS[ufunc][1])


def _python_types_agree(op: Op, function: Any) -> bool:
    """Does Python's operator give results of the kinds the op's types say, or raise (as the eager
    code then does too)? Powers are checked again when they run (``2 ** -1`` is a float)."""
    try:
        result = function(*(_PYTHON_SAMPLES[v.type.dtype.kind] for v in op.operands))
    except (ArithmeticError, TypeError):
        return True
    results = result if isinstance(result, tuple) else (result,)
    return [_PYTHON_KINDS.get(type(r)) for r in results] == [v.type.dtype.kind for v in op.results]


def _users(graph: Graph) -> dict[Value, list[Op]]:
    """Every op that reads each value, regions included."""
    found: dict[Value, list[Op]] = {}
    for op in graph.walk():
        for value in op.operands:
            found.setdefault(value, []).append(op)
    return found


def _keeps_eager_layout(op: Op) -> bool:
    """Must this group's values have the memory order unfused NumPy gives them (a reduction reads
    them, inside the group or after it)? A result written over a temporary takes the temporary's
    order, where NumPy would have chosen it from all the operands."""
    return bool(op.attrs.get("eager_layout")) or reads_memory_order(op)


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


def _lower_block(block: Block, users: dict[Value, list[Op]]) -> None:
    for op in block.ops:
        for region in op.regions:
            _lower_block(region.block, users)
        decision = _decision(op, users)
        if decision is not None:
            key, value = decision
            op.attrs[key] = value
        if _may_run_op_by_op(op) and not _keeps_eager_layout(op):
            into_operands = _computing_into_operands(op)
            for inner, operand in _in_place_temporaries(op.regions[0].block).items():
                if inner not in into_operands:
                    inner.attrs["overwrites"] = inner.operands.index(operand)


def _computing_into_operands(group: Op) -> set[Op]:
    """The ops of a small group run op by op that compute a result the group writes into one of
    its operands (``in_place_results``): they write there, not over a temporary."""
    if not group.attrs.get("unfused"):
        return set()
    yielded = group.regions[0].block.ops[-1].operands
    return {computing for result in in_place_results(group) if (computing := yielded[result].op) is not None}


def _may_run_op_by_op(op: Op) -> bool:
    """Does this fused group run op by op (small), or may it (symbolic sizes: small vectors, and
    shapes the kernel has no tile plan for, see ``FusedKernel._sized_kernel``)?"""
    if not get_op(op.name).region_kernel or not op.regions:
        return False
    return bool(op.attrs.get("unfused")) or any(has_symbolic(v.type.shape) for v in (*op.operands, *op.results))


def _decision(op: Op, users: dict[Value, list[Op]]) -> tuple[str, Any] | None:
    """The attribute recording how ``op`` runs, if it runs other than as a kernel call."""
    if op.name == WHILE_LOOP:
        counted = counted_loop(op)
        return None if counted is None else ("counted_loop", counted[0])
    if runs_unfused(op):
        return "unfused", True
    if op.name == AS_PYTHON_NUMBER:
        operand = op.operands[0].owner
        python = isinstance(operand, Op) and _runs_python_operator(operand, users)
        return ("already_python", True) if python else None
    if _is_truth_test(op, users):
        return "truth_test", True
    numpy_operand = not all(v.type.weak for v in op.operands)
    if _runs_python_operator(op, users) or (numpy_operand and _is_scalar_arithmetic(op)):
        return "python_operator", _PYTHON_OPERATORS[_ufunc_of(op)][0]
    return None


def _is_truth_test(op: Op, users: dict[Value, list[Op]]) -> bool:
    """Is ``op`` the ``x != 0`` that staging makes of ``if x:`` for a 0-d number ``x``, read only
    as the condition of an ``if`` or a loop? Python's own truth test of ``x`` is the same then,
    and costs less than NumPy's comparison."""
    if _ufunc_of(op) is not np.not_equal or len(op.operands) != 2 or not _all_zero_d(op):
        return False
    tested, zero = op.operands
    if tested.type.dtype.kind not in "iufc" or not _is_literal(zero) or zero.owner.attrs["value"] != 0:
        return False
    return _only_tested_for_truth(op.results[0], users)


def _only_tested_for_truth(value: Value, users: dict[Value, list[Op]]) -> bool:
    """Is ``value`` only the predicate of ``cond`` ops and loop conditions, directly or as the
    result of a small fused group that yields it?"""
    readers = users.get(value, [])
    if not readers:
        return False
    for reader in readers:
        if reader.name == COND:
            if reader.operands.count(value) != 1 or reader.operands[0] is not value:
                return False
            continue
        block = reader.parent
        region = block.parent if block is not None else None
        owner = region.parent if region is not None else None
        if not get_op(reader.name).terminator or owner is None or reader.operands.count(value) != 1:
            return False
        if owner.name == WHILE_LOOP and block is owner.regions[0].block:
            continue  # the loop condition's yield
        if not runs_unfused(owner):
            return False
        if not _only_tested_for_truth(owner.results[reader.operands.index(value)], users):
            return False
    return True


# Blocks this long are unrolled loops, in practice: there, dropping the 0-d temporaries as they
# die saves what keeping thousands of NumPy scalars until the return costs (about 4% of an
# unrolled 200-column Cholesky); in a short block the del statements would cost more than that.
LONG_BLOCK_OPS = 64


def _record_releases(graph: Graph) -> None:
    """``releases`` on each op where values NumPy allocated die (see the module docstring): the
    results of ops of the same block with no planned buffer, whose last use is this op, which is
    no terminator (the block ends there anyway). 0-d values only in long blocks outside loops
    (``LONG_BLOCK_OPS``): one is small, but an unrolled loop makes thousands, while a loop rebinds
    its names and a short block ends soon."""
    sched = schedule(graph)
    intervals = live_intervals(graph, sched)
    for op in sched.ops:
        if get_op(op.name).terminator or op.attrs.get("already_python"):
            continue  # already_python: the result is the operand, under the same name
        position = sched.index[op]
        outside_loops = not _in_loop(op)
        scalars = outside_loops and op.parent is not None and len(op.parent.ops) >= LONG_BLOCK_OPS
        dying = [
            i
            for i, value in enumerate(op.operands)
            if _allocated_by_numpy(value, op.parent, scalars)
            and intervals[value][1] == position
            and value not in op.operands[:i]
        ]
        if dying:
            op.attrs["releases"] = tuple(dying)
        if op.attrs.get("unfused"):
            group = op.regions[0].block
            _record_group_releases(group, outside_loops and len(group.ops) >= LONG_BLOCK_OPS)


def _record_group_releases(block: Block, scalars: bool) -> None:
    """``releases`` inside a small fused group run op by op: its temporaries die within it."""
    ops = block.ops[:-1]
    yielded = set(block.ops[-1].operands)
    last_use = {v: i for i, op in enumerate(ops) for v in op.operands}
    for i, op in enumerate(ops):
        dying = [
            k
            for k, value in enumerate(op.operands)
            if _allocated_by_numpy(value, block, scalars)
            and value not in yielded
            and last_use[value] == i
            and value not in op.operands[:k]
        ]
        if dying:
            op.attrs["releases"] = tuple(dying)


def _allocated_by_numpy(value: Value, block: Block | None, scalars: bool) -> bool:
    """Is ``value`` a result of an op of ``block`` that holds no planned buffer (and is no 0-d
    value, unless ``scalars``)?"""
    owner = value.owner
    return (
        isinstance(owner, Op)
        and owner.parent is block
        and owner.name != CONST
        and "out_buffer" not in owner.attrs
        and (scalars or value.type.ndim > 0)
    )


def _in_loop(op: Op) -> bool:
    """Is ``op`` inside a ``while_loop``?"""
    block = op.parent
    while block is not None and block.parent is not None:
        loop = block.parent.parent
        if loop is not None and loop.name == WHILE_LOOP:
            return True
        block = loop.parent if loop is not None else None
    return False


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
        _lower_block(graph.body, _users(graph))
        _record_releases(graph)
        return _recorded(graph) != before


def _recorded(graph: Graph) -> dict[tuple[Op, str], Any]:
    """This pass's attributes on ``graph``, by (op, attribute name)."""
    return {(op, key): op.attrs[key] for op in graph.walk() for key in LOWERING_ATTRS if key in op.attrs}


def numpy_passes() -> list[Pass]:
    """The passes a graph goes through before the NumPy backend emits it: the default pipeline,
    planning memory for NumPy's kernels, then this backend's lowering."""
    return [*default_passes(NUMPY_TARGET), NumpyLowering()]
