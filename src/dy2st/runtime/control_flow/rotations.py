"""Buffers a tensor loop rotates: double buffering (``a, b = b, a``) and its longer cycles.

A stencil or time stepper writes the next state into one buffer and swaps the names::

    for t in range(steps):
        b[1:-1] = 0.5 * (a[:-2] + a[2:])
        a, b = b, a

Each iteration updates the array object ``b`` names in place, then rebinds both names. A loop op
carries values, not objects: its slots for ``a`` and ``b`` carry what the two variables hold, and
the body yields ``b``'s new contents as ``a`` and ``a``'s as ``b``, so no array is copied. What a
slot cannot say is which array object each variable names once the loop is done, or which
contents each of the caller's arrays ends with: that depends on the trip count's parity, known
only when the graph runs. So the loop also carries a counter of its iterations modulo the length
of the cycle (``rotation of a, b``), and after the loop:

- each array object of the cycle takes, by a ``cond`` on the counter, the contents of the variable
  that names it then (its final contents: the caller's arrays are written back from them);
- each variable names a new tensor holding its own slot's contents, which the builder records as
  naming one of the cycle's objects, chosen by the counter (``GraphBuilder.rotated_arrays``):
  returning it returns that object itself, the caller's array for an argument, as eager code
  does (``RETURNS_CALLER_ARRAY`` chosen by an output, ``runtime/staging.py``);
- an in-place update through that tensor (``a[0] = 0`` after the loop) goes, by a ``cond`` on
  the counter, into the object it names; the tensor may share memory with every object of the
  cycle (``Tensor._shares``), so reading it after an update of one of the objects through
  another name is refused. A loop over a Python range is then unrolled, as it was before (each
  iteration rebinding the names to the very objects); a tensor ``while`` raises at that line.
  So is a later loop that updates the tensor, or rotates it again: its origin is no array of its
  own.

A cycle is found from one trace of the body: a variable whose value at the end of the body is the
array another variable held at its start, every variable of the cycle alike (``find_rotations``).
A variable holding the array on some paths only is a ``cond`` result, no such array, so a swap
under a tensor ``if`` (or skipped by a ``break``) is not a rotation. An inner loop's rotation of
the same variables (time steps inside an outer iteration) is one too: each outer iteration moves
the cycle on by the inner loop's counter instead of one step. A later loop swapping the same
variables the same way goes on from the earlier counter (``first_count``), where nothing else
reaches the arrays (``swapped_arrays_to_carry``). After a tensor ``if`` whose branch ran such a
loop, the ``cond`` carries the counter on each path (``branch_rotations``, ``rejoin``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from dy2st.errors import SourceLocation, user_frames
from dy2st.ir.core import COND, YIELD, Block, Region, Value
from dy2st.ir.symbolic import same_forms
from dy2st.runtime.control_flow.references import stood_in_for, variable_of, variables_reaching
from dy2st.runtime.control_flow.truth import truth_value
from dy2st.staging.builder import GraphBuilder, RotatedArray
from dy2st.staging.tensor import Tensor


@dataclass(frozen=True)
class Rotation:
    """A cycle of variables a loop body rotates through array objects.

    Attributes:
        names: the variables in cycle order: at the end of the body, ``names[k]`` names the array
            ``names[k + 1]`` (``names[0]`` for the last) named at its start.
    """

    names: tuple[str, ...]

    @property
    def order(self) -> int:
        return len(self.names)

    @property
    def label(self) -> str:
        """The name of the loop's counter for this cycle (a pseudo-variable the loop carries)."""
        return "rotation of " + ", ".join(self.names)


def find_rotations(members: list[tuple[str, Tensor, Tensor | None, Any]]) -> list[Rotation]:
    """The cycles among carried variables, each given as (name, the array bound to it at the start
    of the body, the array from before the loop it stands for, its value at the end of the body).

    A variable joins a cycle when it holds one array (no tuple), no 0-d value and no view, started
    from an array object of its own before the loop (or from one an earlier loop swapped, whose
    rotation the cycle then goes on with: ``_continues``), and ends the body holding the array
    another such variable started it with; all of a cycle's arrays have one type."""
    start: dict[int, int] = {}
    for index, (_, obj, origin, _) in enumerate(members):
        if _rotatable(obj) and origin is not None and (_rotatable(origin) or _rotated(origin) is not None):
            start[id(obj)] = index
    origins = [id(origin) for _, _, origin, _ in members]
    following: dict[int, int] = {}
    for index, (_, obj, _, end) in enumerate(members):
        after = _one_step_on(obj, end)
        if id(obj) in start and after is not None and id(after) in start:
            following[index] = start[id(after)]
    rotations, seen = [], set()
    for first in following:
        if first in seen:
            continue
        cycle, index = [first], following[first]
        while index != first and index in following and index not in cycle:
            cycle.append(index)
            index = following[index]
        if index != first:
            continue  # a chain that does not close: not a rotation
        seen.update(cycle)
        if _one_rotation(cycle, members, origins):
            rotations.append(Rotation(tuple(members[k][0] for k in cycle)))
    return rotations


def _one_rotation(cycle: list[int], members: list, origins: list[int]) -> bool:
    """Is the cycle one rotation: distinct arrays of one type, each variable moved on by the same
    steps (one, or an inner loop's counter whose choices are the cycle's arrays)?"""
    types = [members[k][1].type for k in cycle]
    if len({origins[k] for k in cycle}) != len(cycle):
        return False
    if not all(same_forms(t.shape, types[0].shape) and t.dtype == types[0].dtype for t in types):
        return False
    # Not a static swap of some variables and an inner loop's rotation of others.
    return (
        len({_step_of(members[k][3]) for k in cycle}) == 1 and _steps_fit(cycle, members) and _continues(cycle, members)
    )


def _continues(cycle: list[int], members: list) -> bool:
    """Does the cycle start from arrays of its own, or go on with an earlier loop's rotation: its
    variables hold that loop's swapped arrays, in the same cyclic order?"""
    found = [_rotated(members[k][2]) for k in cycle]
    entries = [entry for entry in found if entry is not None]
    if not entries:
        return True
    if len(entries) != len(found):
        return False
    first = entries[0]
    if any(
        entry.counter is not first.counter or {id(a) for a in entry.named} != {id(a) for a in first.named}
        for entry in entries
    ):
        return False
    return all(later.named[0] is earlier.named[1] for earlier, later in zip(entries, entries[1:] + entries[:1]))


def _rotated(array: Any) -> RotatedArray | None:
    """The ``GraphBuilder.rotated_arrays`` entry of a variable an earlier loop swapped, if it is one."""
    if not isinstance(array, Tensor):
        return None
    entry = array._builder.rotated_arrays.get(id(array))
    return entry if entry is not None and entry.tensor is array else None


def first_count(array: Any) -> Any:
    """The counter a rotation starts from: 0, or, going on with an earlier loop's rotation, that
    loop's counter (its variables name the arrays it left them naming)."""
    entry = _rotated(array)
    return np.int64(0) if entry is None else Tensor(entry.counter, array._builder, scalar=True)


def base_array(origin: Tensor) -> Tensor:
    """The array a variable names at counter 0: the one it held before the loop, or, for a variable
    an earlier loop swapped, the one it named at that loop's counter 0."""
    entry = _rotated(origin)
    return origin if entry is None else entry.named[0]


def swapped_arrays_to_carry(builder: GraphBuilder, names: tuple[str, ...], values: tuple) -> frozenset[int]:
    """The variables, among ``values``, that an earlier loop swapped and that a loop may carry as
    arrays of their own (to update and swap again): those whose arrays nothing but the variables
    naming them can reach (no other variable, container or view, no global). Anything else could
    read one of the arrays while the loop's copy of the variable holds its new contents."""
    groups: dict[int, tuple[Value, list[Tensor]]] = {}
    for value in values:
        entry = _rotated(value)
        if entry is not None:
            groups.setdefault(id(entry.counter), (entry.counter, []))[1].append(value)
    carried: set[int] = set()
    captures = {id(tensor) for tensor in builder.capture_tensors.values()}
    for counter, members in groups.values():
        group = [entry.tensor for entry in builder.rotated_arrays.values() if entry.counter is counter]
        owners = _variables_holding(group)
        arrays = builder.rotated_arrays[id(members[0])][2]
        if owners and all(_only_named_by(array, owners, captures) for array in arrays):
            carried.update(id(value) for value in members)
    return frozenset(carried)


def _variables_holding(tensors: list[Tensor]) -> set:
    """The user's variables (in every frame of user code) bound to one of ``tensors`` itself."""
    found = set()
    for frame in user_frames(2):
        for name, value in frame.f_locals.items():
            if any(value is tensor for tensor in tensors):
                found.add(variable_of(frame, name))
    return found


def is_swapped(array: Any) -> bool:
    """Is ``array`` a variable's tensor that a loop swapped (``after_loop``)?"""
    return _rotated(array) is not None


def _only_named_by(array: Tensor, owners: set, captures: set[int]) -> bool:
    """Can nothing but the variables ``owners`` reach ``array`` (nor the array it stands in for)?"""
    if id(array) in captures or variables_reaching(array) - owners:
        return False
    stands_for = stood_in_for(array)
    return stands_for is None or _only_named_by(stands_for, owners, captures)


def _one_step_on(obj: Tensor, end: Any) -> Tensor | None:
    """The array a variable that held ``obj`` at the start of the body holds at its end, if
    another: ``end``; or, for a variable an inner loop rotated (``GraphBuilder.rotated_arrays``)
    whose choices start from ``obj``, the choice one step on."""
    if not isinstance(end, Tensor) or end is obj:
        return None
    rotated = end._builder.rotated_arrays.get(id(end))
    if rotated is None or rotated.tensor is not end:
        return end
    named = rotated.named
    return named[1] if named[0] is obj and len(named) > 1 else None


def _step_of(end: Any) -> Value | None:
    """The counter of the inner loop that rotated ``end`` (the steps one iteration takes), or
    None for one step."""
    rotated = end._builder.rotated_arrays.get(id(end))
    return rotated.counter if rotated is not None and rotated.tensor is end else None


def _steps_fit(cycle: list[int], members: list[tuple[str, Tensor, Tensor | None, Any]]) -> bool:
    """Does an inner loop's rotation, if the cycle is one, choose among the cycle's arrays only?"""
    objects = {id(members[k][1]) for k in cycle}
    for k in cycle:
        end = members[k][3]
        rotated = end._builder.rotated_arrays.get(id(end))
        if rotated is not None and rotated.tensor is end and {id(o) for o in rotated.named} != objects:
            return False
    return True


def _rotatable(array: Tensor) -> bool:
    """An array object of its own (no view, nothing it may share, no immutable 0-d value)?"""
    return (
        type(array) is Tensor
        and array.type.ndim > 0
        and not array._scalar
        and array._parent is None
        and not array._shares
    )


def counter_step(counter: Any, rotation: Rotation, end: Any) -> Any:
    """The counter after one more iteration, whose body leaves the cycle's first variable holding
    ``end``: one step on, or as many as the inner loop that rotated it took (``_step_of``);
    modulo the cycle's length, so it never overflows."""
    step = _step_of(end) if isinstance(end, Tensor) else None
    if step is None:
        return (counter + 1) % rotation.order
    return (counter + Tensor(step, end._builder, scalar=True)) % rotation.order


def after_loop(
    builder: GraphBuilder,
    rotation: Rotation,
    counter: Value,
    origins: list[Tensor],
    results: list[Value],
    loc: SourceLocation | None,
) -> list[Tensor]:
    """Give each array of the cycle its final contents and return the tensor each variable of the
    cycle names after the loop (see the module docstring).

    Args:
        counter: the loop's result for the rotation counter (iterations modulo the cycle length).
        origins: the array each variable named before the loop, in ``rotation.names`` order.
        results: the loop's result for each variable, in that order.
    """
    variables = [Tensor(result, builder) for result in results]
    line = f" at line {loc.lineno}" if loc is not None else ""
    whats = [
        f"'{name}' names one of the arrays the loop{line} swaps ({', '.join(rotation.names)}), "
        "which one known only when the graph runs"
        for name in rotation.names
    ]
    _join(builder, variables, list(range(rotation.order)), origins, counter, whats, loc)
    return variables


def _join(
    builder: GraphBuilder,
    variables: list[Tensor],
    steps: list[int],
    origins: list[Tensor],
    counter: Value,
    whats: list[str],
    loc: SourceLocation | None,
) -> None:
    """Make ``variables`` name the ``origins`` by ``counter``: variable i names
    ``origins[(steps[i] + counter) % len(origins)]``; give each array the contents of the variable
    naming it, and each variable the hook that does so again after an in-place update."""
    order = len(origins)
    at = {step: variable for step, variable in zip(steps, variables)}

    def assign() -> None:
        """Give each array the contents of the variable naming it: at counter p, origins[j] is
        named by the variable of step (j - p) % order. Only the variables' contents are read (not
        the arrays' old ones), so an update through a variable still runs in place; an array no
        variable here names at p (one unused after a tensor ``if``) keeps its contents."""
        options = [
            [at[(j - p) % order]._own if (j - p) % order in at else origins[j]._own for j in range(order)]
            for p in range(order)
        ]
        for origin, value in zip(origins, _switch(builder, counter, options, loc)):
            builder.log_mutation(origin, origin._own)
            origin._value = value
        shares = tuple((origin, origin._own) for origin in origins)
        for tensor in variables:
            tensor._shares = shares

    def updated(tensor: Tensor) -> None:
        """A variable of the cycle was updated in place: the array it names takes its new
        contents, the others keep theirs (which the other variables hold)."""
        assign()

    for tensor, step, what in zip(variables, steps, whats):
        named = tuple(origins[(step + p) % order] for p in range(order))
        builder.rotated_arrays[id(tensor)] = RotatedArray(tensor, counter, named, updated, what)
    assign()


def branch_rotations(objects: list[tuple[Any, Any]]) -> list[tuple[list[int], tuple[Any, Any], list[tuple]]]:
    """Variables a loop swapped in one branch of a tensor ``if`` (or both): for each cycle, the
    indices of its variables among the branches' differing ``objects`` (a (true, false) pair per
    variable), and what the cycle's counter is on each side (the loop's counter, or the constant
    at which the arrays a branch left the variables naming are the ones they name), and the
    arrays each variable names counter by counter. Each side must be one rotation of the cycle
    (a variable unused after the ``if`` is left out: its array keeps its contents)."""
    groups: dict[frozenset[int], list[int]] = {}
    for index, pair in enumerate(objects):
        entry = next((_rotated(obj) for obj in pair if _rotated(obj) is not None), None)
        if entry is not None:
            groups.setdefault(frozenset(id(array) for array in entry.named), []).append(index)
    found = []
    for members in groups.values():
        named = [_named_by(objects[i]) for i in members]
        counters = tuple(_side_counter([objects[i][side] for i in members], named) for side in (0, 1))
        if all(counter is not None for counter in counters):
            found.append((members, counters, named))
    return found


def _named_by(pair: tuple[Any, Any]) -> tuple[Tensor, ...]:
    """The arrays a swapped variable names, counter by counter (either side's entry)."""
    entry = next(e for e in (_rotated(obj) for obj in pair) if e is not None)
    return entry.named


def _side_counter(objects: list[Any], named: list[tuple[Tensor, ...]]) -> Any:
    """The counter one branch leaves a cycle's variables at: their loop's (all of one loop), or the
    constant at which each names the array it holds there; None if neither."""
    entries = [_rotated(obj) for obj in objects]
    if all(entry is not None for entry in entries):
        counters = {id(entry.counter) for entry in entries if entry is not None}
        first = entries[0]
        same_order = all(
            entry is not None and len(entry.named) == len(names) and all(x is y for x, y in zip(entry.named, names))
            for entry, names in zip(entries, named)
        )
        return first.counter if len(counters) == 1 and same_order and first is not None else None
    if any(entry is not None for entry in entries):
        return None
    for p in range(len(named[0])):
        if all(names[p] is obj for names, obj in zip(named, objects)):
            return np.int64(p)
    return None


def rejoin(
    builder: GraphBuilder, variables: list[Tensor], named: list[tuple[Tensor, ...]], counter: Value, loc
) -> None:
    """The results of a tensor ``if`` for a cycle's variables name the cycle's arrays by
    ``counter`` (the ``if``'s result for the counter on each side, ``branch_rotations``)."""
    origins = list(named[0])
    steps = [next(j for j, origin in enumerate(origins) if origin is names[0]) for names in named]
    line = f" at line {loc.lineno}" if loc is not None else ""
    whats = [
        f"this variable names one of the arrays a loop swaps inside the 'if'{line}, which one known only "
        "when the graph runs"
    ] * len(variables)
    _join(builder, variables, steps, origins, counter, whats, loc)


def _switch(builder: GraphBuilder, counter: Value, options: list[list[Value]], loc, first: int = 0) -> list[Value]:
    """``options[counter - first]``, by ``cond`` ops whose branches yield one option each (no array
    is copied: a branch yields a value computed before)."""
    if len(options) == 1:
        return options[0]
    predicate = truth_value(cast(Tensor, Tensor(counter, builder, scalar=True) == first))._value
    then_block, else_block = Block(), Block()
    with builder.in_block(then_block):
        builder.emit(YIELD, options[0], loc=loc, result_types=[])
    with builder.in_block(else_block):
        rest = _switch(builder, counter, options[1:], loc, first + 1)
        builder.emit(YIELD, rest, loc=loc, result_types=[])
    types = [value.type for value in options[0]]
    regions = [Region(then_block), Region(else_block)]
    op = builder.emit(COND, [predicate], regions=regions, loc=loc, result_types=types)
    for result, value in zip(op.results, options[0]):
        result.name_hint = value.name_hint
    return list(op.results)
