"""Emitting typed ops into a block outside the tracer: what graph transformations (the backward
graph of ``dy2st.autodiff``) and the adjoint rules on op definitions build with.

Each op is typed by its definition's rule, as the tracer types the ops it stages; Python numbers
given as operands become weak constants, as they do in traced code (``x * 2.0``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dy2st.errors import SourceLocation
from dy2st.ir.core import CONST, Block, Op, Region, Value
from dy2st.ir.opdefs import get_op, infer_types
from dy2st.ir.types import TensorType, type_of_array, type_of_python_scalar

Operand = Value | bool | int | float | np.ndarray | np.generic


class Emitter:
    """Appends ops to ``block``, each with the source location ``loc`` (the forward op's, so an
    error in backward code names the user's line that produced it).

    Attributes:
        block: the block ops are appended to.
        loc: the location given to every op emitted.
    """

    def __init__(self, block: Block, loc: SourceLocation | None = None):
        self.block = block
        self.loc = loc

    def at(self, loc: SourceLocation | None) -> Emitter:
        """An emitter into the same block giving its ops ``loc``."""
        return Emitter(self.block, loc)

    def into(self, block: Block) -> Emitter:
        """An emitter into ``block`` with the same location."""
        return Emitter(block, self.loc)

    def op(self, name: str, *operands: Operand, **attrs: Any) -> Value:
        """Append op ``name`` over ``operands`` and return its single result."""
        return self.append(name, list(operands), attrs).result

    def append(
        self,
        name: str,
        operands: Sequence[Operand],
        attrs: dict[str, Any] | None = None,
        regions: list[Region] | None = None,
        result_types: list[TensorType] | None = None,
    ) -> Op:
        """Append op ``name``; its result types are inferred unless given."""
        values = [self.value(v) for v in operands]
        attrs = attrs or {}
        if result_types is None:
            inferred = infer_types(get_op(name), [v.type for v in values], attrs)
            result_types = list(inferred) if isinstance(inferred, (list, tuple)) else [inferred]
        return self.block.append(Op(name, values, result_types, attrs, regions, self.loc))

    def const(self, value: bool | int | float | np.ndarray | np.generic) -> Value:
        """A constant: a weak Python number, or a NumPy scalar or array by value."""
        if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
            value_type = type_of_python_scalar(value)
        else:
            value_type = type_of_array(np.asarray(value))
        return self.append(CONST, [], {"value": value}, result_types=[value_type]).result

    def value(self, operand: Operand) -> Value:
        """``operand`` as a value of the graph: itself, or a constant."""
        return operand if isinstance(operand, Value) else self.const(operand)
