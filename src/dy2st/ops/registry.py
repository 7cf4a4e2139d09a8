"""The op registry: for each opcode, one shape/dtype rule, one NumPy kernel, and flags.

An op is registered once with an ``OpDef``. The graph builder calls ``infer`` to give every result a
static type; the NumPy backend calls ``kernel`` (with the op's attributes as keyword arguments);
passes read the flags (``elementwise`` for fusion, ``side_effect`` for dead code elimination,
``view`` for memory planning and output copies).

NumPy entry points (ufuncs, functions reached through ``__array_function__``, ndarray methods) are
mapped to *handlers*: Python functions that take the user's arguments and emit ops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dy2st.ir.types import TensorType

InferFn = Callable[..., "TensorType | list[TensorType]"]


@dataclass
class OpDef:
    """Everything dy2st knows about one opcode.

    Attributes:
        name: the opcode, as printed in the IR.
        infer: ``infer(operand_types, **attrs)`` returns the result type (or a list of types).
            It raises ``ValueError``/``TypeError`` with a user-facing message when the operands
            do not fit, exactly where NumPy would raise.
        kernel: ``kernel(*arrays, **attrs)`` computes the result with NumPy. None for structural
            ops the backend handles itself (``cond``, ``while_loop``, ``yield``, ``const``...).
        elementwise: the op maps broadcast inputs to outputs element by element (fusable).
        ufunc: the NumPy ufunc behind an elementwise op, when there is one (accepts ``out=``).
        side_effect: never removed by dead code elimination, never merged by CSE (print, assert).
        view: the NumPy kernel may return a view of its first operand (reshape, transpose, indexing).
        num_results: how many results the op has (``-1``: decided by ``infer``).
        extra: optional hooks; ``kernel_factory(op) -> callable`` builds the kernel of an op
            instance whose behaviour depends on its region (fused ops).
    """

    name: str
    infer: InferFn
    kernel: Callable[..., Any] | None = None
    elementwise: bool = False
    ufunc: np.ufunc | None = None
    side_effect: bool = False
    view: bool = False
    num_results: int = 1
    doc: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


OPS: dict[str, OpDef] = {}

# NumPy callables (functions reached through __array_function__ or called directly on tensors
# through convert_call) -> handler(*args, **kwargs) that emits ops and returns Tensors.
FUNCTION_HANDLERS: dict[Any, Callable[..., Any]] = {}

# ndarray method and property names -> handler(tensor, *args, **kwargs).
METHOD_HANDLERS: dict[str, Callable[..., Any]] = {}
PROPERTY_HANDLERS: dict[str, Callable[..., Any]] = {}

# NumPy functions that create arrays without array arguments (np.zeros, np.arange, ...): inside a
# converted function, convert_call swaps them for these staged versions.
CREATION_HANDLERS: dict[Any, Callable[..., Any]] = {}

# ufunc -> opcode, for __array_ufunc__.
UFUNC_OPS: dict[np.ufunc, str] = {}


def register(opdef: OpDef) -> OpDef:
    """Add an op to the registry; a second registration of one name is a bug."""
    if opdef.name in OPS:
        raise KeyError(f"op {opdef.name!r} registered twice")
    OPS[opdef.name] = opdef
    if opdef.ufunc is not None:
        UFUNC_OPS.setdefault(opdef.ufunc, opdef.name)
    return opdef


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def handles(*numpy_functions: Any) -> Callable:
    """Decorator: register ``fn`` as the handler of these NumPy functions."""

    def decorate(fn: Callable) -> Callable:
        for f in numpy_functions:
            FUNCTION_HANDLERS[f] = fn
        return fn

    return decorate


def method(*names: str) -> Callable:
    """Decorator: register ``fn(tensor, ...)`` as the handler of these ndarray methods."""

    def decorate(fn: Callable) -> Callable:
        for n in names:
            METHOD_HANDLERS[n] = fn
        return fn

    return decorate


def prop(*names: str) -> Callable:
    """Decorator: register ``fn(tensor)`` as the handler of these ndarray properties."""

    def decorate(fn: Callable) -> Callable:
        for n in names:
            PROPERTY_HANDLERS[n] = fn
        return fn

    return decorate
