"""``if`` and ``cond`` on a tensor: both branches are traced into the regions of one ``cond`` op.

Before (user code)::

    if flag > 0:
        y = W1 @ x
    else:
        y = W2 @ x

After conversion the branches are functions, and ``convert_ifelse`` decides at run time: a Python
(or concrete NumPy) predicate runs one branch, as Python would; a tensor predicate traces each
branch into its own block, undoing the first branch's effects before the second runs, and emits::

    %y = cond %0 -> f32[512] {
      %y_1 = matmul %W1, %x : f32[512]
      yield %y_1
    } else { ... }

Branch outputs (variables assigned in a branch and used afterwards) must have one shape and dtype on
both paths; arrays updated in place in a branch (``a[i] = v``) become extra results of the op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, SourceLocation, user_location
from dy2st.ir.core import COND, CONST, YIELD, Block, Op, Region, Value
from dy2st.ir.symbolic import joined_shape
from dy2st.ir.types import TensorType
from dy2st.runtime.control_flow.assigned import (
    ASSIGNED,
    AssignedGuard,
    assigned_flag,
    assigned_flag_label,
    guard_leaves,
)
from dy2st.runtime.control_flow.containers import check_unchanged, snapshot_containers
from dy2st.runtime.control_flow.path_shaped import PathShapedTensor, broadcast_in_block, common_type, path_types
from dy2st.runtime.control_flow.references import variable_in_user_code
from dy2st.runtime.control_flow.rotations import branch_rotations, rejoin
from dy2st.runtime.control_flow.truth import truth_value
from dy2st.runtime.control_flow.undefined import Undefined
from dy2st.runtime.control_flow.values import (
    KIND_TYPE,
    defined_within,
    describe,
    is_python_number,
    is_return_value,
    isolated_mutations,
    kinds_differ,
    path_kind,
    record_shared_memory,
    same_python_value,
    static_type,
    value_in_block,
    variable_name,
    weak_promotion_keeps,
    wrap_result,
    zero_d_kind,
    zero_like,
)
from dy2st.runtime.pytree import TreeDef, flatten, unflatten
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.tensor import Tensor

_SAME_TYPE_NOTE = "a variable assigned in both branches of a tensor 'if' needs one shape and dtype"
_BOTH_BRANCHES_NOTE = "a variable used after a tensor 'if' must be assigned in both branches"


@dataclass
class TracedBranch:
    """One traced branch.

    Attributes:
        block: the region block holding the branch's ops (no terminator yet).
        outputs: the objects the branch produced (variables' final values, or its results).
        leaves: for each output, its leaves (arrays and numbers, see ``is_leaf``) at the end of
            the branch, each tensor given by the SSA value it had then.
        updates: outer tensors the branch updated in place: id -> (tensor, before, at the end).
    """

    block: Block
    outputs: list[Any]
    leaves: list[list[Any]]
    updates: dict[int, tuple[Tensor, Value, Value]]


def _flat(obj: Any) -> tuple[TreeDef, list[Any]]:
    leaves: list[Any] = []
    return flatten(obj, leaves, is_leaf), leaves


def _snapshot(obj: Any) -> list[Any]:
    return [leaf._value if isinstance(leaf, Tensor) else leaf for leaf in _flat(obj)[1]]


def trace_branch(builder: GraphBuilder, run: Callable[[], Sequence[Any]]) -> TracedBranch:
    """Run ``run`` with ops going into a new block; undo its in-place updates afterwards."""
    block = Block()
    with builder.in_block(block), isolated_mutations(builder) as log:
        outputs = list(run())
        leaves = [_snapshot(o) for o in outputs]
    first_seen: dict[int, tuple[Tensor, Value]] = {}
    for tensor, previous in log:
        first_seen.setdefault(id(tensor), (tensor, previous))
    updates = {}
    for key, (tensor, before) in first_seen.items():
        at_end = tensor._value
        tensor._value = before  # the other branch, and the code after, start from the old state
        if not defined_within(before, block):
            updates[key] = (tensor, before, at_end)
    return TracedBranch(block, outputs, leaves, updates)


@dataclass
class _Output:
    """A leaf that differs between the branches: one result of the ``cond`` op."""

    label: str
    type: TensorType
    objects: tuple[Any, Any]  # the leaf object in the true and the false branch
    values: tuple[Any, Any]  # its SSA value (or Python number) at the end of each branch
    # Branch values of broadcast-compatible shapes: the branches' mismatch, raised where the
    # shape would be seen (path_shaped.py); None when both branches have ``type``.
    mismatch: GraphBuildError | None = None


def merge_branches(
    builder: GraphBuilder,
    predicate: Value,
    branches: tuple[TracedBranch, TracedBranch],
    labels: Sequence[str],
    loc: SourceLocation | None,
    live: Sequence[bool] | None = None,
) -> list[Any]:
    """Emit the ``cond`` op joining two traced branches; return the merged outputs.

    Outputs (or leaves of tuple/list/dict outputs) that are the same object or an equal Python
    constant on both paths stay as they are; the others become results of the op, checked to have
    one shape and dtype. Outer tensors updated in place in either branch get their new contents
    from extra results. An output not ``live`` (unused afterwards) that differs becomes ``Undefined``.
    """
    merged: list[Any] = []
    outputs: list[_Output] = []
    rebuild: list[tuple[int, TreeDef, list[Any]]] = []  # outputs to reassemble from their leaves
    flagged: list[tuple[int, _Output]] = []  # outputs assigned on some paths only, and their flag
    kinds: list[tuple[_Output, _Output]] = []  # 0-d outputs whose kind depends on the path, and it
    for index, label in enumerate(labels):
        t, f = (branch.outputs[index] for branch in branches)
        merged.append(t)
        if t is f or same_python_value(t, f):
            continue
        if (isinstance(t, Undefined) and isinstance(f, Undefined)) or (live is not None and not live[index]):
            merged[index] = Undefined(label)
            continue
        first_new = len(outputs)
        treedef, leaves = _merge_output(label, branches, index, outputs, loc)
        rebuild.append((index, treedef, leaves))
        kinds.extend(_kind_outputs(outputs, first_new))
        flag = _assigned_flag_output(builder, label, t, f)
        if flag is not None:
            outputs.append(flag)
            flagged.append((index, flag))
    swapped = _swapped_outputs(outputs)
    updated = _updated_tensors(branches)
    op = _emit_cond(builder, predicate, branches, outputs, updated, loc)
    results = {id(output): _result_tensor(builder, output, result, loc) for output, result in zip(outputs, op.results)}
    for leaf, kind in kinds:
        results[id(leaf)]._kind_flag = results[id(kind)]
    for index, treedef, leaves in rebuild:
        merged[index] = unflatten(treedef, [results[id(x)] if isinstance(x, _Output) else x for x in leaves])
    line = loc.lineno if loc is not None else 0
    for index, flag in flagged:
        reason = f"it is not assigned on the path the 'if' at line {line} took"
        guard_leaves(merged[index], AssignedGuard(results[id(flag)], labels[index], reason))
    for (tensor, before), result in zip(updated.values(), op.results[len(outputs) :]):
        result.name_hint = before.name_hint
        tensor._value = result
        builder.log_mutation(tensor, before)
    _record_shared_memory(outputs, results, branches)
    for members, counter, named in swapped:
        rejoin(builder, [results[id(output)] for output in members], named, results[id(counter)]._value, loc)
    return merged


def _swapped_outputs(outputs: list[_Output]) -> list[tuple[list[_Output], _Output, list[tuple]]]:
    """Outputs for variables a loop swapped in a branch (``rotations.branch_rotations``): each
    cycle's, with an output added for its counter on each path, and the arrays each names."""
    found = []
    for members, counters, named in branch_rotations([output.objects for output in outputs]):
        type_ = next(c.type for c in counters if isinstance(c, Value))
        counter = _Output("rotation", type_, (np.int64(0), np.int64(0)), counters)
        outputs.append(counter)
        found.append(([outputs[i] for i in members], counter, named))
    return found


def _emit_cond(builder: GraphBuilder, predicate: Value, branches, outputs: list[_Output], updated, loc) -> Op:
    """End each branch with a yield of the outputs and the updated arrays; emit the ``cond``."""
    types = [o.type for o in outputs] + [before.type for _, before in updated.values()]
    for side, branch in enumerate(branches):
        values = [_value_in_branch(builder, o, side, branch.block) for o in outputs]
        for output, value in zip(outputs, values):
            name_after_variable(value, output.label)
        values += [branch.updates.get(key, (None, None, before))[2] for key, (_, before) in updated.items()]
        with builder.in_block(branch.block):
            builder.emit(YIELD, values, loc=loc, result_types=[])
    regions = [Region(branches[0].block), Region(branches[1].block)]
    return builder.emit(COND, [predicate], regions=regions, loc=loc, result_types=types)


def _result_tensor(builder: GraphBuilder, output: _Output, result: Value, loc) -> Tensor:
    """The tensor standing for one result of the ``cond`` op."""
    result.name_hint = output.label.split("[")[0]
    if output.mismatch is not None:
        alternatives = tuple(dict.fromkeys(t for obj in output.objects for t in path_types(obj) or ()))
        return PathShapedTensor(result, builder, alternatives, output.mismatch, loc)
    tensor = wrap_result(builder, result)
    if not result.type.shape:
        tensor._scalar = zero_d_kind(list(output.objects))  # type: ignore[assignment]
    return tensor


def _value_in_branch(builder: GraphBuilder, output: _Output, side: int, block: Block) -> Value:
    """The value a branch yields for ``output``, broadcast to its type if the branches differ."""
    if output.mismatch is None:
        return value_in_block(builder, output.values[side], output.type, block)
    obj = output.objects[side]
    own_type = obj.type if isinstance(obj, Tensor) else static_type(obj)  # a path-shaped value's is its union
    assert own_type is not None
    value = value_in_block(builder, output.values[side], own_type, block)
    return broadcast_in_block(builder, value, output.type, block)


def _record_shared_memory(outputs: list[_Output], results: dict[int, Tensor], branches) -> None:
    """Results that were views, other results or arrays from before the ``if`` on some path may
    share memory with them (``record_shared_memory``)."""
    for side, branch in enumerate(branches):
        merged = {
            id(obj): results[id(o)]
            for o in outputs
            if isinstance(obj := o.objects[side], Tensor) and defined_within(obj._own, branch.block)
        }
        for output in outputs:
            if is_return_value(output.label):
                continue  # eager code returns it at once: nothing can update it in between
            owner = variable_in_user_code(output.label.split("[")[0])
            owners = {owner} if owner is not None else set()
            record_shared_memory(results[id(output)], [(output.objects[side], branch.block)], merged, owners)


def _merge_output(label, branches, index, outputs, loc) -> tuple[TreeDef, list[Any]]:
    """Match output ``index`` of both branches leaf by leaf; differing leaves join ``outputs``.

    Returns the output's structure and its leaves, an ``_Output`` standing for each cond result.
    """
    t, f = (branch.outputs[index] for branch in branches)
    t_leaves, f_leaves = branches[0].leaves[index], branches[1].leaves[index]
    placeholder = _undefined_placeholder(t, f)
    if placeholder is not None:
        if isinstance(t, Undefined):
            t, t_leaves = placeholder, _flat(placeholder)[1]
        else:
            f, f_leaves = placeholder, _flat(placeholder)[1]
    (t_def, t_objects), (f_def, f_objects) = _flat(t), _flat(f)
    if t_def.structure() != f_def.structure():
        raise _mismatch(label, t, f, loc)
    single = len(t_objects) == 1 and t_def.is_leaf
    leaves: list[Any] = []
    for j, (t_obj, f_obj) in enumerate(zip(t_objects, f_objects)):
        # A placeholder equal to the value (`t = 0` on one path only) still makes an output:
        # it carries the "assigned" guard, which a Python constant could not.
        if placeholder is None and (t_obj is f_obj or same_python_value(t_obj, f_obj)):
            leaves.append(t_obj)
            continue
        same_arrays = _output_of_same_arrays(outputs, t_obj, f_obj)
        if same_arrays is not None:
            leaves.append(same_arrays)  # ``b = a`` on both paths: one result, one array object
            continue
        leaf_label = label if single else f"{label}[{j}]"
        merged_type, mismatch = _merged_or_common_type(leaf_label, t_obj, f_obj, loc)
        output = _Output(leaf_label, merged_type, (t_obj, f_obj), (t_leaves[j], f_leaves[j]), mismatch)
        outputs.append(output)
        leaves.append(output)
    return t_def, leaves


def _assigned_flag_output(builder: GraphBuilder, label: str, t: Any, f: Any) -> _Output | None:
    """The extra output telling whether the path taken assigned variable ``label``, when a branch
    leaves it undefined or holds a value an earlier loop or ``if`` may not have assigned
    (assigned.py); None when both branches assign it. The lowered return value needs none: the
    early-return converter reads it only on paths that returned."""
    if is_return_value(label):
        return None
    flags = [assigned_flag(value, builder) for value in (t, f)]
    if all(flag is None for flag in flags):
        return None
    objects = tuple(ASSIGNED if flag is None else flag for flag in flags)
    values = tuple(flag._value if isinstance(flag, Tensor) else flag for flag in objects)
    return _Output(assigned_flag_label(label), TensorType((), np.dtype(bool)), objects, values)  # type: ignore[arg-type]


def _kind_outputs(outputs: list[_Output], first: int) -> list[tuple[_Output, _Output]]:
    """For each new 0-d output from ``first`` on whose kind in eager code (0-d array, NumPy scalar,
    Python number) differs between the branches: the extra int8 output computing it, appended to
    ``outputs`` (``result = x[i] if c else 0.0`` is a NumPy scalar or a Python float)."""
    pairs = []
    for output in outputs[first:]:
        if output.type.shape or output.mismatch is not None:
            continue
        kinds = [path_kind(obj) for obj in output.objects]
        if not kinds_differ(kinds):
            continue
        values = tuple(kind._value if isinstance(kind, Tensor) else np.int8(kind) for kind in kinds)
        kind_output = _Output(f"{output.label} kind", KIND_TYPE, tuple(kinds), values)  # type: ignore[arg-type]
        outputs.append(kind_output)
        pairs.append((output, kind_output))
    return pairs


def _output_of_same_arrays(outputs: list[_Output], t_obj: Any, f_obj: Any) -> _Output | None:
    """The output already standing for these two array objects, if another variable had them."""
    if not isinstance(t_obj, Tensor) or not isinstance(f_obj, Tensor):
        return None
    for output in outputs:
        if output.objects[0] is t_obj and output.objects[1] is f_obj:
            return output
    return None


def _undefined_placeholder(t: Any, f: Any) -> Any:
    """Zeros standing in for a variable on the path that leaves it undefined.

    They are never observed: the lowered return value is read only on paths that returned, and
    every other variable gets an "assigned" flag that each later use checks
    (``_assigned_flag_output``). None when both or neither branch defines it, or when the defined
    value is not made of arrays and numbers.
    """
    if isinstance(t, Undefined) == isinstance(f, Undefined):
        return None
    defined = f if isinstance(t, Undefined) else t
    treedef, leaves = _flat(defined)
    if any(static_type(leaf) is None for leaf in leaves):
        return None
    return unflatten(treedef, [zero_like(leaf) for leaf in leaves])


def _updated_tensors(branches: tuple[TracedBranch, TracedBranch]) -> dict[int, tuple[Tensor, Value]]:
    updated: dict[int, tuple[Tensor, Value]] = {}
    for branch in branches:
        for key, (tensor, before, _) in branch.updates.items():
            updated.setdefault(key, (tensor, before))
    return updated


def _merged_or_common_type(label: str, t: Any, f: Any, loc) -> tuple[TensorType, GraphBuildError | None]:
    """The output's type, or the common type of broadcast-compatible branch values with the
    branches' mismatch error to raise where the shape would be seen (path_shaped.py). A value
    whose shape depends on an inner ``if``'s path merges the same way."""
    inner = next((v for v in (t, f) if isinstance(v, Tensor) and v._alternatives is not None), None)
    if inner is not None:
        mismatch = inner._mismatch
    else:
        try:
            return _merged_type(label, t, f, loc), None
        except GraphBuildError as error:
            mismatch = error
    t_types, f_types = path_types(t), path_types(f)
    if t_types is None or f_types is None or {x.shape for x in t_types} == {x.shape for x in f_types} == {()}:
        raise mismatch
    common = common_type([t, f])
    if common is None:
        raise mismatch
    return common, mismatch


def _merged_type(label: str, t: Any, f: Any, loc: SourceLocation | None) -> TensorType:
    """The one type output ``label`` has after the if, or a ``GraphBuildError`` saying why not."""
    if isinstance(t, Undefined) or isinstance(f, Undefined):
        defined, undefined = ("true", "false") if isinstance(f, Undefined) else ("false", "true")
        raise GraphBuildError(
            f"{variable_name(label)} is defined in the {defined} branch of a tensor 'if' "
            f"but not in the {undefined} branch",
            loc,
            _BOTH_BRANCHES_NOTE,
        )
    t_type, f_type = static_type(t), static_type(f)
    if t_type is None or f_type is None:
        raise _mismatch(label, t, f, loc, "only arrays and numbers may differ between the branches of a tensor 'if'")
    if is_python_number(t) and is_python_number(f):
        if type(t) is not type(f):
            raise _mismatch(label, t, f, loc)
        return t_type
    if is_python_number(t) or is_python_number(f):
        number, array_type = (t, f_type) if is_python_number(t) else (f, t_type)
        if array_type.shape != () or not weak_promotion_keeps(array_type, number):
            raise _mismatch(label, t, f, loc)
        if not _holds_exactly(array_type, number):
            # `s = 0.1` on one path, a float32 scalar on the other: a float32 slot would round the
            # Python float eager code returns (0.10000000149).
            raise _mismatch(label, t, f, loc)
        return array_type
    shape = joined_shape(t_type.shape, f_type.shape)
    if shape is None or t_type.dtype != f_type.dtype:
        raise _mismatch(label, t, f, loc)
    return TensorType(shape, t_type.dtype, weak=t_type.weak and f_type.weak)


def _holds_exactly(array_type: TensorType, number: Any) -> bool:
    """Does the Python float ``number`` keep its value in ``array_type``'s dtype (NaN keeps it
    too)? Ints and bools keep theirs where ``weak_promotion_keeps`` holds."""
    if not isinstance(number, float):
        return True
    held = np.asarray(number).astype(array_type.dtype).item()
    return bool(held == number) or (held != held and number != number)


def _mismatch(label: str, t: Any, f: Any, loc: SourceLocation | None, note: str = _SAME_TYPE_NOTE) -> GraphBuildError:
    # Point at the line that computed the false branch's value (the design's error shape), and
    # name the 'if' in the note; fall back to the 'if' itself when no op made either value.
    where = _defining_location(f) or _defining_location(t)
    if where is not None and loc is not None and where != loc:
        note = f"{note} (the 'if' is at line {loc.lineno})"
    return GraphBuildError(
        f"{variable_name(label)} is {describe(t)} in the true branch but {describe(f)} in the false branch",
        where or loc,
        note,
    )


def _defining_location(value: Any) -> SourceLocation | None:
    """Where the op that computed a branch's value came from, when an op did."""
    if isinstance(value, Tensor):
        op = value._own.op  # not ``_value``: a view must not be derived again here
        if op is not None and op.name != CONST:
            return op.loc
    return None


def as_predicate(pred: Tensor) -> Value:
    """The 0-d bool value of a tensor used as a condition (NumPy's truth value rules)."""
    return truth_value(pred)._value


# --- what converted code calls -------------------------------------------------------------------
def convert_ifelse(
    pred: Any,
    true_fn: Callable[[], None],
    false_fn: Callable[[], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: tuple[str, ...],
    outputs: tuple[str, ...],
) -> None:
    """Run a converted ``if``: Python's ``if`` for a Python predicate, a ``cond`` op for a tensor.

    Args:
        pred: the condition's value.
        true_fn: the if-branch; false_fn: the else-branch (both update variables through nonlocal).
        get_state: returns the current values of ``names``; set_state rebinds them.
        names: every variable either branch assigns.
        outputs: those of ``names`` that are used after the ``if`` (the branch outputs).
    """
    if not isinstance(pred, Tensor):
        if pred:
            true_fn()
        else:
            false_fn()
        return
    loc = user_location(2)
    builder = pred._builder
    predicate = as_predicate(pred)
    initial = get_state()

    def run(branch: Callable[[], None]) -> Callable[[], tuple]:
        def traced() -> tuple:
            set_state(initial)
            branch()
            return get_state()

        return traced

    containers = snapshot_containers([true_fn, false_fn])
    branches = (trace_branch(builder, run(true_fn)), trace_branch(builder, run(false_fn)))
    check_unchanged(containers, loc, construct="'if'")
    live = [name in outputs for name in names]
    set_state(tuple(merge_branches(builder, predicate, branches, names, loc, live)))


def name_after_variable(value: Value, label: str) -> None:
    """Name a value a branch or loop body hands out after the variable it becomes (``y`` for
    ``y`` and ``y[0]``), unless it has a name already, so both branches of a cond print alike
    whatever order their ops were emitted in."""
    name = label.split("[")[0]
    if value.name_hint is None and isinstance(value.owner, Op) and name.isidentifier():
        value.name_hint = name


def is_leaf(x: Any) -> bool:
    """Leaves of branch results and loop variables: arrays, numbers, and undefined values."""
    return isinstance(x, (Tensor, Undefined)) or static_type(x) is not None


def cond(pred: Any, true_fn: Callable[..., Any], false_fn: Callable[..., Any], *operands: Any) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, staged when ``pred`` is a tensor.

    Works eagerly on concrete values (it simply calls one branch) and symbolically inside a
    converted function, where a tensor ``pred`` traces both branches into one ``cond`` op, like
    ``jax.lax.cond``. Both branches must return the same structure (tuples, lists, dicts) of
    arrays and numbers, with one shape and dtype per leaf.

    Args:
        pred: a Python bool, a concrete array with one element, or a symbolic tensor.
        true_fn, false_fn: functions of ``operands`` returning the result.
        operands: passed to the chosen branch.

    Returns:
        The result of the branch taken (for a tensor ``pred``, tensors selecting between both).
    """
    if not isinstance(pred, Tensor):
        return true_fn(*operands) if pred else false_fn(*operands)
    loc = user_location(2)
    builder = pred._builder
    predicate = as_predicate(pred)
    branches = (
        trace_branch(builder, lambda: [true_fn(*operands)]),
        trace_branch(builder, lambda: [false_fn(*operands)]),
    )
    return merge_branches(builder, predicate, branches, ["the result"], loc)[0]


def convert_ifexp(test: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """``true if test else false``: Python's ternary for a Python ``test``, a ``cond`` for a tensor.

    Only the chosen branch runs for a Python ``test``; for a tensor both are staged into the
    branches of one ``cond`` op and must give values of one shape and dtype.
    """
    if not isinstance(test, Tensor):
        return true_fn() if test else false_fn()
    return cond(truth_value(test), true_fn, false_fn)
