"""Run-time checks staged by the runtime: ``check_assigned`` (a variable a tensor loop may never
have assigned is used after the loop)."""

from __future__ import annotations

from dy2st.errors import Dy2stRuntimeError, SourceLocation
from dy2st.ir.opdefs import OpDef, register

CHECK_ASSIGNED = "check_assigned"


class UnassignedVariableError(Dy2stRuntimeError, UnboundLocalError):
    """A variable that a tensor loop or a tensor ``if`` assigns on some paths only is used after
    the graph took a path that did not assign it."""


def _check_assigned_kernel(
    assigned, *, name: str, reason: str, loc: SourceLocation | None, returned: bool = False
) -> None:
    if not bool(assigned):
        use = f"the function returns '{name}', which" if returned else f"'{name}' is used here but"
        raise UnassignedVariableError(
            f"{use} was never assigned: {reason} (Python raises UnboundLocalError)",
            loc,
            "assign it before the loop or 'if' if some paths may not assign it",
        )


register(
    OpDef(
        CHECK_ASSIGNED,
        lambda types, **attrs: [],
        _check_assigned_kernel,
        side_effect=True,
        raises_when_run=True,
        num_results=0,
        doc="raise UnboundLocalError for a variable a tensor loop or if never assigned (flag False)",
    )
)
