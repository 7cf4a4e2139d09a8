"""Reverse-mode differentiation of a graph: the backward graph is built on the IR, after the
forward ops, and is then optimized like any other graph (no Python tape at run time).

Each op's adjoint is its definition's ``vjp`` rule. Control flow differentiates structurally:

- ``cond``: a ``cond`` on the same predicate whose branches recompute the forward branch and run
  its adjoint, yielding the cotangents of the values from outside the branch that it read.
- ``while_loop``: the forward loop pushes the values each iteration starts from on a tape (a
  carried value, ``ops/tape.py``); a backward ``while_loop`` pops them in reverse order, recomputes
  that iteration's body and runs its adjoint, carrying the cotangents of the loop-carried values
  and summing those of the values from outside the loop that the body read. The trip count is
  whatever the forward loop ran: ``break``, ``continue`` and early ``return`` are already flags
  and conditions in the graph.

Only values that depend on the differentiated inputs (``active``) get cotangents; integers and
booleans never do. A cotangent that is None is zero.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from dy2st.autodiff.clone import clone_ops
from dy2st.autodiff.counted import CountedLoop, counted_loop
from dy2st.autodiff.outer_sums import BlockedSums, FactorRows, outer_product_sums
from dy2st.autodiff.stacked import can_stack, read_rows, recomputable, record_rows
from dy2st.errors import DifferentiationError
from dy2st.ir.core import COND, TERMINATORS, WHILE_LOOP, YIELD, Block, Graph, Op, Region, Value, replace_uses
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import TAPE_NEW, TAPE_NONEMPTY, TAPE_POP, TAPE_PUSH
from dy2st.ir.opdefs import get_op
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import add, differentiable, fit_to, zeros
from dy2st.ops.tape import TAPE_TYPE, python_int_difference, python_int_sum, python_less, sum_of_outer_products

_tape_numbers = itertools.count()


def differentiate(
    graph: Graph, wrt: Sequence[int], of: Sequence[int], seeds: Sequence[Value], checkpoint: bool = False
) -> list[Value]:
    """Append to ``graph``'s body the backward code giving the cotangents of inputs ``wrt`` for
    the cotangents ``seeds`` of outputs ``of``, and return them (zeros for an input the outputs
    do not depend on). The return op stays last; the caller adds the results to it.
    ``checkpoint``: loops save only what each iteration starts from (see ``Backprop``)."""
    body = graph.body
    active = {graph.inputs[i] for i in wrt if differentiable(graph.inputs[i].type)}
    mark_active(body, active)
    ret = body.ops.pop()
    adjoints: dict[Value, Value] = {}
    emitter = Emitter(body, ret.loc)
    for index, seed in zip(of, seeds):
        output = ret.operands[index]
        if output in active:
            _accumulate(emitter, adjoints, output, seed)
    Backprop(active, checkpoint).ops(emitter, list(body.ops), adjoints)
    grads = [adjoints.get(graph.inputs[i]) or zeros(emitter, graph.inputs[i]) for i in wrt]
    body.append(ret)
    return grads


# --- activity --------------------------------------------------------------------------------
def mark_active(block: Block, active: set[Value]) -> None:
    """Add to ``active`` every floating-point value of ``block`` (and its regions) computed from
    an active value."""
    for op in block.ops:
        if op.name == COND:
            for region in op.regions:
                mark_active(region.block, active)
            yields = [region.block.ops[-1].operands for region in op.regions]
            for k, result in enumerate(op.results):
                if _depends(result.type) and any(y[k] in active for y in yields):
                    active.add(result)
        elif op.name == WHILE_LOOP:
            _mark_loop_active(op, active)
        elif any(v in active for v in op.operands) or any(v in active for v in _free_values(op)):
            active.update(r for r in op.results if _depends(r.type))


def _mark_loop_active(op: Op, active: set[Value]) -> None:
    body = op.regions[1].block
    carried = [v in active for v in op.operands]
    while True:  # to a fixpoint: a value made active in one iteration is active in the next
        for arg, is_active in zip(body.args, carried):
            if is_active and _depends(arg.type):
                active.add(arg)
        mark_active(body, active)
        after = [was or y in active for was, y in zip(carried, body.ops[-1].operands)]
        if after == carried:
            break
        carried = after
    active.update(r for r, is_active in zip(op.results, carried) if is_active and _depends(r.type))


def _depends(t: TensorType) -> bool:
    """Can a value of this type carry a gradient on to later values? Floats can; so can complex
    numbers (``np.abs(np.fft.rfft(x))`` depends on ``x`` through them), which ``Backprop.simple``
    refuses to differentiate rather than treat as constants."""
    return differentiable(t) or t.dtype.kind == "c"


def _free_values(op: Op) -> list[Value]:
    """The values defined outside ``op`` that ops in its regions read, in first-use order."""
    defined: set[Value] = set()
    free: dict[Value, None] = {}
    for region in op.regions:
        for inner in region.block.walk():
            defined.update(inner.results)
            for nested in inner.regions:
                defined.update(nested.block.args)
        defined.update(region.block.args)
    for region in op.regions:
        for inner in region.block.walk():
            for v in inner.operands:
                if v not in defined:
                    free.setdefault(v)
    return list(free)


def _accumulate(e: Emitter, adjoints: dict[Value, Value], value: Value, cotangent: Value) -> None:
    total = add(e, adjoints.get(value), fit_to(e, cotangent, value.type))
    assert total is not None
    adjoints[value] = total


# --- the backward pass -----------------------------------------------------------------------
class Backprop:
    """Emits the adjoint of ops, in reverse order, into an emitter's block.

    Attributes:
        active: the values that depend on the differentiated inputs; copies of forward ops made
            for the backward code add their active results.
        checkpoint: loops save only the values each iteration starts from, and the backward
            loop recomputes the iteration from them (less memory, more time); by default they
            save the forward values their adjoints read.
    """

    def __init__(self, active: set[Value], checkpoint: bool = False):
        self.active = active
        self.checkpoint = checkpoint

    def ops(self, e: Emitter, ops: Sequence[Op], adjoints: dict[Value, Value]) -> None:
        """Add to ``adjoints`` the cotangents that flow back through ``ops`` from the ones it holds."""
        for op in reversed(ops):
            if op.name in TERMINATORS:
                continue
            cotangents = [adjoints.get(r) for r in op.results]
            if all(c is None for c in cotangents):
                continue
            here = e.at(op.loc)
            if op.name == COND:
                self.cond(here, op, adjoints)
            elif op.name == WHILE_LOOP:
                self.loop(here, op, adjoints)
            else:
                self.simple(here, op, cotangents, adjoints)

    def simple(self, e: Emitter, op: Op, cotangents: list[Value | None], adjoints: dict[Value, Value]) -> None:
        wanted = [v in self.active for v in op.operands]
        if not any(wanted):
            return
        rule = get_op(op.name).vjp
        if any(v.type.dtype.kind == "c" for v in [*op.operands, *op.results] if v in self.active):
            raise DifferentiationError(
                f"cannot differentiate through {op.name} of complex numbers: dy2st differentiates real "
                "floating-point values only",
                op.loc,
            )
        if rule is None:
            raise DifferentiationError(
                f"cannot differentiate through {op.name}: dy2st has no adjoint rule for it "
                f"(operands {', '.join(str(v.type) for v in op.operands)})",
                op.loc,
                note="docs/autodiff.md lists the operations gradients flow through",
            )
        for operand, cotangent, want in zip(op.operands, rule(e, op, cotangents), wanted):
            if want and cotangent is not None:
                _accumulate(e, adjoints, operand, cotangent)

    # --- cond ------------------------------------------------------------------------------
    def cond(self, e: Emitter, op: Op, adjoints: dict[Value, Value]) -> None:
        """A ``cond`` on the forward predicate whose branches yield the cotangents of the active
        values from outside that either branch read."""
        free = [v for v in _free_values(op) if v in self.active]
        if not free:
            return
        cotangents = [adjoints.get(r) for r in op.results]
        regions = [Region(self._branch_adjoint(e, region.block, cotangents, free)) for region in op.regions]
        types = [v.type.strong() for v in free]
        backward = e.append(COND, [op.operands[0]], regions=regions, result_types=types).results
        for value, cotangent in zip(free, backward):
            _accumulate(e, adjoints, value, cotangent)

    def _branch_adjoint(self, e: Emitter, branch: Block, cotangents: list[Value | None], free: list[Value]) -> Block:
        _refuse_values_made_by_effects(branch)
        block = Block()
        inner = e.into(block)
        mapping: dict[Value, Value] = {}
        clone_ops(branch.ops[:-1], block, mapping)
        self._copy_activity(mapping)
        local: dict[Value, Value] = {}
        for result, cotangent in zip(branch.ops[-1].operands, cotangents):
            value = mapping.get(result, result)
            if cotangent is not None and value in self.active:
                _accumulate(inner, local, value, cotangent)
        self.ops(inner, block.ops[:], local)
        outs = [local[v] if v in local else zeros(inner, v) for v in free]
        block.append(Op(YIELD, outs, [], loc=e.loc))
        return block

    # --- while_loop ------------------------------------------------------------------------
    def loop(self, e: Emitter, op: Op, adjoints: dict[Value, Value]) -> None:
        """Record what the forward loop's iterations leave for their adjoints on a tape, then run
        the iterations' adjoints in reverse order: a counted loop's tape is stacked arrays, any
        other loop's a list."""
        body = op.regions[1].block
        carried = [k for k, r in enumerate(op.results) if r in self.active or body.args[k] in self.active]
        free = [v for v in _free_values(op) if v in self.active and v not in op.operands]
        if not carried and not free:
            return
        start_cotangents = [adjoints.get(op.results[k]) or zeros(e, op.results[k]) for k in carried]
        start_sums = [zeros(e, v) for v in free]
        counted = counted_loop(op)
        results = None
        if counted is not None:
            results = self._stacked_loop(e, op, counted, carried, free, start_cotangents, start_sums)
        if results is None:
            results = self._list_loop(e, op, carried, free, start_cotangents, start_sums)
        for k, cotangent in zip(carried, results):
            if op.operands[k] in self.active:
                _accumulate(e, adjoints, op.operands[k], cotangent)
        for v, total in zip(free, results[len(carried) :]):
            _accumulate(e, adjoints, v, total)

    def _list_loop(
        self,
        e: Emitter,
        op: Op,
        carried: list[int],
        free: list[Value],
        start_cotangents: list[Value],
        start_sums: list[Value],
    ) -> list[Value]:
        """The backward loop over a list tape: it pops an iteration's values while any are left.
        Returns the cotangents of the carried values ``carried`` and the sums for ``free``."""
        arg_types = [TAPE_TYPE, *(v.type for v in start_cotangents), *(v.type for v in start_sums)]
        check = Block(arg_types)
        check.append(Op(YIELD, [Emitter(check, e.loc).op(TAPE_NONEMPTY, check.args[0])], [], loc=e.loc))
        step, mapping, clones = self._iteration_adjoint(e, op, carried, free, arg_types)
        if self.checkpoint:
            saved = list(op.regions[1].block.args)  # the iteration is recomputed from the values it started from
        else:
            saved = _save_instead_of_recomputing(step, clones, mapping)
        tape = _record_iterations(op, saved, at_start=self.checkpoint)
        backward = e.append(
            WHILE_LOOP,
            [tape, *start_cotangents, *start_sums],
            regions=[Region(check), Region(step)],
            result_types=arg_types,
        )
        return backward.results[1:]

    def _stacked_loop(
        self,
        e: Emitter,
        op: Op,
        counted: CountedLoop,
        carried: list[int],
        free: list[Value],
        start_cotangents: list[Value],
        start_sums: list[Value],
    ) -> list[Value] | None:
        """The backward loop of a counted loop over a stacked tape (``stacked.py``): a counted
        loop whose iteration ``k`` runs the adjoint of forward iteration ``rows - 1 - k``. None
        (and the forward loop unchanged) where a saved value cannot be a row of an array."""
        counter_type = op.regions[1].block.args[counted.counter].type
        arg_types = [counter_type, *(v.type for v in start_cotangents), *(v.type for v in start_sums)]
        step, mapping, clones = self._iteration_adjoint(e, op, carried, free, arg_types)
        placeholder = step.ops[0]
        counter = placeholder.results[1 + counted.counter]
        if self.checkpoint:
            saved, live = [v for v in placeholder.results[1:] if v is not counter], clones
        else:
            saved, live = _rows_to_save(step, clones, mapping, counter)
        if not can_stack(saved):
            return None
        original_of = {copy: original for original, copy in mapping.items()}
        tape = record_rows(op, counted, [original_of[v] for v in saved])

        last = python_int_difference(e, tape.count, 1)
        check = Block(arg_types)
        check.append(Op(YIELD, [python_less(Emitter(check, e.loc), check.args[0], tape.count)], [], loc=e.loc))
        front = Emitter(Block(), e.loc)
        row = python_int_difference(front, last, step.args[0])
        renamed = dict(zip(saved, read_rows(front, tape, row, [v.type for v in saved])))
        renamed[counter] = python_int_sum(front, row, counted.start) if counted.start else row
        assert all(old.type == new.type for old, new in renamed.items()), "a saved value read back as another type"
        step.set_ops([*front.block.ops, *(op for op in step.ops[1:] if op not in clones or op in live)])
        replace_uses(step, renamed)
        finish = step.ops.pop()
        finish = step.append(
            Op(YIELD, [python_int_sum(e.into(step), step.args[0], 1), *finish.operands[1:]], [], loc=e.loc)
        )
        # Checkpointing keeps the least memory: its weight cotangents stay sums in the loop.
        factors = FactorRows(e, step, row, tape.count, counted.rows)
        deferred = [] if self.checkpoint else outer_product_sums(step, 1 + len(carried))
        deferred = [outer for outer in deferred if factors.affordable(outer)]
        blocked = BlockedSums.plan(factors, deferred)
        if blocked is not None:
            factors.initial.append(blocked.ring())
            blocked.write(finish)
            deferred = []
        for outer in deferred:
            finish.operands[outer.position] = step.args[outer.position]  # the sum passes through
            factors.plan(outer.left)
            factors.plan(outer.right)
        factors.write(finish)
        for array in factors.initial:
            check.add_arg(array.type, "saved")
        backward = e.append(
            WHILE_LOOP,
            [0, *start_cotangents, *start_sums, *factors.initial],
            regions=[Region(check), Region(step)],
            result_types=[a.type for a in step.args],
        )
        results = list(backward.results)
        for outer in deferred:
            left = factors.rows_of(e, outer.left, backward.results)
            right = factors.rows_of(e, outer.right, backward.results)
            # The sum starts from zeros (``start_sums``) and the loop passes it through unchanged,
            # so it is the matrix product alone (and the loop no longer needs to carry it).
            results[outer.position] = sum_of_outer_products(e, left, right)
        return results[1 : len(arg_types)]

    def _iteration_adjoint(
        self, e: Emitter, op: Op, carried: list[int], free: list[Value], arg_types: list[TensorType]
    ) -> tuple[Block, dict[Value, Value], set[Op]]:
        """The body of a backward loop, over ``arg_types`` (the tape or the counter, then the
        cotangents of the values ``carried``, then the sums for ``free``): a placeholder
        ``tape_pop`` giving the values the forward iteration started from, copies of the forward
        body's ops (returned, with the mapping from forward values to their copies) and their
        adjoint. Its yield passes its first argument on, then the cotangents of the values the
        iteration started from and the sums."""
        body = op.regions[1].block
        starts, body_ops, ends = list(body.args), body.ops[:-1], list(body.ops[-1].operands)
        step = Block(arg_types)
        inner = e.into(step)
        start_types = [a.type for a in starts]
        pop = inner.append(
            TAPE_POP,
            [step.args[0]],
            {"saved": tuple(start_types)},
            result_types=[TAPE_TYPE, *start_types],
        )
        mapping: dict[Value, Value] = dict(zip(starts, pop.results[1:]))
        clone_ops(body_ops, step, mapping)
        clones = set(step.ops[1:])
        self._copy_activity(mapping)
        local: dict[Value, Value] = {}
        for k, cotangent in zip(carried, step.args[1 : 1 + len(carried)]):
            value = mapping.get(ends[k], ends[k])
            if value in self.active:
                _accumulate(inner, local, value, cotangent)
        self.ops(inner, step.ops[1:], local)
        next_cotangents = [_or_zeros(inner, local, pop.results[1 + k]) for k in carried]
        next_sums = [
            total if v not in local else _sum(inner, total, local[v])
            for v, total in zip(free, step.args[1 + len(carried) :])
        ]
        step.append(Op(YIELD, [pop.results[0], *next_cotangents, *next_sums], [], loc=e.loc))
        return step, mapping, clones

    def _copy_activity(self, mapping: dict[Value, Value]) -> None:
        self.active.update(copy for original, copy in mapping.items() if original in self.active)


def _sum(e: Emitter, a: Value, b: Value) -> Value:
    total = add(e, a, b)
    assert total is not None
    return total


def _refuse_values_made_by_effects(branch: Block) -> None:
    """A branch's adjoint recomputes the branch's forward values. An op with an effect that makes
    values (a random draw) would run again there and make other ones: the backward pass would
    take other paths than the forward one (a gradient of 0 where it is 1) and leave the
    generator's state where eager code does not. Refused until such values are saved instead."""
    for op in branch.ops:
        for inner in op.walk():
            if get_op(inner.name).side_effect and inner.results:
                raise DifferentiationError(
                    f"cannot differentiate through a branch of an `if` that calls {inner.name}: the "
                    "gradient would run it again and get other values than the function did",
                    inner.loc,
                    note="draw the random numbers before the `if` (in the loop body, outside the `if`)",
                )


def _or_zeros(e: Emitter, adjoints: dict[Value, Value], value: Value) -> Value:
    cotangent = adjoints.get(value)
    return fit_to(e, cotangent, value.type) if cotangent is not None else zeros(e, value)


def _save_instead_of_recomputing(step: Block, clones: set[Op], mapping: dict[Value, Value]) -> list[Value]:
    """Rewrite the backward iteration ``step`` (a tape pop of the values the iteration started
    from, copies of the forward body's ops, then the adjoint code) so that the adjoint reads the
    forward values it needs from the tape instead of recomputing them; return the forward values
    (block arguments and results of the forward body) the forward loop must push, in pop order.

    A copy stays only where its result has no forward original to save (the tape of a nested
    loop recorded for its own adjoint): it is then recomputed, and what it reads is saved."""
    pop = step.ops[0]
    original_of = {copy: original for original, copy in mapping.items()}
    starts = set(pop.results[1:])
    top_level = {r for op in clones for r in op.results}
    kept: list[Op] = [op for op in step.ops[1:] if op not in clones]
    live_clones: set[Op] = set()
    saved: dict[Value, None] = {}
    pending = [v for op in kept for v in _operands_within(op)]
    while pending:
        value = pending.pop()
        if value in original_of and (value in starts or value in top_level):
            saved.setdefault(value)  # the forward loop computed it: read it from the tape
        elif value in top_level and value.owner not in live_clones:
            live_clones.add(value.owner)  # no forward value to read (a nested loop's tape): recompute
            pending.extend(_operands_within(value.owner))
    new_pop = Op(
        TAPE_POP,
        [step.args[0]],
        [TAPE_TYPE, *(v.type for v in saved)],
        {"saved": tuple(v.type for v in saved)},
        loc=pop.loc,
    )
    renamed = dict(zip(saved, new_pop.results[1:]))
    renamed[pop.results[0]] = new_pop.results[0]
    step.set_ops([new_pop, *(op for op in step.ops[1:] if op not in clones or op in live_clones)])
    replace_uses(step, renamed)
    return [original_of[v] for v in saved]


def _rows_to_save(
    step: Block, clones: set[Op], mapping: dict[Value, Value], counter: Value
) -> tuple[list[Value], set[Op]]:
    """For a stacked tape: the copies in the backward iteration ``step`` (as
    ``_save_instead_of_recomputing`` builds it) whose forward values the forward loop must save,
    and the copies of forward ops the iteration runs again: those whose result has no forward
    value (a nested loop's tape) and those whose result is cheap to compute again from the
    counter ``counter`` (whose copy the backward loop computes) and values from before the loop."""
    pop = step.ops[0]
    original_of = {copy: original for original, copy in mapping.items()}
    starts = set(pop.results[1:])
    top_level = {r for op in clones for r in op.results}
    live: set[Op] = set()
    saved: dict[Value, None] = {}
    pending = [v for op in step.ops[1:] if op not in clones for v in _operands_within(op)]
    while pending:
        value = pending.pop()
        if value is counter or (value in top_level and value.owner in live):
            continue
        if value in top_level and (value not in original_of or recomputable(value, counter, starts, top_level)):
            live.add(value.owner)
            pending.extend(_operands_within(value.owner))
        elif value in starts or value in top_level:
            saved.setdefault(value)
    return list(saved), live


def _operands_within(op: Op) -> list[Value]:
    """What ``op`` reads: its operands and the outside values its regions read."""
    return [*op.operands, *_free_values(op)]


def _record_iterations(op: Op, saved: list[Value], at_start: bool) -> Value:
    """Make the forward loop ``op`` push ``saved`` (values of its body) onto a new tape it
    carries, at the start of each iteration or at its end; return the tape the loop ends with."""
    block = op.parent
    assert block is not None
    start = Op(TAPE_NEW, [], [TAPE_TYPE], {"tape": next(_tape_numbers)}, loc=op.loc)
    start.parent = block
    block.ops.insert(block.ops.index(op), start)
    check, body = (region.block for region in op.regions)
    check.add_arg(TAPE_TYPE, "tape")
    tape_in = body.add_arg(TAPE_TYPE, "tape")
    push = Op(TAPE_PUSH, [tape_in, *saved], [TAPE_TYPE], loc=op.loc)
    push.parent = body
    body.ops.insert(0 if at_start else len(body.ops) - 1, push)
    body.ops[-1].operands.append(push.result)
    op.operands.append(start.result)
    tape_out = Value(TAPE_TYPE, "tape", op, len(op.results))
    op.results.append(tape_out)
    return tape_out
