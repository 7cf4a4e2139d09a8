"""The default pass pipeline, in order, with the reason for each position."""

from __future__ import annotations

import os

from dy2st.ir.core import Graph
from dy2st.passes.base import Pass, PassManager
from dy2st.passes.cse import CommonSubexpressionElimination
from dy2st.passes.dce import DeadCodeElimination
from dy2st.passes.fold import ConstantFolding
from dy2st.passes.fuse import FuseElementwise
from dy2st.passes.in_place import InPlaceUpdates
from dy2st.passes.licm import LoopInvariantCodeMotion
from dy2st.passes.memory_plan import MemoryPlan, MemoryTarget
from dy2st.passes.simplify import AlgebraicSimplification
from dy2st.passes.update_destinations import UpdateDestinations

DEFAULT_PIPELINE: tuple[type[Pass], ...] = (
    # First, so that the identities it removes (x*1, astype to the same dtype, reshape of a
    # reshape) expose constants to folding and duplicates to CSE.
    AlgebraicSimplification,
    # After simplify; folds literal constants and inlines `cond` on a constant predicate, which
    # can hand simplify's leftovers to CSE.
    ConstantFolding,
    # After fold, so equal folded constants merge too; before LICM, so one copy of a repeated
    # invariant expression is hoisted, not two.
    CommonSubexpressionElimination,
    # Before DCE: hoisting leaves nothing dead, but DCE then sees the final loop bodies.
    LoopInvariantCodeMotion,
    # Last of the cleanups: removes what the passes above left unused (the inner op of a
    # collapsed transpose pair, replaced ops' operands, dead loop-carried values).
    DeadCodeElimination,
    # Lowering passes (fusion, memory planning) go below: they want the cleaned-up graph.
    # Fusion sees the final elementwise ops (simplify already turned x**k into multiplications);
    # memory planning then plans the fused ops' outputs like any other out= op.
    FuseElementwise,
    # After every rewrite that moves or merges reads (CSE, LICM, fusion): whether an update may
    # overwrite its operand depends on where the operand is read last. Before memory planning,
    # which treats an update run in place as a view of its operand.
    InPlaceUpdates,
    # After the in-place decisions it builds on (only an update that runs in the array's own
    # buffer can have its value computed there); before memory planning, which then gives the
    # op that computes it no buffer.
    UpdateDestinations,
    # Memory planning is always the very last: it reads the final schedule, and any rewrite after
    # it could invalidate the liveness its buffer assignment relies on.
    MemoryPlan,
)
"""Pass classes of the default pipeline, in the order they run. A second round of the cleanups
changed nothing on any graph of the pass tests (tests/passes), so each runs once."""

CLEANUP_PIPELINE: tuple[type[Pass], ...] = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index(DeadCodeElimination) + 1]
"""The passes that change what a graph computes, not how a backend runs it (the ones before
fusion): a saved graph has been through these (dy2st.save), and the rest run when it is loaded."""

PASSES_BY_NAME: dict[str, type[Pass]] = {cls.name: cls for cls in DEFAULT_PIPELINE}
"""Every known pass by its CLI spelling (``dy2st dump --after NAME`` validates against it)."""


def default_passes(target: MemoryTarget | None = None) -> list[Pass]:
    """A fresh list of the default pipeline's passes; ``target`` is what the backend that will run
    the graph tells the memory planner (the op definitions' traits when None)."""
    return [
        cls(target) if cls in (InPlaceUpdates, UpdateDestinations, MemoryPlan) else cls() for cls in DEFAULT_PIPELINE
    ]


# Tests set DY2ST_VERIFY=1 so the verifier runs after every pass of every graph they build.
VERIFY_EVERY_PASS = os.environ.get("DY2ST_VERIFY", "") == "1"


def optimize(
    graph: Graph, passes: list[Pass] | None = None, after_each=None, target: MemoryTarget | None = None
) -> Graph:
    """Run ``passes`` (the default pipeline when None) on ``graph`` in place and return it.

    Args:
        graph: the graph to optimize; it is rewritten in place.
        passes: the passes to run, in order; None means ``default_passes(target)``.
        target: the backend's answers to the memory planner (see ``default_passes``).
        after_each: called as ``after_each(pass_name, graph, changed)`` after every pass.

    Returns:
        ``graph``.
    """
    manager = PassManager(
        default_passes(target) if passes is None else passes, verify=VERIFY_EVERY_PASS, after_each=after_each
    )
    return manager.run(graph)
