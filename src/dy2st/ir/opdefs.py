"""Op definitions: for each opcode, one shape/dtype rule, one NumPy kernel, and its traits.

An op is registered once with an ``OpDef``. The graph builder calls ``infer`` to give every result a
static type; the NumPy backend calls ``kernel`` (with the op's attributes as keyword arguments);
passes read the traits (``elementwise`` for fusion, ``side_effect`` for dead code elimination,
``view`` for memory planning and output copies) instead of comparing op names.

The definitions themselves live in ``dy2st.ops`` (one NumPy family per module); this module is the
table they register into, at the bottom of the layers so that the IR, passes and backends can read
it without importing the ops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dy2st.ir.core import Op, kernel_attrs
from dy2st.ir.opcodes import IN_PLACE_UPDATE
from dy2st.ir.symbolic import DataDependentSize, infer_size_obliviously, is_data_dependent
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
        region_kernel: the op's computation is its region (a fused group): a backend builds one
            kernel per op instance from the region instead of calling ``kernel``.

    Traits that passes and backends read instead of comparing op names:
        structural: part of the IR's structure, run by the backend itself, no kernel
            (``const``, ``cond``, ``while_loop``, ``yield``, ``return``).
        control_flow: owns regions the backend runs as structured control flow (cond, while_loop).
        terminator: ends a block (``yield``, ``return``).
        commutative: a binary op whose two operands may be swapped (CSE).
        reduction: reduces its operand over ``axis`` (sum, mean, max, ...).
        row_reduction: for a reduction a fused region may end with, the NumPy function that
            reduces each row of a tile into ``out=`` (None: it cannot join a fused group).
        uninitialized: the result's contents are not determined by the operands and attributes
            (``np.empty``): never computed at build time.
        right_identity: ``x op right_identity`` is ``x`` (``x * 1``, ``x - 0``): simplification.
        left_identity: ``left_identity op x`` is ``x`` (``1 * x``, ``0 + x``).
        involution: applying the op twice gives the operand back (``-(-x)``).
        select: ``op(condition, x, y)`` picks each element of ``x`` where ``condition`` holds and of
            ``y`` elsewhere, cast to the result dtype, with no arithmetic (``np.where``). Such an
            elementwise op may join a fused group although it has no ufunc: the fused kernel
            fills its tile from ``y`` and copies ``x`` over it where ``condition`` holds
            (``np.copyto(..., where=)``), so it may write over ``y``'s buffer, never over the
            other operands' (they are read after the tile is first written).
        index_operands: the position from which the operands are tensor indices (indexing
            ops): with any, the op may raise at run time although its types are valid.
        in_bounds: for indexing ops, ``in_bounds(operand_types, **attrs)`` says whether the
            static indices (ints, concrete index arrays) fit the indexed shape; where they do
            not, the op is still typed (as if they did) and raises IndexError when it runs, as
            eager NumPy does on the path that reaches it (see ``may_raise``).
        out_kernel: ``out_kernel(*operands, out=buffer, **attrs)`` writes the result into a
            preallocated buffer and returns it (None: no ``out=`` form; a ufunc's is the ufunc).
        in_place_safe: the ``out=`` form may write over an operand of the same shape (it reads
            each element before writing it).
        returns_fresh: the kernel always returns a new array, never a view or an operand.
        broadcast_operands: positions of operands the op only broadcasts to a shape set by the
            others (``setitem``'s value), as an elementwise op does with all of its operands.
        c_ordered_result: the kernel's result is C-ordered whatever the memory order of its
            operands (matmul); other ops' results may follow their operands' order.
        updates_operand: for a functional update, the position of the operand whose updated
            copy the result is (``setitem``'s ``x`` in "``x`` with ``x[index] = value``").
        accumulates: the update adds to its operand (``c + a @ b``) instead of replacing part of
            it: applying it twice is not applying it once, as it is for a store.
        in_place_kernel: ``in_place_kernel(*operands, **attrs)`` makes that update in the
            operand's own buffer and returns it. The ``in-place-updates`` pass chooses it (the
            ``in_place_update`` attribute) where nothing reads the operand's old value later.
        kernel_factory: ``kernel_factory(**attrs)`` returns the kernel of one op instance, made
            for its attributes (the generic NumPy call binds its function and arguments once
            instead of at every call); the code generator prefers it to ``kernel``.
        raises_when_run: the op may raise when it runs, whatever its operand types (NumPy called
            by the generic layer: ``np.linalg.inv`` of a singular matrix): never removed when
            unused, never moved out of a loop (``may_raise``).
        views_any_operand: the result may be a view of any operand (the generic NumPy call:
            ``np.flip(x)``): alias analysis follows it to every operand, as the memory planner
            does for ops not known to return fresh arrays.
        updated_region: for an update that stores its value operand (position 1) into part of
            the updated operand, ``updated_region(operand_types, **attrs)`` gives the type of
            that part when the backend can name it as a view of the operand (``A[i, 1:-1]``:
            basic indexing by ints and slices), else None. The ``update-destinations`` pass then
            computes the value straight into that view.
        vjp: the op's adjoint rule for reverse-mode differentiation (``dy2st.autodiff``):
            ``vjp(emitter, op, cotangents)`` is given an ``ir.emit.Emitter`` appending to the
            backward code, the forward op and one cotangent per result (None where it is zero),
            and returns one cotangent per operand (None: zero, or the operand carries no
            gradient). A cotangent may have the result's broadcast shape or dtype: the caller
            sums it over broadcast axes and casts it to the operand's type. None: the op has no
            adjoint rule, and differentiating through it is an error naming it.
        onnx: the op's ONNX form (``dy2st.export_onnx``): ``onnx(writer, op)`` is given a
            ``deploy.onnx_export.OnnxWriter`` and returns the ONNX names of the op's results,
            in the results' dtypes. None: the op does not export (an error naming it).
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
    region_kernel: bool = False
    structural: bool = False
    control_flow: bool = False
    terminator: bool = False
    commutative: bool = False
    reduction: bool = False
    row_reduction: Callable[..., Any] | None = None
    index_operands: int | None = None
    in_bounds: Callable[..., bool] | None = None
    uninitialized: bool = False
    right_identity: float | None = None
    left_identity: float | None = None
    involution: bool = False
    select: bool = False
    out_kernel: Callable[..., Any] | None = None
    in_place_safe: bool = False
    returns_fresh: bool = False
    broadcast_operands: tuple[int, ...] = ()
    c_ordered_result: bool = False
    updates_operand: int | None = None
    accumulates: bool = False
    in_place_kernel: Callable[..., Any] | None = None
    updated_region: Callable[..., TensorType | None] | None = None
    views_any_operand: bool = False
    kernel_factory: Callable[..., Callable[..., Any]] | None = None
    raises_when_run: bool = False
    vjp: Callable[..., list[Any]] | None = None
    onnx: Callable[..., list[str]] | None = None


OPS: dict[str, OpDef] = {}

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


def may_raise(name: str, operand_types: list[TensorType], attrs: dict[str, Any], operand_count: int) -> bool:
    """Can op ``name`` raise when it runs although its types are valid (indexing with tensor
    indices, or with static indices out of bounds; a shape rule that met data-dependent sizes and
    left NumPy to check them, ``x[m] + y[n]``; NumPy called by the generic layer)? Such an op must
    run where eager code would: dead code elimination keeps it, loop-invariant code motion leaves
    it in the loop."""
    opdef = get_op(name)
    if opdef.raises_when_run:
        return True
    if opdef.ufunc in PYTHON_DIVISIONS and operand_types and all(t.weak for t in operand_types):
        return True  # Python's operator on the eager code's numbers: ``k // 0`` raises ZeroDivisionError
    if _checked_when_run(opdef, operand_types, attrs):
        return True
    if opdef.index_operands is None:
        return False
    if operand_count > opdef.index_operands:
        return True
    return opdef.in_bounds is not None and not opdef.in_bounds(operand_types, **attrs)


def op_may_raise(op: Op) -> bool:
    """``may_raise`` of an op in a graph, from its operand types and its kernel's attributes."""
    return may_raise(op.name, [v.type for v in op.operands], kernel_attrs(op), len(op.operands))


# Ufuncs whose Python operator raises on the eager code's Python numbers (division by zero,
# ``0 ** -1``), where NumPy's ufunc gives a value.
PYTHON_DIVISIONS = frozenset({np.floor_divide, np.remainder, np.true_divide, np.divmod, np.power})


def _checked_when_run(opdef: OpDef, operand_types: list[TensorType], attrs: dict[str, Any]) -> bool:
    """Did the op's shape rule need a decision about data-dependent sizes, which NumPy then makes
    when the op runs (possibly raising, as eager code would)?"""
    if not any(is_data_dependent(d) for t in operand_types for d in t.shape):
        return False
    try:
        opdef.infer(operand_types, **attrs)
    except DataDependentSize:
        return True
    except Exception:  # the rule's own complaint: the op was typed and built another way
        return True
    return False


def overwritten_operand(op: Op) -> int | None:
    """The operand ``op`` writes its result into when the ``in-place-updates`` pass chose to run
    it in place (the result is then that operand's buffer), else None."""
    index = op.attrs.get(IN_PLACE_UPDATE)
    return index if isinstance(index, int) and not isinstance(index, bool) else None


def in_place_results(op: Op) -> dict[int, int]:
    """Result index -> the operand whose buffer the ``in-place-updates`` pass chose to write that
    result into (the result is then that buffer): ``{0: I}`` for an op marked
    ``in_place_update=I``; a fused group, whose results may each go into one of its operands, is
    marked with one entry per result, the operand or None (``in_place_update=(4, None)``)."""
    marked = op.attrs.get(IN_PLACE_UPDATE)
    if isinstance(marked, tuple):
        return {result: operand for result, operand in enumerate(marked) if operand is not None}
    overwritten = overwritten_operand(op)
    return {} if overwritten is None else {0: overwritten}


def reads_element(op: Op) -> bool:
    """An indexing op reading its array (``x[index]``: an element, a view or a gather)."""
    opdef = get_op(op.name)
    return opdef.index_operands == 1 and opdef.updates_operand is None


def stores_element(op: Op) -> bool:
    """An update storing its value operand into its array (``x[index] = value``)."""
    opdef = get_op(op.name)
    return opdef.index_operands == 2 and opdef.updates_operand == 0


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}") from None


def infer_types(opdef: OpDef, types: list[TensorType], attrs: dict[str, Any]) -> TensorType | list[TensorType]:
    """The op's result type(s) by its rule; a rule that meets an undecidable decision about a
    data-dependent size runs again size-obliviously (``symbolic.infer_size_obliviously``)."""
    try:
        return opdef.infer(types, **attrs)
    except DataDependentSize:
        return infer_size_obliviously(lambda: opdef.infer(types, **attrs))
