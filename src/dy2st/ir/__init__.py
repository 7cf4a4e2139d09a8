"""The SSA graph IR: core data structures, builder, symbolic tensor, printer and verifier."""

from dy2st.ir.core import Block, Graph, Op, Region, Value
from dy2st.ir.types import TensorType

__all__ = ["Block", "Graph", "Op", "Region", "TensorType", "Value"]
