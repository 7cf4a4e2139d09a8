"""Recursion while a graph is built: a converted function calling itself.

Recursion on Python values (``f(x, n - 1)`` with a Python int ``n``) runs while the graph is
built, one level per call, and stops where the eager recursion stops. Recursion that stops on a
tensor value cannot: the tensor ``if`` that would stop it traces both of its branches, so the
recursive call is traced again at every level, forever.

Every call of a converted function made while a graph is built is recorded with how deep in the
graph's regions it was made. A call of a function that is already running, made from inside a
tensor branch or loop that the running call opened, is recursion under a tensor condition. When
its input signature (the tensors' types, the Python values) is also that of the running call, it
would trace exactly what the running call traces: it can never end, and is refused at once. When
the signature keeps changing instead (an array that grows at every level), the recursion ends in
a ``RecursionError``, which is replaced by the same error at the first such call.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable
from typing import Any

from dy2st.errors import SourceLocation, UnsupportedSyntaxError, user_location
from dy2st.runtime.pytree import TreeDef, flatten
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.tensor import Tensor

_state = threading.local()


class _RunningCall:
    """A call of a converted function that has not returned yet."""

    __slots__ = ("function", "builder", "depth", "args", "kwargs", "_signature", "recursed_under_tensor_at")

    def __init__(self, function: Any, builder: GraphBuilder, args: tuple[Any, ...], kwargs: dict[str, Any]):
        self.function = function
        self.builder = builder
        self.depth = len(builder.blocks)  # how many regions (tensor branches, loop bodies) are open
        self.args = args
        self.kwargs = kwargs
        self._signature: tuple[TreeDef, tuple[Any, ...]] | None = None
        self.recursed_under_tensor_at: SourceLocation | None = None

    def signature(self) -> tuple[TreeDef, tuple[Any, ...]]:
        """The input signature: structure and Python values, and the type of each tensor."""
        if self._signature is None:
            self._signature = input_signature(self.args, self.kwargs)
        return self._signature


def input_signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[TreeDef, tuple[Any, ...]]:
    """What a call's tracing depends on: Python values (compared by value, objects by identity)
    and the types of the tensors. Two calls with one signature trace the same ops."""
    tensors: list[Any] = []
    structure = flatten((args, kwargs), tensors, lambda value: isinstance(value, Tensor))
    return structure, tuple(t.type for t in tensors)


def _running_calls() -> list[_RunningCall]:
    calls = getattr(_state, "calls", None)
    if calls is None:
        calls = _state.calls = []
    return calls


def watch_recursion(converted: Callable[..., Any], builder: GraphBuilder) -> Callable[..., Any]:
    """``converted`` (a converted user function, possibly bound as a method or by a partial) as
    called while ``builder`` builds a graph: refusing recursion that depends on a tensor value."""

    def call(*args: Any, **kwargs: Any) -> Any:
        running = _running_calls()
        identity, all_args, all_kwargs = _unbound(converted, args, kwargs)
        callers = [c for c in running if c.function is identity and c.builder is builder]
        this = _RunningCall(identity, builder, all_args, all_kwargs)
        under_tensor = [c for c in callers if this.depth > c.depth]
        if under_tensor:
            at = user_location()
            if any(c.signature() == this.signature() for c in under_tensor):
                raise recursion_error(identity, at)
            if callers[0].recursed_under_tensor_at is None:
                callers[0].recursed_under_tensor_at = at
        running.append(this)
        try:
            return converted(*args, **kwargs)
        except RecursionError:
            at = this.recursed_under_tensor_at
            if callers or at is None:
                raise
            raise recursion_error(identity, at) from None  # instead of thousands of traceback lines
        finally:
            running.pop()

    return call


def _unbound(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """The function behind a bound method or partial, and the arguments it is called with."""
    while True:
        if isinstance(function, types.MethodType):
            function, args = function.__func__, (function.__self__, *args)
        elif isinstance(function, functools.partial):
            function, args, kwargs = function.func, (*function.args, *args), {**function.keywords, **kwargs}
        else:
            return function, args, kwargs


def recursion_error(function: Any, at: SourceLocation | None) -> UnsupportedSyntaxError:
    name = getattr(function, "__qualname__", repr(function))
    return UnsupportedSyntaxError(
        f"{name} calls itself under a condition that depends on a tensor value, so the recursion never "
        "ends while the graph is built: a tensor 'if' traces both of its branches (a tensor loop its body) "
        "whatever the value, and so the recursive call again at every level",
        at,
        "write the recursion as a loop (while n > 0: x = x * 2; n = n - 1), which becomes a while_loop; "
        "recursion on Python values (a Python int n) works, it runs while the graph is built",
    )
