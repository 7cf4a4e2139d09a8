"""``Undefined``: the value of a variable that is not bound on every path reaching a point.

Converted code binds a variable that a branch or loop may define, but that has no value yet, to
``Undefined('y')`` (Python needs a binding for ``nonlocal``). The sentinel behaves like the unbound
variable it stands for: any use raises an error naming the variable and the user's line, while
code that never uses it (a temporary assigned in one branch only) runs fine.
"""

from __future__ import annotations

from dy2st.errors import GraphBuildError, user_location

_NOTE = "assign it on every path (both branches of the if, or before the loop) before using it"


class Undefined:
    """A variable that is not defined on this path. Every use raises ``GraphBuildError``."""

    __slots__ = ("name",)
    unbound_variable = True  # how ir.tensor.as_value recognises it without importing the runtime

    def __init__(self, name: str):
        object.__setattr__(self, "name", name)

    def __repr__(self) -> str:
        return f"<dy2st.Undefined {self.name!r}>"

    def error(self) -> GraphBuildError:
        # user_location skips dy2st's frames: it finds the user's line whatever called us.
        return GraphBuildError(
            f"'{self.name}' is used here but is not defined on every path that reaches this line",
            user_location(2),
            _NOTE,
        )

    def _fail(self, *args, **kwargs):
        raise self.error()

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self.error()

    def __setattr__(self, attr: str, value) -> None:
        raise self.error()

    # NumPy would otherwise treat the sentinel as an object scalar; fail at the user's line.
    __array_ufunc__ = _fail
    __array_function__ = _fail
    __array__ = _fail


for _dunder in (
    "bool len iter call getitem setitem delitem contains neg pos abs invert index int float complex "
    "lt le gt ge add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow "
    "matmul rmatmul and rand or ror xor rxor lshift rlshift rshift rrshift "
    "iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift"
).split():
    setattr(Undefined, f"__{_dunder}__", Undefined._fail)


def is_undefined(value) -> bool:
    return isinstance(value, Undefined)
