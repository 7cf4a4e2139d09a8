"""Dead code elimination: drop ops whose results nobody uses, recursively and inside regions.

Before::

    %0 = multiply %x, 2.0 : f32[4]      # unused
    %1 = add %x, 1.0 : f32[4]
    %r, %i = while_loop (%x, %n) ...   # %r used, %i only counts iterations for itself
    return %1, %r

After: ``%0`` is gone, and ``%i`` leaves the loop when neither the loop condition, a side effect,
nor another carried value reads it.

Ops flagged ``side_effect`` (print, assert), and ops whose regions hold one, always stay. A ``cond``
loses the results nobody reads (from both yields), a ``while_loop`` the carried values nothing needs;
either op disappears once it has no results left and no side effects inside. Removing a loop
without side effects also removes a loop that might never end: we accept that, as C++ and LLVM do.
"""

from __future__ import annotations

from dy2st.ir.core import COND, TERMINATORS, WHILE_LOOP, Block, Graph, Op, Value, use_counts
from dy2st.ir.opdefs import get_op, op_may_raise
from dy2st.passes.base import Pass


class DeadCodeElimination(Pass):
    """Remove unused ops, unused ``cond`` results and unneeded ``while_loop`` carried values."""

    name = "dce"

    def run(self, graph: Graph) -> bool:
        return eliminate_dead_code(graph)


def eliminate_dead_code(graph: Graph) -> bool:
    """Sweep the graph until nothing more dies; return whether anything was removed."""
    changed = False
    # One reverse sweep removes whole chains; pruning a region can kill ops above it, so repeat.
    while _sweep_block(graph.body, use_counts(graph.body)):
        changed = True
    return changed


def has_side_effects(op: Op) -> bool:
    """True if ``op`` or any op nested in its regions must run for its effect (print, assert),
    or may raise where eager code would (indexing out of range: ``may_raise``)."""
    return any(get_op(inner.name).side_effect or op_may_raise(inner) for inner in op.walk())


def _sweep_block(block: Block, uses: dict[Value, int]) -> bool:
    """Remove dead ops of ``block`` (last to first), keeping ``uses`` up to date."""
    changed = False
    kept: list[Op] = []
    for op in reversed(block.ops):
        if op.name == COND:
            changed |= _prune_cond_results(op, uses)
        elif op.name == WHILE_LOOP:
            changed |= _prune_loop_carried(op, uses)
        for region in op.regions:
            changed |= _sweep_block(region.block, uses)
        if _is_dead(op, uses):
            _forget_uses(op, uses)
            changed = True
        else:
            kept.append(op)
    if changed:
        block.set_ops(kept[::-1])
    return changed


def _is_dead(op: Op, uses: dict[Value, int]) -> bool:
    if op.name in TERMINATORS or has_side_effects(op):
        return False
    return all(uses.get(r, 0) == 0 for r in op.results)


def _forget_uses(op: Op, uses: dict[Value, int]) -> None:
    """Decrement the use count of every operand of ``op`` and of the ops in its regions."""
    for inner in op.walk():
        for v in inner.operands:
            uses[v] -= 1


def _remove_operand_uses(values: list[Value], uses: dict[Value, int]) -> None:
    for v in values:
        uses[v] -= 1


def _keep_results(op: Op, keep: list[int]) -> None:
    op.results = [op.results[i] for i in keep]
    for i, r in enumerate(op.results):
        r.index = i


def _keep_args(block: Block, keep: list[int]) -> None:
    block.args = [block.args[i] for i in keep]
    for i, a in enumerate(block.args):
        a.index = i


def _keep_yielded(block: Block, keep: list[int], uses: dict[Value, int]) -> None:
    terminator = block.ops[-1]
    dropped = [v for i, v in enumerate(terminator.operands) if i not in keep]
    _remove_operand_uses(dropped, uses)
    terminator.operands = [terminator.operands[i] for i in keep]


def _prune_cond_results(op: Op, uses: dict[Value, int]) -> bool:
    """Drop ``cond`` results nobody reads from the op and from both regions' yields."""
    keep = [i for i, r in enumerate(op.results) if uses.get(r, 0) > 0]
    if len(keep) == len(op.results):
        return False
    for region in op.regions:
        _keep_yielded(region.block, keep, uses)
    _keep_results(op, keep)
    return True


def _prune_loop_carried(op: Op, uses: dict[Value, int]) -> bool:
    """Drop carried values of a ``while_loop`` that nothing needs.

    A carried value is needed when its result is read after the loop, when the condition region
    reads it, when a side effect in the body reads it, or when a needed carried value's next
    iteration is computed from it. Everything else is removed from the initial values, both
    regions' arguments, the body's yield and the results; the body ops that computed it become
    dead and the region sweep that follows removes them.
    """
    cond_block, body_block = op.regions[0].block, op.regions[1].block
    needed = {i for i, r in enumerate(op.results) if uses.get(r, 0) > 0}
    needed |= {i for i, a in enumerate(cond_block.args) if uses.get(a, 0) > 0}
    deps, effect_deps = _body_arg_dependencies(body_block)
    needed |= effect_deps
    yielded = body_block.ops[-1].operands
    frontier = list(needed)
    while frontier:
        for j in deps.get(yielded[frontier.pop()], ()):
            if j not in needed:
                needed.add(j)
                frontier.append(j)
    if len(needed) == len(op.operands):
        return False
    keep = sorted(needed)
    _remove_operand_uses([v for i, v in enumerate(op.operands) if i not in needed], uses)
    op.operands = [op.operands[i] for i in keep]
    _keep_args(cond_block, keep)
    _keep_args(body_block, keep)
    _keep_yielded(body_block, keep, uses)
    _keep_results(op, keep)
    return True


def _body_arg_dependencies(body: Block) -> tuple[dict[Value, frozenset[int]], set[int]]:
    """For each value of the loop body, the carried-value indices it is computed from.

    Also returns the indices that side-effecting ops read, which must stay carried. A ``cond``'s
    result depends on its predicate and on what each branch yields in its place (``if i != j:
    ax += ...`` carries ``ax`` and the Python-number kind of ``ax`` through one ``cond``: the
    kind, read by nothing after the loop, is not needed for ``ax``); another op with regions
    depends on everything its nested ops read.
    """
    deps: dict[Value, frozenset[int]] = {a: frozenset({i}) for i, a in enumerate(body.args)}
    effect_deps: set[int] = set()
    _collect_dependencies(body.ops[:-1], deps, effect_deps)
    return deps, effect_deps


def _collect_dependencies(ops: list[Op], deps: dict[Value, frozenset[int]], effect_deps: set[int]) -> bool:
    """Record the dependencies of the results of ``ops``; return whether one of them has a side
    effect (whose reads go to ``effect_deps``)."""
    effects = False
    for op in ops:
        if op.name == COND:
            effects |= _collect_cond_dependencies(op, deps, effect_deps)
            continue
        op_deps: set[int] = set()
        for inner in op.walk():
            for v in inner.operands:
                op_deps |= deps.get(v, frozenset())
        for r in op.results:
            deps[r] = frozenset(op_deps)
        if has_side_effects(op):
            effect_deps |= op_deps
            effects = True
    return effects


def _collect_cond_dependencies(op: Op, deps: dict[Value, frozenset[int]], effect_deps: set[int]) -> bool:
    """The dependencies of a ``cond``'s results, result by result; the side effects in its
    branches also depend on its predicate (it decides whether they happen)."""
    predicate = deps.get(op.operands[0], frozenset())
    inner_effects: set[int] = set()
    effects = False
    for region in op.regions:
        effects |= _collect_dependencies(region.block.ops[:-1], deps, inner_effects)
    if effects:
        effect_deps |= inner_effects | predicate
    for index, result in enumerate(op.results):
        found = set(predicate)
        for region in op.regions:
            found |= deps.get(region.block.ops[-1].operands[index], frozenset())
        deps[result] = frozenset(found)
    return effects
