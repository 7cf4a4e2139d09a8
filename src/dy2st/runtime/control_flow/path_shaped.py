"""Values whose shape depends on which branch of a tensor ``if`` ran, used where only
broadcasting sees it.

``a - (x if c else 0.1)`` and ``scale = s if c else 1.0; y = x * scale`` are ordinary NumPy: the
branches give an array and a number, and the arithmetic afterwards broadcasts either to one
shape. A graph value has one shape, so the ``cond`` yields both branches broadcast to their common
shape (``np.broadcast_to(0.1, x.shape)``). That value equals each path's wherever it is broadcast
again, so it is exact in elementwise ops and assignments into arrays, provided the result's dtype
is the same on every path and the number is exactly representable in the array's dtype. Anything
that could see the shape (returning the value, ``.shape``, ``len``, a reduction, indexing,
printing, carrying it through a loop) raises the branches' mismatch error at that use.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, SourceLocation, user_location
from dy2st.ir.core import Block, Value
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import broadcast_shapes
from dy2st.ir.types import TensorType
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.tensor import Tensor


class PathShapedTensor(Tensor):
    """A cond result holding each branch's value broadcast to their common shape.

    Attributes:
        _alternatives: the value's type on each path (the branches', or derived from them).
        _mismatch: the error that the branches' types differ, raised where the shape is seen.
        _if_loc: the ``if`` the paths come from.
    """

    __slots__ = ("_alternatives", "_mismatch", "_if_loc")

    def __init__(
        self,
        value: Value,
        builder: GraphBuilder,
        alternatives: tuple[TensorType, ...],
        mismatch: GraphBuildError,
        if_loc: SourceLocation | None,
    ):
        super().__init__(value, builder)
        self._alternatives = alternatives
        self._mismatch = mismatch
        self._if_loc = if_loc

    def shape_observed(self, how: str) -> GraphBuildError:
        """The branches' mismatch, raised at the user's line that would see the shape."""
        line = f"line {self._if_loc.lineno}" if self._if_loc is not None else "a tensor 'if'"
        return GraphBuildError(
            self._mismatch.message,
            user_location(),
            f"the value's shape depends on which branch of the 'if' at {line} ran; dy2st can use it "
            f"only where broadcasting hides that (elementwise arithmetic, assignment into an array), "
            f"but here it is {how}. Give both branches one shape (np.full_like(x, 0.1))",
        )

    # --- what would show the shape --------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        raise self.shape_observed("asked for its shape")

    @shape.setter
    def shape(self, new_shape) -> None:
        raise self.shape_observed("given a new shape")

    @property
    def ndim(self) -> int:
        raise self.shape_observed("asked for its number of dimensions")

    @property
    def size(self) -> int:
        raise self.shape_observed("asked for its size")

    @property
    def nbytes(self) -> int:
        raise self.shape_observed("asked for its size")

    def __len__(self) -> int:
        raise self.shape_observed("asked for its length")

    def __iter__(self):
        raise self.shape_observed("iterated over")

    # --- ops on it --------------------------------------------------------------------------------
    def result_alternatives(self, name: str, operands, values: list[Value], attrs: dict[str, Any]):
        """For op ``name`` on ``operands`` (some path-shaped): None if its result types are the
        same on every path, else each result's type per path. Raises where the op could see the
        shape or the result's dtype depends on the path."""
        opdef = get_op(name)
        choices: list[tuple[TensorType, ...]] = []
        for position, (operand, value) in enumerate(zip(operands, values)):
            alternatives = operand._alternatives if isinstance(operand, Tensor) else None
            if alternatives is None:
                choices.append((value.type,))
            elif opdef.elementwise or position in opdef.broadcast_operands:
                choices.append(alternatives)
            else:
                raise operand.shape_observed(f"an operand of {name}")
        loc = user_location()
        per_path = [tuple(GraphBuilder.infer(name, list(types), attrs, loc)) for types in itertools.product(*choices)]
        if all(types == per_path[0] for types in per_path):
            return None
        union = GraphBuilder.infer(name, [v.type for v in values], attrs, loc)
        by_result = list(zip(*per_path))
        for types, union_type in zip(by_result, union):
            if any(t.dtype != union_type.dtype for t in types):
                raise self.shape_observed(f"combined by {name} into results of another dtype on each path")
        return by_result

    def with_path_types(self, value: Value, alternatives: tuple[TensorType, ...]) -> PathShapedTensor:
        """The result ``value`` of an elementwise op on this value: path-shaped in turn."""
        return PathShapedTensor(value, self._builder, alternatives, self._mismatch, self._if_loc)


def path_types(value: Any) -> tuple[TensorType, ...] | None:
    """The types ``value`` has on the paths that reach here: its alternatives if its shape
    already depends on a path, else its one static type (None for values other than arrays and
    numbers)."""
    if isinstance(value, Tensor):
        return value._alternatives if value._alternatives is not None else (value.type,)
    if isinstance(value, (np.ndarray, np.generic)):
        return (TensorType(np.shape(value), np.asarray(value).dtype),)
    if isinstance(value, (bool, int, float, complex)):
        return (TensorType((), np.asarray(value).dtype, weak=True),)
    return None


def common_type(values: list[Any]) -> TensorType | None:
    """The type every path's value fits without changing any element, when they differ in shape
    only by broadcasting: one dtype, or Python numbers exactly representable in the arrays'."""
    types = [path_types(value) for value in values]
    if any(t is None for t in types):
        return None
    alternatives = [t for group in types for t in group]  # type: ignore[union-attr]
    try:
        shape = broadcast_shapes(*(t.shape for t in alternatives))
    except ValueError:
        return None
    numbers = [v for v in values if isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic)]
    dtypes = {t.dtype for t in alternatives if not t.weak} or {t.dtype for t in alternatives}
    if len(dtypes) != 1:
        return None
    (dtype,) = dtypes
    if not all(_exactly_representable(number, dtype) for number in numbers):
        return None
    return TensorType(shape, dtype)


def _exactly_representable(number: Any, dtype: np.dtype) -> bool:
    if isinstance(number, bool) != (dtype == np.bool_):
        return False
    try:
        if np.result_type(dtype, number) != dtype:
            return False  # NumPy would promote: the path with the number has another dtype
        return bool(np.asarray(number, dtype=dtype).item() == number)
    except (OverflowError, TypeError, ValueError):
        return False


def broadcast_in_block(builder: GraphBuilder, value: Value, type: TensorType, block: Block) -> Value:
    """``value`` broadcast (and cast, exactly) to ``type`` by ops emitted in ``block``."""
    with builder.in_block(block):
        tensor: Any = Tensor(value, builder)
        # Broadcast first: a Python number is a Python float or int when the graph runs, and
        # becomes an array (which ``astype`` casts) only then.
        if value.type.shape != type.shape:
            tensor = np.broadcast_to(tensor, type.shape)  # type: ignore[arg-type]  # staged: symbolic sizes are fine
        if value.type.dtype != type.dtype:
            tensor = tensor.astype(type.dtype)
        return tensor._value
