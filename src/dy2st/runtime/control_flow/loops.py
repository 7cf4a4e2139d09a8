"""``while`` with a tensor condition: trace the condition and the body into one ``while_loop`` op.

Before (user code)::

    i = 0
    while i < n:          # n is a 0-d array
        acc = acc + x[i]
        i += 1

``convert_while_loop`` runs the loop in Python while the condition is a Python value. Once it is a
tensor, the remaining iterations are staged::

    %i_1, %acc_1 = while_loop (0, %acc) : (i64[], f32[3])
        cond (%i: i64[], %acc: f32[3]) { ...; yield %0 }
    body (%i: i64[], %acc: f32[3]) { ...; yield %i_2, %acc_2 }

Loop-carried values are the variables the static analysis found (written in the body and read
before being written, or used after the loop) plus any array the body updates in place. Each keeps
one shape and dtype across iterations. A carried Python number becomes a 0-d tensor of NumPy's
dtype for it (``0`` -> int64, weakly typed like a Python int) and takes the dtype the body gives it
when NumPy's promotion allows (``s = 0`` then ``s = s + x.sum()`` carries an f32). A variable first
assigned in the body and used after the loop starts from zeros of the type the body gives it, and
carries an "assigned" flag that every later use checks at run time (``assigned.py``): after zero
iterations the use raises as Python would, instead of seeing the zeros.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, SourceLocation, build_error, user_location
from dy2st.ir.core import COND, WHILE_LOOP, YIELD, Block, Op, Region, Value
from dy2st.ir.opdefs import get_op, reads_element, stores_element
from dy2st.ir.symbolic import SymExpr, data_dependent_size, same_form, same_forms
from dy2st.ir.types import TensorType
from dy2st.passes.loop_indices import indices_apart
from dy2st.runtime.control_flow.assigned import (
    ASSIGNED,
    AssignedGuard,
    assigned_flag,
    assigned_flag_label,
    guard_leaves,
)
from dy2st.runtime.control_flow.cond import as_predicate, is_leaf, name_after_variable
from dy2st.runtime.control_flow.containers import check_unchanged, snapshot_containers
from dy2st.runtime.control_flow.references import add_stand_in, seen_elsewhere, variable_in_user_code
from dy2st.runtime.control_flow.rotations import (
    Rotation,
    base_array,
    counter_step,
    find_rotations,
    first_count,
    is_swapped,
    swapped_arrays_to_carry,
)
from dy2st.runtime.control_flow.rotations import after_loop as rotated_after_loop
from dy2st.runtime.control_flow.undefined import Undefined
from dy2st.runtime.control_flow.values import (
    constant,
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
from dy2st.staging.builder import GraphBuilder, current_builder
from dy2st.staging.tensor import Tensor

_MAX_TRACES = 5  # each retrace fixes at least one slot's type or adds one; real loops need 1-3
_SAME_SHAPE_NOTE = (
    "a loop-carried variable keeps one shape across iterations (after zero iterations eager code "
    "still holds the value from before the loop): start it with its final shape, for example "
    "acc = np.zeros_like(x[0]) instead of acc = 0.0"
)
_SAME_TYPE_NOTE = (
    "a loop-carried variable keeps one shape and dtype across iterations: give it its final "
    "dtype before the loop (for example with .astype or np.float32(0))"
)


@dataclass
class LoopState:
    """The variables of one loop, as converted code exposes them.

    Attributes:
        names: every variable the body (or a for target) assigns.
        carried: those whose value flows from one iteration to the next or out of the loop.
        get: returns the current values of ``names``; set: rebinds them.
    """

    names: tuple[str, ...]
    carried: tuple[str, ...]
    get: Callable[[], tuple]
    set: Callable[[tuple], None]


@dataclass
class _Slot:
    """One carried value: a block argument of both regions and a result of the loop.

    ``obj`` is the Tensor object bound to the block argument while the regions are traced: the
    user's own array object where there is one, so in-place updates through any alias are seen.
    A variable holding a tuple/list/dict has one slot per array or number in it (``leaf``).
    """

    label: str
    obj: Tensor
    init: Value
    type: TensorType
    name: str | None = None  # the variable carried; None for an array updated in place
    leaf: int = 0  # which leaf of the variable's value
    number: Any = None  # the Python number the slot started from, if any (it may be retyped)
    origin: Tensor | None = None  # the user's array object, when obj is a copy of it


@dataclass
class _Plan:
    slots: list[_Slot]
    structures: dict[str, TreeDef]  # carried variable -> the structure of its value

    def leaf_slots(self, name: str) -> list[_Slot]:
        return sorted((s for s in self.slots if s.name == name), key=lambda s: s.leaf)


@dataclass
class _Trace:
    cond_block: Block
    body_block: Block
    predicate: Value
    ends: list[Any]  # per slot: the object at the end of the body
    end_values: list[Any]  # per slot: its SSA value at the end of the body (or a Python number)
    final_state: tuple
    updated: dict[int, tuple[Tensor, Value]] = field(default_factory=dict)  # slot objects updated
    carried_objects: frozenset[int] = frozenset()  # ids of the slot objects


def stage_while_loop(
    builder: GraphBuilder,
    cond_fn: Callable[[], Any],
    body_fn: Callable[[], None],
    state: LoopState,
    loc: SourceLocation | None,
    tracked_kinds: dict[str, int] | None = None,
    rotations: tuple[Rotation, ...] = (),
) -> None:
    """Emit a ``while_loop`` op for a loop whose condition is a tensor, and rebind its variables.

    ``tracked_kinds`` names the 0-d variables whose kind in eager code (0-d array, NumPy scalar,
    Python number) the loop may change (``s = 0.0``, then ``s = s + x[i]``): each gets a carried
    kind code, so the value after the loop is returned as what the iterations that ran left. A
    first staging finds them, and stages the loop again with them. ``rotations``: the cycles of
    variables the body rotates through array objects (``a, b = b, a``, ``rotations.py``), each
    with a carried counter; found and staged again the same way.
    """
    original_state, original_body, before = state, body_fn, tuple(state.get())
    state, body_fn, flags, conditional = _with_assigned_flags(builder, state, body_fn)
    state, body_fn, kinds = _with_kind_flags(builder, state, body_fn, tracked_kinds or {})
    state, body_fn = _with_rotation_counters(state, body_fn, rotations)
    init = tuple(state.get())
    plan = _initial_plan(builder, state, init, loc)
    containers = snapshot_containers([cond_fn, body_fn])
    for _ in range(_MAX_TRACES):
        trace, outer_updates = _trace(builder, cond_fn, body_fn, state, init, plan)
        check_unchanged(containers, loc)
        revised = _revise(builder, state, init, plan, trace, outer_updates, loc)
        if revised is None:
            break
        plan = revised
    else:
        raise GraphBuildError("the types of the loop-carried variables do not settle", loc)
    varying = _kinds_that_vary(state, init, trace.final_state, tracked_kinds or {})
    found = _rotations(plan, trace)
    new_rotations = tuple(rotation for rotation in found if rotation not in rotations)
    if varying or new_rotations:
        original_state.set(before)
        kinds_now = {**(tracked_kinds or {}), **varying}
        stage_while_loop(builder, cond_fn, original_body, original_state, loc, kinds_now, rotations + new_rotations)
        return
    _emit(builder, state, init, plan, trace, loc, found)
    _attach_kind_flags(state, kinds)
    _guard_first_assignments(state, flags, conditional, loc)


def _with_rotation_counters(state: LoopState, body_fn: Callable[[], None], rotations: tuple[Rotation, ...]):
    """``state`` and ``body_fn`` extended with a carried counter per rotation: the iterations run,
    modulo the cycle's length (``rotations.py``)."""
    if not rotations:
        return state, body_fn
    values = dict(zip(state.names, state.get()))
    counters: dict[str, Any] = {rotation.label: first_count(values[rotation.names[0]]) for rotation in rotations}

    def body() -> None:
        body_fn()
        values = dict(zip(state.names, state.get()))
        for rotation in rotations:
            counters[rotation.label] = counter_step(counters[rotation.label], rotation, values[rotation.names[0]])

    labels = tuple(counters)
    return _with_extra_variables(state, counters, labels, labels), body


def _rotations(plan: _Plan, trace: _Trace) -> list[Rotation]:
    """The cycles of carried variables the body rotates through the arrays they started with."""
    members = [
        (slot.name, slot.obj, slot.origin, end)
        for slot, end in zip(plan.slots, trace.ends)
        if slot.name is not None and plan.structures[slot.name].is_leaf
    ]
    return find_rotations(members)


def _kinds_that_vary(state: LoopState, init: tuple, final: tuple, tracked: dict[str, int]) -> dict[str, int]:
    """Carried variables, not yet tracked, with a 0-d leaf whose kind after an iteration is not
    the kind it had before the loop, or is decided by a path in the body; with their leaf counts."""
    varying = {}
    for name, before, after in zip(state.names, init, final):
        if name not in state.carried or name in tracked:
            continue
        after_leaves = _flat(after)[1]
        # A variable the loop assigns first (or a lowered return value) has no kind before it:
        # what counts is the kind the body leaves, when a path in the body decides it.
        before_leaves = [Undefined(name)] * len(after_leaves) if isinstance(before, Undefined) else _flat(before)[1]
        if len(before_leaves) == len(after_leaves) and any(
            kinds_differ([path_kind(a)] if isinstance(b, Undefined) else [path_kind(b), path_kind(a)])
            for b, a in zip(before_leaves, after_leaves)
        ):
            varying[name] = len(after_leaves)
    return varying


def _with_kind_flags(builder: GraphBuilder, state: LoopState, body_fn: Callable[[], None], leaves: dict[str, int]):
    """``state`` and ``body_fn`` extended with carried kind codes (``path_kind``) for the leaves
    of each variable in ``leaves``: their kinds before the loop, then at the end of each iteration."""
    if not leaves:
        return state, body_fn, {}
    names = tuple(leaves)
    values = dict(zip(state.names, state.get()))
    kinds: dict[str, Any] = {name: _kind_value(values[name], leaves[name]) for name in names}
    labels = tuple(f"{name} kind" for name in names)

    def body() -> None:
        # The carried value's kind on entry to this iteration is the carried code, whatever the
        # block argument's own type says (a Python bool carried as a NumPy bool slot).
        _attach_kind_flags(state, kinds)
        body_fn()
        now = dict(zip(state.names, state.get()))
        for name in names:
            kinds[name] = _kind_value(now[name], leaves[name])

    return _with_extra_variables(state, kinds, names, labels), body, kinds


def _kind_value(value: Any, count: int) -> tuple[Any, ...]:
    """The kind code of each of the ``count`` leaves of ``value`` (0 where it has none, and for
    a variable not assigned yet), a tuple the loop carries."""
    if isinstance(value, Undefined) or len(_flat(value)[1]) != count:
        return (np.int8(0),) * count
    codes = []
    for leaf in _flat(value)[1]:
        kind = path_kind(leaf)
        codes.append(kind if isinstance(kind, Tensor) else np.int8(0 if kind is None else kind))
    return tuple(codes)


def _attach_kind_flags(state: LoopState, kinds: dict[str, Any]) -> None:
    """Each tracked variable's 0-d leaves carry the loop's kind code for them (on entry to an
    iteration, and after the loop)."""
    values = dict(zip(state.names, state.get()))
    for name, codes in kinds.items():
        leaves = _flat(values[name])[1]
        if len(leaves) != len(codes):
            continue
        for leaf, kind in zip(leaves, codes):
            if isinstance(leaf, Tensor) and not leaf.type.shape and isinstance(kind, Tensor):
                if _visible_wherever(kind._value, leaf._value, leaf._builder):
                    leaf._kind_flag = kind


def _visible_wherever(flag: Value, value: Value, builder: GraphBuilder) -> bool:
    """Is ``flag`` defined where ``value`` is, or in a block enclosing it? A flag defined in a
    branch or loop body must not ride on a tensor made before it, which code on other paths (the
    other branch of an enclosing ``if``) still holds: there the flag would be out of scope. Such a
    tensor is one the loop left unchanged, whose kind is then its own. A branch being traced is
    not linked to its ``cond`` yet: the blocks the builder has open enclose the current one."""
    owner = flag.owner
    flag_block = owner if isinstance(owner, Block) else owner.parent
    if defined_within(value, flag_block):
        return True
    return any(block is flag_block for block in builder.blocks) and defined_within(value, builder.block)


def _with_assigned_flags(builder: GraphBuilder, state: LoopState, body_fn: Callable[[], None]):
    """``state`` and ``body_fn`` extended with an "assigned" flag per carried variable that may be
    unassigned before the loop: False (or the flag of an earlier loop or ``if`` that may not have
    assigned it) before it; at the end of each iteration True, or the flag of a tensor ``if`` in
    the body that assigns it on some paths only.

    Returns the extended state, the extended body, the flags by variable (the dict the extended
    state reads and rebinds), and the variables some iteration may leave unassigned.
    """
    flags = _flags_before_the_loop(builder, state)
    conditional: set[str] = set()
    if not flags:
        return state, body_fn, {}, conditional
    unassigned = list(flags)
    labels = tuple(assigned_flag_label(name) for name in unassigned)

    def body() -> None:
        # A use in the body of a value an earlier iteration may not have assigned checks the
        # carried flag (``found + 1`` before ``found = ...`` raises on the first iteration).
        values = dict(zip(state.names, state.get()))
        for name in unassigned:
            if isinstance(flags[name], Tensor):
                reason = "it is not assigned on every path into this iteration of the loop"
                guard_leaves(values[name], AssignedGuard(flags[name], name, reason))
        body_fn()
        _flags_after_the_body(builder, state, flags, conditional)

    return _with_extra_variables(state, flags, unassigned, labels), body, flags, conditional


def _with_extra_variables(
    state: LoopState, values: dict[str, Any], names: list[str] | tuple[str, ...], labels: tuple[str, ...]
) -> LoopState:
    """``state`` extended with carried pseudo-variables: ``values[name]`` for each of ``names``,
    under ``labels`` (the flags and kind codes the runtime carries beside the user's variables)."""
    count = len(state.names)

    def get() -> tuple:
        return tuple(state.get()) + tuple(values[name] for name in names)

    def set_all(new: tuple) -> None:
        state.set(new[:count])
        values.update(zip(names, new[count:]))

    return LoopState(state.names + labels, state.carried + labels, get, set_all)


def _flags_after_the_body(builder: GraphBuilder, state: LoopState, flags: dict[str, Any], conditional: set[str]):
    """Set each flag to whether the iteration assigned its variable: True, or the flag of a
    tensor ``if`` that assigns it on some paths only (such variables join ``conditional``)."""
    values = dict(zip(state.names, state.get()))
    for name in flags:
        flag = assigned_flag(values[name], builder)
        flags[name] = ASSIGNED if flag is None else flag
        if flag is not None:
            conditional.add(name)


def _flags_before_the_loop(builder: GraphBuilder, state: LoopState) -> dict[str, Any]:
    """The "assigned" flag of each carried variable that may be unassigned before the loop. The
    lowered return value needs none: the early-return converter reads it only on paths that
    returned."""
    flags: dict[str, Any] = {}
    for name, value in zip(state.names, state.get()):
        if name in state.carried and not is_return_value(name):
            flag = assigned_flag(value, builder)
            if flag is not None:
                flags[name] = flag
    return flags


def _guard_first_assignments(
    state: LoopState, flags: dict[str, Any], conditional: set[str], loc: SourceLocation | None
) -> None:
    """After the loop: make every later use of a variable the loop first assigns check its flag."""
    values = dict(zip(state.names, state.get()))
    line = loc.lineno if loc is not None else 0
    for name, flag in flags.items():
        if isinstance(flag, Tensor):
            reason = (
                f"no iteration of the loop at line {line} assigned it"
                if name in conditional
                else f"the loop at line {line} ran zero times"
            )
            guard_leaves(values[name], AssignedGuard(flag, name, reason))


# --- planning the carried values ---------------------------------------------------------------
def _flat(value: Any) -> tuple[TreeDef, list[Any]]:
    leaves: list[Any] = []
    return flatten(value, leaves, is_leaf), leaves


def _stageable(leaves: list[Any]) -> bool:
    return bool(leaves) and all(static_type(leaf) is not None for leaf in leaves)


def _initial_plan(builder: GraphBuilder, state: LoopState, init: tuple, loc) -> _Plan:
    plan = _Plan([], {})
    swapped = swapped_arrays_to_carry(builder, state.names, init)
    for name, value in zip(state.names, init):
        treedef, leaves = _flat(value)
        if name not in state.carried or not _stageable(leaves):
            continue  # Python values ride along unchanged; undefined ones wait for the first trace
        if _is_view_variable(value):
            continue  # it follows its base, which is carried if the body updates it (``_revise``)
        _add_variable_slots(builder, plan, name, treedef, leaves, loc, swapped)
    return plan


def _is_view_variable(value: Any) -> bool:
    """Is ``value`` an exact view (``u = U[1:-1]``)? Its contents follow its base array, so the
    loop carries the base when the body updates either, and the view only if the body rebinds it."""
    return isinstance(value, Tensor) and value._parent is not None


def _add_variable_slots(
    builder: GraphBuilder,
    plan: _Plan,
    name: str,
    treedef: TreeDef,
    leaves: list,
    loc,
    swapped: frozenset[int] = frozenset(),
) -> None:
    """Slots for carried variable ``name``. ``swapped``: the ids of arrays an earlier loop swapped
    that this loop may update and swap again (``rotations.swapped_arrays_to_carry``): their copies
    share nothing."""
    plan.structures[name] = treedef
    for j, leaf in enumerate(leaves):
        label = name if len(leaves) == 1 and treedef.is_leaf else f"{name}[{j}]"
        if isinstance(leaf, Tensor):
            # A copy of the object: other names for the same array (``x = a``) must keep seeing
            # the value from before the loop, unless the body updates it in place. A copy of a
            # view keeps what the view may share, so it is not read after its base changes. The
            # same class: a Python number (PythonNumber) keeps Python's operators in the body.
            aliases = () if id(leaf) in swapped else leaf._aliases()
            if is_swapped(leaf) and id(leaf) not in swapped:
                aliases = (*aliases, (leaf, leaf._own))  # refusals then name its variable
            copy = type(leaf)(leaf._value, builder, aliases, scalar=leaf._scalar)
            copy._guard = leaf._guard  # reads in the body check an earlier loop's flag
            add_stand_in(copy, leaf)
            plan.slots.append(_Slot(label, copy, leaf._value, leaf.type, name, j, origin=leaf))
        else:
            plan.slots.append(_number_slot(builder, label, name, j, leaf, static_type(leaf), loc))


def _number_slot(
    builder: GraphBuilder, label: str, name: str | None, leaf: int, value: Any, type: TensorType | None, loc
) -> _Slot:
    """A slot starting from a constant: a Python number or a concrete NumPy value."""
    assert type is not None, f"{label} has no static type"  # numbers and NumPy values have one
    init = constant(builder, value, type, loc)
    obj = wrap_result(builder, init)
    number = value if is_python_number(value) else None
    return _Slot(label, obj, init, type, name, leaf, number)


def _strong_number_slot(builder: GraphBuilder, slot: _Slot, end_type: TensorType, loc) -> _Slot:
    """A Python number the body turns into a NumPy scalar of the same dtype (``s = 0.0`` then
    ``s = s + x[i]``): carried as that NumPy scalar, which is what eager code holds after the
    first iteration (and returns; a loop that runs zero times returns it as a NumPy scalar too).
    The dtype is the same, so no result of the first iteration changes."""
    try:
        number = np.asarray(slot.number, dtype=end_type.dtype)[()]
    except OverflowError as error:
        # Eager code raises this in the first iteration (k = 2**70; k = k + x[i] of int64 x).
        message = (
            f"{variable_name(slot.label)} starts as the Python int {slot.number}, which the loop body "
            f"combines with {end_type.dtype} values: {error}"
        )
        raise build_error(error, message, loc, "NumPy raises this in the first iteration too") from None
    init = constant(builder, number, end_type, loc)
    return _Slot(slot.label, wrap_result(builder, init), init, end_type, slot.name, slot.leaf, slot.number)


def _revise(builder, state, init, plan: _Plan, trace: _Trace, outer_updates, loc) -> _Plan | None:
    """The plan for the next trace, or None when this trace's types are consistent."""
    revised = _Plan([], dict(plan.structures))
    changed = False
    riders = _names_sharing_an_updated_array(plan, trace, loc)
    claimed = set(trace.carried_objects)  # an array object can back one slot only
    rotating = {name for rotation in _rotations(plan, trace) for name in rotation.names}
    _refuse_arrays_passed_on(plan, trace, rotating, loc)
    for slot, end in zip(plan.slots, trace.ends):
        if slot.name in riders:
            # Another name for one array the body updates in place: it keeps naming that object,
            # which the loop carries once (``riders``), so every name sees every update.
            del revised.structures[slot.name]
            changed = True
            continue
        new = _check_slot(builder, slot, end, trace, claimed, loc, slot.name in rotating)
        claimed.add(id(new.obj))
        changed |= new is not slot
        revised.slots.append(new)
    for name, before, after in zip(state.names, init, trace.final_state):
        if name in state.carried:
            changed |= _revise_variable(builder, revised, plan, name, before, after, loc)
    slot_ids = {id(s.obj) for s in plan.slots}
    for tensor, before in outer_updates.values():
        if id(tensor) not in slot_ids:
            _let_variables_ride(revised, plan, trace, tensor, loc)
            revised.slots.append(_Slot(before.name_hint or "an array updated in place", tensor, before, tensor.type))
            changed = True
    return revised if changed else None


def _refuse_arrays_passed_on(plan: _Plan, trace: _Trace, rotating: set[str], loc) -> None:
    """A variable that ends the body holding the array another variable started it with (``a, b,
    c = b, c, a``, ``a = b``) passes that array on: in the next iteration it sits where the first
    variable was. Where the body updates a variable in place, every array passed on to it is
    updated in a later iteration. Outside a rotation (``rotations.py``), which gives the arrays
    their contents after the loop, the loop carries the variables' values only: refuse where such
    an array is the caller's or another name's (or one an earlier loop swapped), which would miss
    those later updates. (An update in the first iteration of an array from before the loop is
    ``_check_slot``'s refusal.)"""
    start = {id(slot.obj): index for index, slot in enumerate(plan.slots) if slot.name is not None}
    following = {}
    for index, (slot, end) in enumerate(zip(plan.slots, trace.ends)):
        if slot.name is not None and slot.name not in rotating and end is not slot.obj and id(end) in start:
            following[index] = start[id(end)]
    for index, slot in enumerate(plan.slots):
        if index not in following or id(slot.obj) not in trace.updated:
            continue
        seen, source = {index}, following[index]
        while source not in seen:
            seen.add(source)
            passed = plan.slots[source]
            if passed.origin is not None and (is_swapped(passed.origin) or _seen_elsewhere(passed)):
                raise GraphBuildError(
                    f"{variable_name(passed.label)} names an array from before the loop that the loop body passes "
                    f"on to {variable_name(slot.label)} and updates in place through it in a later iteration; a tensor "
                    "loop carries the variables' values, so that update would not reach the array",
                    loc,
                    f"give the loop arrays of its own ({passed.label} = {passed.label}.copy() before the loop), "
                    "or pass all of them around in one cycle (a, b = b, a)",
                )
            if source not in following:
                break
            source = following[source]


def _let_variables_ride(revised: _Plan, plan: _Plan, trace: _Trace, array: Tensor, loc) -> None:
    """The body updates ``array`` through another name (a view of it, ``inner += ...`` with
    ``inner = X[1:-1]``), and a carried variable names that array (``X``): the loop carries the
    array once, and the variable keeps naming it, so reads through it see the updates. A variable
    the body rebinds cannot: refused, as for two names of one array (``_names_sharing_...``)."""
    for slot, end in zip(plan.slots, trace.ends):
        if slot.origin is not array or slot.name is None or slot.name not in revised.structures:
            continue
        if end is not slot.obj or not plan.structures[slot.name].is_leaf:
            raise GraphBuildError(
                f"{variable_name(slot.label)} names an array the loop body updates in place through another "
                "name (a view of it) while it also rebinds the variable; a tensor loop carries a rebound "
                "variable as its own value, so the update would not be seen through it",
                loc,
                "update the array through one name, or give the view its own copy (v = a[...].copy())",
            )
        revised.slots = [s for s in revised.slots if s.name != slot.name]
        del revised.structures[slot.name]


def _revise_variable(builder, revised: _Plan, plan: _Plan, name: str, before: Any, after: Any, loc) -> bool:
    """Check carried variable ``name`` against its value ``after`` the body; add the slots it
    needs to ``revised``. Returns whether it added any."""
    after_def, after_leaves = _flat(after)
    if name in plan.structures:
        if after_def.structure() != plan.structures[name].structure():
            raise _changed_python_value(name, before, after, loc)
        return False
    if isinstance(before, Undefined) and _stageable(after_leaves):
        revised.structures[name] = after_def
        revised.slots.extend(_zeros_slots(builder, name, after_def, after_leaves, loc))
        return True
    if _is_view_variable(before) and after is not before and _stageable(after_leaves):
        # The body rebinds a view variable: carry it, starting from the view's contents.
        _add_variable_slots(builder, revised, name, *_flat(before), loc)
        return True
    if not isinstance(before, Undefined) and not same_python_value(before, after):
        raise _changed_python_value(name, before, after, loc)
    return False


def _names_sharing_an_updated_array(plan: _Plan, trace: _Trace, loc) -> set[str]:
    """Carried variables that name one array object the body updates in place (``snap = acc``
    before the loop, ``acc += x`` and ``snap += 1`` in it): all but the first of them, which
    carries the array; the others ride along naming the same object. When one of them is
    rebound instead, its iteration-one reads would have to see the other names' updates, which a
    separately carried value cannot: that case is refused."""
    groups: dict[int, list[tuple[_Slot, Any]]] = {}
    for slot, end in zip(plan.slots, trace.ends):
        if slot.origin is not None and slot.name is not None:
            groups.setdefault(id(slot.origin), []).append((slot, end))
    riders: set[str] = set()
    for members in groups.values():
        updated = [slot for slot, _ in members if id(slot.obj) in trace.updated]
        if len(members) < 2 or not updated:
            continue
        rebound = [slot for slot, end in members if end is not slot.obj]
        single_leaf = all(plan.structures[slot.name].is_leaf for slot, _ in members)  # type: ignore[index]
        if rebound or not single_leaf:
            through = updated[0].label
            others = " and ".join(f"'{slot.label}'" for slot, _ in members if slot.label != through)
            raise GraphBuildError(
                f"'{through}' and {others} are the same array, and the loop body updates it in place "
                f"through '{through}' while it rebinds {variable_name((rebound or updated)[0].label)}; a tensor "
                "loop carries a rebound variable as its own value, so the update would not be seen through "
                "the other name in the first iteration",
                loc,
                "give one of them its own copy before the loop (b = a.copy()), or use one name",
            )
        riders.update(slot.name for slot, _ in members if slot is not updated[0])  # type: ignore[misc]
    return riders


def _changed_python_value(name: str, before: Any, after: Any, loc) -> GraphBuildError:
    return GraphBuildError(
        f"{variable_name(name)} is {describe(before)} before the loop and {describe(after)} after an iteration "
        "of a tensor loop",
        loc,
        "a tensor loop carries arrays and numbers (also in tuples, lists and dicts) of one structure; "
        "other Python values must not change in it",
    )


def _check_slot(
    builder: GraphBuilder, slot: _Slot, end: Any, trace: _Trace, claimed: set[int], loc, rotating: bool = False
) -> _Slot:
    """``slot`` if its value at the end of the body fits its type, else a retyped slot.
    ``rotating``: the slot's variable is one of a cycle the body rotates through its arrays
    (``rotations.py``): after the loop, the arrays take their final contents from the cycle."""
    end_type = static_type(end)
    if end_type is None:
        raise GraphBuildError(
            f"{variable_name(slot.label)} is carried by a tensor loop but is {describe(end)} at the end of "
            "the loop body",
            loc,
            "assign it a value of one shape and dtype on every path through the body",
        )
    updated_in_place = slot.name is not None and id(slot.obj) in trace.updated
    if updated_in_place and end is slot.obj and slot.origin is not None and id(slot.origin) not in claimed:
        # The body updates the user's array in place: carry the array object itself, so every
        # name for it (and the caller, for an argument) sees the updates.
        return _Slot(slot.label, slot.origin, slot.init, slot.type, slot.name, slot.leaf, slot.number)
    if updated_in_place and end is not slot.obj and slot.origin is not None and not rotating and _seen_elsewhere(slot):
        # Updated in place, then rebound: in eager code only the first iteration updates the
        # array object from before the loop, and any other name for it (or the caller, for an
        # argument) sees that update. The loop carries the variable's value only, so refuse.
        whose = "the caller's array" if slot.init.owner is builder.graph.body else "that array"
        raise GraphBuildError(
            f"{variable_name(slot.label)} names an array from before the loop that the loop body both "
            f"updates in place and rebinds, so only the first iteration would update {whose}",
            loc,
            "update a copy (a = a.copy() before the loop), or only update it in place",
        )
    if same_forms(end_type.shape, slot.type.shape) and end_type.dtype == slot.type.dtype:
        if slot.type.weak and not end_type.weak and slot.number is not None:
            return _strong_number_slot(builder, slot, end_type, loc)
        return slot  # weak vs strong alone does not change the carried dtype
    if slot.number is not None and end_type.shape == () and weak_promotion_keeps(end_type, slot.number):
        return _number_slot(builder, slot.label, slot.name, slot.leaf, slot.number, end_type, loc)
    relaxed = _relaxed_shape(builder, slot.type.shape, end_type.shape)
    if relaxed is not None and end_type.dtype == slot.type.dtype and not slot.type.weak:
        if same_forms(relaxed, slot.type.shape):
            return slot  # already relaxed: every size that changes is the loop's own
        relaxed_type = TensorType(relaxed, slot.type.dtype, byteorder=slot.type.byteorder)
        return dataclasses.replace(slot, type=relaxed_type)  # keeps ``origin``: the caller's array
    raise GraphBuildError(
        f"{variable_name(slot.label)} is {slot.type} before the loop but {end_type} after an iteration of its body",
        loc,
        _SAME_TYPE_NOTE if end_type.shape == slot.type.shape else _SAME_SHAPE_NOTE,
    )


def _relaxed_shape(builder, before: tuple, after: tuple) -> tuple | None:
    """The carried shape of a value whose size changes across iterations (``buf =
    np.concatenate([buf, x])``, ``y = y[y > 0]``): each size that changes becomes a data-dependent
    size of the loop's own, read from the value when the graph runs (what TensorFlow has users
    declare as shape invariants). None when the rank changes."""
    if len(before) != len(after):
        return None
    relaxed = []
    for old, new in zip(before, after):
        if same_form(old, new) or (isinstance(old, SymExpr) and old.symbols <= builder.loop_sizes):
            relaxed.append(old)
        else:
            size = data_dependent_size()
            builder.loop_sizes |= size.symbols
            relaxed.append(size)
    return tuple(relaxed)


def _seen_elsewhere(slot: _Slot) -> bool:
    """Can anything but the slot's own variable reach the array it held before the loop? If not,
    the first iteration's in-place update of that array cannot be observed."""
    assert slot.origin is not None and slot.name is not None
    owner = variable_in_user_code(slot.name)
    return seen_elsewhere(slot.origin, {owner} if owner is not None else set())


def _zeros_slots(builder: GraphBuilder, name: str, treedef: TreeDef, examples: list[Any], loc) -> list[_Slot]:
    """Slots for a variable first assigned in the body: it starts from zeros of its types."""
    slots = []
    for j, example in enumerate(examples):
        label = name if len(examples) == 1 and treedef.is_leaf else f"{name}[{j}]"
        type = static_type(example)
        assert type is not None, f"{label} has no static type"  # traced values are typed
        zero = zero_like(example)
        zero_type = type if is_python_number(zero) else TensorType(type.shape, type.dtype)
        slots.append(_number_slot(builder, label, name, j, zero, zero_type, loc))
    return slots


# --- tracing the regions ---------------------------------------------------------------------------
def _trace(builder, cond_fn, body_fn, state: LoopState, init: tuple, plan: _Plan):
    slots = plan.slots
    types = [s.type for s in slots]
    hints: list[str | None] = [s.label.split("[")[0] for s in slots]
    cond_block, body_block = Block(types, hints), Block(types, hints)
    builder.place_data_dependent_sizes([*cond_block.args, *body_block.args])
    bound = list(init)
    for name, treedef in plan.structures.items():
        bound[state.names.index(name)] = unflatten(treedef, [s.obj for s in plan.leaf_slots(name)])

    def run_cond():
        return _predicate(builder, cond_fn())

    def run_body():
        body_fn()
        final = tuple(state.get())
        ends = [_leaf_at_end(final, state, s) if s.name is not None else s.obj for s in slots]
        values = [e._value if isinstance(e, Tensor) else e for e in ends]
        return final, ends, values

    predicate, cond_updates = _in_region(builder, cond_block, slots, state, tuple(bound), run_cond)
    (final, ends, values), body_updates = _in_region(builder, body_block, slots, state, tuple(bound), run_body)
    slot_ids = {id(s.obj) for s in slots}
    outer: dict[int, tuple[Tensor, Value]] = {}
    updated: dict[int, tuple[Tensor, Value]] = {}
    for block, updates in ((cond_block, cond_updates), (body_block, body_updates)):
        for key, (tensor, before) in updates.items():
            if key in slot_ids:
                updated[key] = (tensor, before)
            elif not defined_within(before, block):
                outer.setdefault(key, (tensor, before))
    trace = _Trace(cond_block, body_block, predicate, ends, values, final, updated, frozenset(slot_ids))
    return trace, outer


def _leaf_at_end(final: tuple, state: LoopState, slot: _Slot) -> Any:
    """The slot's leaf of its variable's value at the end of the body (Undefined if missing)."""
    leaves = _flat(final[state.names.index(slot.name)])[1]
    return leaves[slot.leaf] if slot.leaf < len(leaves) else Undefined(slot.label)


def _in_region(builder, block: Block, slots: list[_Slot], state: LoopState, bound: tuple, run):
    """Run ``run`` with ops going into ``block`` and slots bound to its arguments; undo afterwards.

    Returns run's result and the first (tensor, value before) of every in-place update.
    """
    with builder.in_block(block), isolated_mutations(builder) as log:
        for slot, arg in zip(slots, block.args):
            slot.obj._value = arg
        state.set(bound)
        result = run()
    first: dict[int, tuple[Tensor, Value]] = {}
    for tensor, before in log:
        first.setdefault(id(tensor), (tensor, before))
    for tensor, before in first.values():
        tensor._value = before
    for slot in slots:
        slot.obj._value = slot.init
    return result, first


def _predicate(builder: GraphBuilder, value: Any) -> Value:
    if isinstance(value, Tensor):
        return as_predicate(value)
    return builder.const(np.asarray(bool(value)))


# --- emitting the op ----------------------------------------------------------------------------------
def _emit(builder, state: LoopState, init: tuple, plan: _Plan, trace: _Trace, loc, rotations: list[Rotation]) -> None:
    slots = plan.slots
    yields = [value_in_block(builder, v, s.type, trace.body_block) for s, v in zip(slots, trace.end_values)]
    for slot, value in zip(slots, yields):
        name_after_variable(value, slot.label)
    with builder.in_block(trace.body_block):
        builder.emit(YIELD, yields, loc=loc, result_types=[])
    with builder.in_block(trace.cond_block):
        builder.emit(YIELD, [trace.predicate], loc=loc, result_types=[])
    regions = [Region(trace.cond_block), Region(trace.body_block)]
    op = builder.emit(
        WHILE_LOOP, [s.init for s in slots], regions=regions, loc=loc, result_types=[s.type for s in slots]
    )
    final = list(init)
    for i, (before, after) in enumerate(zip(init, trace.final_state)):
        if state.names[i] not in state.carried and before is not after:
            final[i] = Undefined(state.names[i])  # not used after the loop (static analysis)
    after_loop: dict[int, Any] = {}
    rebound: list[tuple[Tensor, _Slot, Any]] = []
    for slot, end, arg, result, yielded in _named_results(op, plan, trace, yields, rotations):
        if yielded is arg and slot.number is not None and slot.type.weak:
            after_loop[id(slot)] = slot.number  # a Python number the body never changed stays one
            continue
        if slot.name is not None and end is not slot.obj:
            after_loop[id(slot)] = wrap_result(builder, result)
            if not result.type.shape:  # what eager code holds: the value from before or a body's
                after_loop[id(slot)]._scalar = zero_d_kind([slot.origin if slot.origin is not None else slot.obj, end])
            rebound.append((after_loop[id(slot)], slot, end))
            continue
        if yielded is arg:  # never changed by the body
            after_loop[id(slot)] = slot.origin if slot.origin is not None else slot.obj
            continue
        after_loop[id(slot)] = slot.obj
        slot.obj._value = result
        builder.log_mutation(slot.obj, slot.init)
    _rotate(builder, plan, op, rotations, after_loop, loc)
    _refuse_overlapping_carried_views(op, plan, trace, yields, loc)
    _record_shared_memory(rebound, after_loop, plan, trace)
    _refuse_stale_views(rebound, after_loop, plan, trace, yields)
    for name, treedef in plan.structures.items():
        final[state.names.index(name)] = unflatten(treedef, [after_loop[id(s)] for s in plan.leaf_slots(name)])
    state.set(tuple(final))


def _named_results(op: Op, plan: _Plan, trace: _Trace, yields: list, rotations: list[Rotation]) -> list[tuple]:
    """Name each result of the loop after its variable; return (slot, value at the end of the
    body, body argument, result, yielded value) for each slot but those of a rotation
    (``_rotate``)."""
    for slot, result in zip(plan.slots, op.results):
        result.name_hint = slot.label.split("[")[0]
    rotating = {name for rotation in rotations for name in rotation.names}
    carried = zip(plan.slots, trace.ends, trace.body_block.args, op.results, yields)
    return [entry for entry in carried if entry[0].name not in rotating]


def _rotate(builder, plan: _Plan, op: Op, rotations: list[Rotation], after_loop: dict[int, Any], loc) -> None:
    """The arrays of each rotation take their final contents, and its variables the tensors
    naming one of them by the rotation's counter (``rotations.after_loop``)."""
    result_of = {slot.name: result for slot, result in zip(plan.slots, op.results)}
    for rotation in rotations:
        members = [plan.leaf_slots(name)[0] for name in rotation.names]
        origins = [base_array(slot.origin) for slot in members if slot.origin is not None]
        assert len(origins) == len(members), "a rotation starts from arrays"
        counter = result_of[rotation.label]
        results = [result_of[name] for name in rotation.names]
        for slot, tensor in zip(members, rotated_after_loop(builder, rotation, counter, origins, results, loc)):
            after_loop[id(slot)] = tensor


def _record_shared_memory(rebound: list, after_loop: dict[int, Any], plan: _Plan, trace: _Trace) -> None:
    """A rebound variable that was a view before the loop or at the end of the body may share
    memory after it (``record_shared_memory``); views of another carried value share that."""
    merged = {id(slot.obj): after_loop[id(slot)] for slot in plan.slots}
    merged.update({id(end): result for result, _, end in rebound})
    for result, slot, end in rebound:
        if slot.name is not None and is_return_value(slot.name):
            continue  # eager code returns it at once: nothing can update it in between
        before = slot.origin if slot.origin is not None else slot.obj
        owner = variable_in_user_code(slot.name) if slot.name is not None else None
        owners = {owner} if owner is not None else set()
        record_shared_memory(result, [(before, None), (end, trace.body_block)], merged, owners)


def _refuse_stale_views(rebound: list, after_loop: dict[int, Any], plan: _Plan, trace: _Trace, yields: list) -> None:
    """A variable the body rebinds to a view of a carried array it updates (``row = X[i]`` after
    ``X[...] = ...``) but keeps from the previous iteration on some path (a ``break`` before the
    rebinding): there eager code's view shows the later update, and the graph's value does not.
    Mark the result as sharing the array as it was before the loop, so reading it is refused."""
    args = trace.body_block.args
    for result, slot, end in rebound:
        if not isinstance(end, Tensor) or end._scalar:
            continue
        index = plan.slots.index(slot)
        if not _forwards(yields[index], args[index]):
            continue
        shared = {id(array) for array, _ in end._shared_arrays()}
        for base in plan.slots:
            if id(base.obj) in shared and id(base.obj) in trace.updated and base is not slot:
                result._shares = (*result._shares, (after_loop[id(base)], base.init))


def _refuse_overlapping_carried_views(loop: Op, plan: _Plan, trace: _Trace, yields: list, loc) -> None:
    """A variable the body rebinds to a view of a carried array it stores into (``y_prev =
    forward[:, j]``) holds that view in the next iteration, where eager code's view shows that
    iteration's stores into the array and the loop's carried value (the block argument) keeps
    what the array held before them. Where the next iteration reads the value, or hands it on
    (``y_prev2 = y_prev``), after a store that may write into what the view holds, refuse: a loop
    over a Python range is then unrolled, where each view follows its array. A store shown to fall
    elsewhere than the view the previous iteration took (column ``j`` after column ``j - 1``,
    ``indices_apart``) keeps the loop rolled; so does a value only read before the stores."""
    body = trace.body_block
    for index, (slot, end) in enumerate(zip(plan.slots, trace.ends)):
        if slot.name is None or not isinstance(end, Tensor) or end._parent is None:
            continue  # not an exact view: a view on some path only is _refuse_stale_views' case
        base = next((b for b in plan.slots if b.obj is end._root() and id(b.obj) in trace.updated), None)
        if base is None or base is slot:
            continue
        held = _views_of(body, body.args[index])
        uses = [position for position, op in enumerate(body.ops[:-1]) if _uses(op, held)]
        if any(_forwards(other, value) for other in yields[:index] + yields[index + 1 :] for value in held):
            uses.append(len(body.ops))  # handed on to another variable: it outlives every store
        view = yields[index].owner
        for position, store in _stores_into(body, body.args[plan.slots.index(base)], view):
            if any(use > position for use in uses) and not _apart(loop, store, view):
                where = f" at line {store.loc.lineno}" if store is not None and store.loc is not None else ""
                raise GraphBuildError(
                    f"{variable_name(slot.label)} holds, from the previous iteration, a view of "
                    f"{variable_name(base.label)}, which the loop body stores into{where} before it reads "
                    f"{variable_name(slot.label)} or hands it on to another variable; eager code's view "
                    "shows the store, and a tensor loop's carried value would not",
                    loc,
                    f"carry a copy ({slot.label} = {base.label}[...].copy()) if the value from before the store "
                    "is meant, or read the view before storing into the array",
                )


def _views_of(body: Block, value: Value) -> set[Value]:
    """``value`` and the views the body takes of it (``y_prev[1:]``, views of those), at any
    depth: each shows what ``value`` shows in eager code."""
    views = {value}
    for op in body.walk():
        if get_op(op.name).view and op.operands and op.operands[0] in views:
            views.update(op.results)
    return views


def _uses(op: Op, values: set[Value]) -> bool:
    """Does ``op``, or an op nested in its regions, take one of ``values`` as an operand?"""
    return any(not values.isdisjoint(inner.operands) for inner in op.walk())


def _stores_into(body: Block, array: Value, view: Any) -> list[tuple[int, Op | None]]:
    """The stores of the body into the carried ``array`` (``array[index] = value``), each with
    its position, followed from the block argument through the stores of the body's own block.
    Where the array the yielded ``view`` is taken from is not reached that way (an update in a
    branch, an in-place operator), one unknown update (None) at position -1: it may be anywhere."""
    stores: list[tuple[int, Op | None]] = []
    current = array
    for position, op in enumerate(body.ops):
        if stores_element(op) and op.operands[0] is current:
            stores.append((position, op))
            current = op.results[0]
    if not isinstance(view, Op) or not view.operands or view.operands[0] is not current:
        return [(-1, None)]
    return stores


def _apart(loop: Op, store: Op | None, view: Any) -> bool:
    """Is ``store`` shown never to write into what ``view``, taken in the previous iteration,
    holds (``indices_apart``)?"""
    if store is None or not isinstance(view, Op) or not (reads_element(view) and get_op(view.name).view):
        return False
    index_operands = get_op(store.name).index_operands
    store_index = (store.attrs["template"], store.operands[index_operands:])
    return indices_apart(loop, store.operands[0].type.shape, store_index, view)


def _forwards(value: Any, arg: Value, seen: set[int] | None = None) -> bool:
    """Is ``value`` the block argument ``arg`` on some path (through the yields of ``cond`` ops,
    and through inner ``while_loop`` ops, whose result is their initial value when they run no
    iteration)? ``seen``: the values already explored, each once (a chain of ``if``s reaches every
    earlier result from both branches: exponential without it)."""
    if value is arg:
        return True
    seen = set() if seen is None else seen
    if id(value) in seen:
        return False  # explored already, and it did not lead to ``arg``
    seen.add(id(value))
    op = getattr(value, "op", None)
    if op is None:
        return False
    if op.name == WHILE_LOOP:
        return _forwards(op.operands[op.results.index(value)], arg, seen)
    if op.name != COND:
        return False
    index = op.results.index(value)
    return any(_forwards(region.block.ops[-1].operands[index], arg, seen) for region in op.regions)


# --- what converted code calls ---------------------------------------------------------------------
def convert_while_loop(
    loop_cond: Callable[[], Any],
    loop_body: Callable[[], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: tuple[str, ...],
    carried: tuple[str, ...],
) -> None:
    """Run a converted ``while``: a Python loop while the condition is a Python value, and a
    ``while_loop`` op for the remaining iterations once it is a tensor.

    Args:
        loop_cond: evaluates the condition.
        loop_body: runs one iteration (updates variables through nonlocal).
        get_state, set_state: read and rebind the variables ``names``.
        names: every variable the body assigns; carried: those live across iterations or after.
    """
    while True:
        pred = _probe(loop_cond)
        if isinstance(pred, Tensor):
            state = LoopState(names, carried, get_state, set_state)
            stage_while_loop(pred._builder, loop_cond, loop_body, state, user_location(2))
            return
        if not pred:
            return
        loop_body()


def _probe(loop_cond: Callable[[], Any]) -> Any:
    """Evaluate the condition; ops it stages go to a scratch block (a tensor loop re-evaluates it
    inside its condition region), so the graph holds no dead copy of it."""
    builder = current_builder()
    if builder is None:
        return loop_cond()
    with builder.in_block(Block()):
        return loop_cond()


def while_loop(cond_fn: Callable[[Any], Any], body_fn: Callable[[Any], Any], loop_vars: Any) -> Any:
    """Repeat ``loop_vars = body_fn(loop_vars)`` while ``cond_fn(loop_vars)``; return the final vars.

    Like ``jax.lax.while_loop``/``tf.while_loop``: eager on concrete values (a Python loop), and a
    ``while_loop`` op inside a converted function once the condition is a tensor. ``loop_vars`` is
    an array, a number, or a tuple/list/dict of them; ``body_fn`` returns the same structure with
    one shape and dtype per leaf.
    """
    leaves: list[Any] = []
    treedef = flatten(loop_vars, leaves, is_leaf)
    names = tuple(f"loop_vars[{i}]" if len(leaves) > 1 else "loop_vars" for i in range(len(leaves)))
    box = [loop_vars]

    def get_state() -> tuple:
        out: list[Any] = []
        flatten(box[0], out, is_leaf)
        return tuple(out)

    def set_state(values: tuple) -> None:
        box[0] = unflatten(treedef, values)

    def body() -> None:
        new = body_fn(box[0])
        new_leaves: list[Any] = []
        if flatten(new, new_leaves, is_leaf).structure() != treedef.structure():
            raise GraphBuildError(
                "body_fn returned a different structure than loop_vars",
                user_location(2),
                "return the same nesting of tuples, lists and dicts as loop_vars",
            )
        box[0] = new

    convert_while_loop(lambda: cond_fn(box[0]), body, get_state, set_state, names, names)
    return box[0]
