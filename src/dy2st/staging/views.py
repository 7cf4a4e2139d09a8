"""Exact views: arrays NumPy always makes as views of another array, followed as NumPy does.

``row = x[0]``, ``u = U[1:-1, 1:-1]``, ``x.T`` and ``np.broadcast_to(x, s)`` share memory with
their parent in eager NumPy, whatever its layout: a later update of the parent shows in the view,
and an update of the view changes the parent. An ``OpView`` recipe lets a ``Tensor`` reproduce
that: the view's contents are the view op applied to the parent's current contents (emitted again
after each update of the parent), and an update of the view becomes an update of the parent
through the op's inverse (``x[i] = v`` for indexing, the inverse transpose for ``x.T``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dy2st.errors import build_error, user_location
from dy2st.ir.core import Value
from dy2st.staging.tensor import Tensor, apply

# write_back(parent, new, index tensors, the view op's attributes) -> the parent's contents with
# the view holding ``new``.
WriteBack = Callable[[Tensor, Tensor, list[Tensor], dict[str, Any]], Tensor]


@dataclass(frozen=True, eq=False)
class OpView:
    """A view made by one op on its parent (the op's first operand).

    Attributes:
        op: the view op (``getitem``, ``transpose``, ...).
        attrs: its attributes.
        index_values: the SSA values of its other operands (index tensors), taken when the view
            was made: an index tensor updated later must not move the view, as in NumPy.
        write_back: how an update of the view becomes one of the parent; None for views NumPy
            makes read-only (``broadcast_to``, ``diagonal``).
    """

    op: str
    attrs: dict[str, Any] = field(default_factory=dict)
    index_values: tuple[Value, ...] = ()
    write_back_fn: WriteBack | None = None

    def _index_tensors(self, parent: Tensor) -> list[Tensor]:
        return [Tensor(value, parent._builder) for value in self.index_values]

    def derive(self, parent: Tensor) -> Tensor:
        return apply(self.op, parent, *self._index_tensors(parent), **self.attrs)

    def write_back(self, parent: Tensor, new: Tensor, what: str) -> Tensor:
        if self.write_back_fn is None:
            error = ValueError("assignment destination is read-only")
            message = f"{what}: {error} (np.{self.op} gives a read-only view)"
            raise build_error(error, message, user_location(), "take a copy first (v = v.copy())")
        return self.write_back_fn(parent, new, self._index_tensors(parent), self.attrs)


def make_view(result: Tensor, parent: Tensor, recipe: OpView) -> Tensor:
    """Mark ``result``, just computed by ``recipe``'s op from ``parent``, as an exact view of it."""
    result._make_view_of(parent, recipe)
    return result
