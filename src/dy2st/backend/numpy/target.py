"""The NumPy backend's answers to the memory planner (``passes.memory_plan.MemoryTarget``)."""

from __future__ import annotations

from dy2st.ir.core import CONST, Op
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import has_symbolic
from dy2st.passes.memory_plan import MemoryTarget

# Fused groups whose arrays are all this small run as separate NumPy calls: the tiled kernel's
# per-call setup (about 5 us) costs more than the cache traffic it saves. Unfused NumPy gives
# bit-identical results by the fusion contract.
SMALL_FUSED_BYTES = 16 * 1024


def runs_unfused(op: Op) -> bool:
    """Does the backend run this fused op's region op by op instead of as one tiled kernel?"""
    if not get_op(op.name).region_kernel or not op.regions:
        return False
    block = op.regions[0].block
    fresh = {
        r for inner in block.ops[:-1] if inner.name != CONST and not get_op(inner.name).view for r in inner.results
    }
    if not all(v in fresh for v in block.ops[-1].operands):
        return False  # a yielded argument, constant or view could alias an input
    values = (*op.operands, *op.results)
    if any(has_symbolic(v.type.shape) for v in values):
        return False  # sizes known only at run time: the tiled kernel handles any size
    return max(v.type.nbytes for v in values) <= SMALL_FUSED_BYTES


class NumpyTarget(MemoryTarget):
    """Op definitions' traits, except that small fused groups run op by op (no ``out=`` form)."""

    def runs_unfused(self, op: Op) -> bool:
        return runs_unfused(op)


NUMPY_TARGET = NumpyTarget()
