"""Variables a tensor loop or a tensor ``if`` assigns on some paths only: checked at run time
where they are used.

Eager Python raises ``UnboundLocalError`` when a variable first assigned in a loop body is used
after a loop that ran zero times, or one assigned in one branch of an ``if`` is used after the
other branch ran. A tensor loop's trip count and a tensor ``if``'s branch are only known when the
graph runs, so the staged op carries, next to such a variable, a 0-d bool "assigned" flag (False
before the loop or in the branch that does not assign it, True where it is assigned; a loop whose
body assigns it conditionally carries the branch's flag). The variable's value afterwards is the
op's result (zeros on the paths that did not assign it) with an ``AssignedGuard`` attached; every
later *use* of it (``ir.tensor.as_value``) emits a ``check_assigned`` op at the user's line, which
raises ``UnassignedVariableError`` when the graph runs and the flag is False::

    y = while_loop ...                      # y first assigned in the body
    check_assigned %y_assigned  {name: 'y', reason: 'the loop at line 4 ran zero times'}
    %0 = multiply %y, 2.0

A use on a path the graph does not take (a branch of a ``cond``) checks nothing, as in Python,
because the check sits in that branch's region. One check per block suffices: later uses in the
same block, or in regions nested in it, are covered by the first.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import numpy as np

from dy2st.errors import user_location
from dy2st.ir.core import Block
from dy2st.ops.checks import CHECK_ASSIGNED, UnassignedVariableError  # noqa: F401  (raised by the op)
from dy2st.runtime.control_flow.undefined import Undefined
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.tensor import Tensor


def assigned_flag_label(name: str) -> str:
    """The loop-state name of the flag of ``name`` (not an identifier: it never clashes)."""
    return f"{name} assigned"


NOT_ASSIGNED = np.False_
ASSIGNED = np.True_


class AssignedGuard:
    """Attached to the value a tensor loop gives a variable it may never have assigned.

    Attributes:
        flag: the op's 0-d bool result telling whether the path taken assigned the variable.
        name: the variable; reason: why it may be unassigned ("the loop at line 4 ran zero times").
    """

    __slots__ = ("flag", "name", "reason", "_checked_blocks")

    def __init__(self, flag: Tensor, name: str, reason: str):
        self.flag = flag
        self.name = name
        self.reason = reason
        self._checked_blocks: list[Block] = []

    def in_scope(self, builder: GraphBuilder) -> bool:
        """Can the current block read the flag? Not when the guarded array object was carried out
        of the region that defined the flag by an in-place update there (which read it, and so was
        checked, inside that region): the guard is then stale and nothing is left to check."""
        owner = self.flag._value.owner
        defining_block = owner if isinstance(owner, Block) else getattr(owner, "parent", None)
        return _is_open(builder, defining_block)

    def check(self, builder: GraphBuilder) -> None:
        """Emit the run-time check for a use of the variable in the current block (once per block)."""
        if any(_is_open(builder, checked) for checked in self._checked_blocks) or not self.in_scope(builder):
            return
        self._checked_blocks.append(builder.block)
        loc = user_location()
        attrs: dict[str, Any] = {"name": self.name, "reason": self.reason, "loc": loc}
        if _is_graph_output():
            attrs["returned"] = True  # the function has returned: loc is the line that called it
        builder.emit(CHECK_ASSIGNED, [self.flag._value], attrs, loc=loc, result_types=[])


_STAGING_FILE = os.path.join("runtime", "staging.py")


def _is_graph_output() -> bool:
    """Is the use the staging of the function's return value (after the function returned)?"""
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(8):  # as_value <- _output_value <- trace, a few frames up
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "_output_value" and code.co_filename.endswith(_STAGING_FILE):
            return True
        frame = frame.f_back
    return False


def _is_open(builder: GraphBuilder, block: Block | None) -> bool:
    """Is ``block`` the current block or one the current block is nested in? (The builder's stack
    of open blocks: a region being traced has no parent op yet, so parent links cannot tell.)"""
    return any(open_block is block for open_block in builder.blocks)


def assigned_flag(value: Any, builder: GraphBuilder) -> Any:
    """Whether ``value`` (a variable's value on some path) is assigned: ``NOT_ASSIGNED`` for an
    undefined variable, the flag of the guard on it (a tensor that may be unassigned), or None
    for a value that is simply assigned."""
    if isinstance(value, Undefined):
        return NOT_ASSIGNED
    leaves = value if isinstance(value, (tuple, list)) else value.values() if isinstance(value, dict) else [value]
    for leaf in leaves:
        if isinstance(leaf, Tensor) and leaf._guard is not None and leaf._guard.in_scope(builder):
            return leaf._guard.flag
        if isinstance(leaf, (tuple, list, dict)):
            flag = assigned_flag(leaf, builder)
            if flag is not None:
                return flag
    return None


def guard_leaves(value: Any, guard: AssignedGuard) -> None:
    """Attach ``guard`` to every tensor in ``value`` (an array, or a tuple/list/dict of them)."""
    if isinstance(value, Tensor):
        value._guard = guard
    elif isinstance(value, (tuple, list)):
        for item in value:
            guard_leaves(item, guard)
    elif isinstance(value, dict):
        for item in value.values():
            guard_leaves(item, guard)
