"""GraphBuilder: records ops into blocks while the converted function runs on symbolic tensors."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import operator
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from dy2st.errors import GraphBuildError, SourceLocation, build_error, user_frame, user_location
from dy2st.ir.core import CONST, ERRSTATE_ATTR, RETURN, Block, Graph, Op, Region, Value, kernel_attrs
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, DIM
from dy2st.ir.opdefs import UFUNC_OPS, get_op, infer_types
from dy2st.ir.symbolic import Symbol, SymExpr, data_dependent_size, size_needed
from dy2st.ir.types import TensorType, type_of_array, type_of_python_scalar

_state = threading.local()

# Delimits a formatted tensor's placeholder in a string (an ASCII control character that
# formatted numbers never contain).
FORMAT_MARK = "\x1d"


@dataclasses.dataclass(frozen=True)
class Decision:
    """A Python decision taken on a tensor while tracing (``if x.sum() > 0:``, ``int(n)``): the
    value decided on, how it was turned into a Python value, what that value was, and where."""

    value: Value
    kind: str
    decided: Any
    loc: SourceLocation | None


def _item(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


DECISION_KINDS: dict[str, Callable[[Any], Any]] = {
    "bool": bool,
    "int": int,
    "float": float,
    "complex": complex,
    "index": operator.index,
    "item": _item,
    "len": len,
}
"""How each kind of decision turns a concrete value into the Python value it decides on."""


def current_builder() -> GraphBuilder | None:
    """The builder of the graph being staged on this thread, if any."""
    builders = getattr(_state, "builders", None)
    return builders[-1] if builders else None


class RotatedArray(NamedTuple):
    """A variable naming one of several array objects, which one known only when the graph runs
    (``GraphBuilder.rotated_arrays``)."""

    tensor: Any  # the variable's tensor
    counter: Value  # the 0-d int choosing the object
    named: tuple[Any, ...]  # the object for each value of ``counter``
    # Called after an in-place update of ``tensor``: gives the chosen object its new contents.
    updated: Callable[[Any], None]
    what: str  # what errors say about the variable


class GraphBuilder:
    """Builds one ``Graph``. Use as a context manager to make it the current builder.

    Attributes:
        graph: the graph under construction.
        captures: for each capture (body arg after the inputs), where it is read from.
        mutation_logs: a stack of logs; each records (tensor, previous value) for every in-place
            update, so control-flow staging can undo a branch's updates and carry them out.
    """

    def __init__(self, name: str):
        self.graph = Graph(name, Block(), 0)
        self.blocks: list[Block] = [self.graph.body]
        self.captures: list[Any] = []
        self.capture_tensors: dict[tuple, Any] = {}
        # The tensors standing for arrays the caller holds (arguments and captures), by id.
        self.caller_arrays: dict[int, Any] = {}
        # Tensors standing in for another array object, by id: a tensor loop's copy of a carried
        # variable, which is the array from before the loop in the first iteration. Each entry
        # holds a weak reference to the stand-in (ids of dead tensors are reused) and the array.
        self.stand_ins: dict[int, tuple[Any, Any]] = {}
        # Tensors naming one of several array objects, which one known only when the graph runs:
        # a variable a tensor loop rotated through buffers (``a, b = b, a``), by the tensor's id
        # (``runtime/control_flow/rotations.py``).
        self.rotated_arrays: dict[int, RotatedArray] = {}
        self.guards: list[tuple[Any, Any]] = []
        self.mutation_logs: list[list[tuple[Any, Value]]] = []
        # The ``np.errstate`` settings of the user's open ``with np.errstate(...)`` blocks,
        # outermost first: every op emitted inside records their union (``ERRSTATE_ATTR``).
        self.errstates: list[dict[str, str]] = []
        # Tensors formatted into strings (f"{t:.2f}"): the string holds a placeholder naming the
        # entry, and print turns it back into the tensor, formatted when the graph runs.
        self.formatted: list[tuple[Any, str]] = []
        # For each symbolic size of the arguments, an input and axis that has it (``size_value``).
        self.symbol_places: dict[Symbol, tuple[Value, int]] = {}
        # For each data-dependent size, the values and axes that have it, in the order emitted
        # (``size_value`` reads one visible where the size is used).
        self.data_dependent_places: dict[Symbol, list[tuple[Value, int]]] = {}
        # The sizes ``size_value`` computed, by the value holding them: ``np.zeros(len(t))``
        # of a data-dependent ``len`` gets its shape back from the value.
        self.size_of_value: dict[Value, SymExpr] = {}
        self.true_counts: dict[Value, SymExpr] = {}
        self.slice_sizes: dict[Any, SymExpr] = {}
        # Has a 0-d NumPy scalar been carried in a wider dtype's slot (``widened_keeping_kind``)?
        # Only then may a kind flag hold a dtype's own kind code (``numpy_kind_code``).
        self.narrow_kinds = False
        # The data-dependent sizes of loop-carried values whose size changes (``loops``).
        self.loop_sizes: set[Symbol] = set()
        # Tracing mode (``dy2st.trace``): the concrete value of every value emitted so far,
        # computed from the call's real arguments as each op is emitted, and the Python decisions
        # taken on tensors (``decide``), each a guard the graph checks when it runs.
        self.concrete: dict[Value, Any] | None = None
        self.decisions: list[Decision] = []

    # --- context -------------------------------------------------------------------------
    def __enter__(self) -> GraphBuilder:
        if not hasattr(_state, "builders"):
            _state.builders = []
        _state.builders.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _state.builders.pop()

    @property
    def block(self) -> Block:
        return self.blocks[-1]

    @contextlib.contextmanager
    def in_block(self, block: Block) -> Iterator[Block]:
        """Emit into ``block`` (a region's block) for the duration of the ``with``."""
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    # --- graph signature -----------------------------------------------------------------
    def add_input(self, type: TensorType, name: str, concrete: Any = None) -> Value:
        """A placeholder; inputs must all be added before the first capture. ``concrete``: the
        call's argument there, which tracing mode computes with."""
        assert not self.captures, "inputs come before captures"
        self.graph.num_inputs += 1
        value = self.graph.body.add_arg(type, name)
        if self.concrete is not None:
            self.concrete[value] = concrete
        return value

    def add_capture(self, type: TensorType, name: str, source: Any) -> Value:
        self.captures.append(source)
        return self.graph.body.add_arg(type, name)

    def capture_tensor(self, array: np.ndarray, source: Any):
        """The symbolic tensor standing for a global/closure array (one per source)."""
        from dy2st.staging.tensor import Tensor  # the tracer's own recursion: tensor.py imports this module

        key = source.key()
        tensor = self.capture_tensors.get(key)
        if tensor is None:
            value = self.add_capture(type_of_array(array), source.name, source)
            tensor = self.capture_tensors[key] = Tensor(value, self)
            self.caller_arrays[id(tensor)] = tensor
        return tensor

    def can_see(self, value: Value) -> bool:
        """Can an op emitted now use ``value``: is it defined in the block being emitted into
        or in one enclosing it (not in a finished branch or loop body, or a scratch block)?"""
        owner = value.owner
        block = owner if isinstance(owner, Block) else owner.parent
        return any(open_block is block for open_block in self.blocks)

    def size_value(self, size: SymExpr, loc: SourceLocation | None = None) -> Value:
        """A symbolic size used as a number: a weakly typed int computed when the graph runs from
        the sizes of the argument axes its symbols stand for (``dim`` ops)."""
        total: Value | None = None
        for monomial, coefficient in size.terms:
            term: Value | None = None if coefficient == 1 or not monomial else self.const(coefficient, loc)
            for symbol in monomial:
                place = self.symbol_places.get(symbol) or self._visible_place(symbol)
                if place is None:
                    raise size_needed(frozenset({symbol}), f"the size {size} used as a number")
                factor = self.emit(DIM, [place[0]], {"axis": place[1]}, loc=loc).results[0]
                term = factor if term is None else self._python_int_operator(np.multiply, term, factor, loc)
            if term is None:
                term = self.const(coefficient, loc)
            total = term if total is None else self._python_int_operator(np.add, total, term, loc)
        assert total is not None
        self.size_of_value[total] = size
        return total

    def true_count(self, mask: Value) -> SymExpr:
        """The data-dependent number of true elements of a boolean ``mask`` (one per mask)."""
        count = self.true_counts.get(mask)
        if count is None:
            count = self.true_counts[mask] = data_dependent_size()
        return count

    def shared_slice_size(self, key: Any) -> SymExpr:
        """The data-dependent length of every slice whose bounds and axis size have ``key``
        (``ops.indexing.slice_bounds_key``): one per key."""
        size = self.slice_sizes.get(key)
        if size is None:
            size = self.slice_sizes[key] = data_dependent_size()
        return size

    def retype(self, value: Value, shape: tuple[Any, ...]) -> None:
        """Give ``value`` a shape its op's rule could not know (data-dependent sizes it shares
        with other values, ``true_count``); the rank stays."""
        assert len(shape) == len(value.type.shape), "a retyped value keeps its rank"
        value.type = dataclasses.replace(value.type, shape=shape)
        self.place_data_dependent_sizes([value])

    def _visible_place(self, symbol: Symbol) -> tuple[Value, int] | None:
        """A value with the data-dependent size ``symbol`` that an op emitted now can read."""
        for value, axis in self.data_dependent_places.get(symbol, ()):
            if self.can_see(value):
                return value, axis
        return None

    def _python_int_operator(self, ufunc: np.ufunc, a: Value, b: Value, loc: SourceLocation | None) -> Value:
        """``a + b`` or ``a * b`` of Python ints, as Python computes it (unbounded: a size times
        ``2**64`` does not wrap): the result turned back into a Python number at once is what the
        NumPy backend runs as Python's own operator."""
        result = self.emit(UFUNC_OPS[ufunc], [a, b], loc=loc).results[0]
        return self.emit(AS_PYTHON_NUMBER, [result], loc=loc).results[0]

    # --- emitting ops ----------------------------------------------------------------------
    def emit(
        self,
        name: str,
        operands: list[Value],
        attrs: dict[str, Any] | None = None,
        regions: list[Region] | None = None,
        loc: SourceLocation | None = None,
        result_types: list[TensorType] | None = None,
    ) -> Op:
        """Append an op to the current block; infer its result types unless given."""
        attrs = attrs or {}
        self.name_values_from(user_frame(1))
        if loc is None:
            loc = user_location(2)
        if result_types is None:
            result_types = self.infer(name, [v.type for v in operands], attrs, loc)
        if self.errstates:
            attrs = {**attrs, ERRSTATE_ATTR: self.current_errstate()}
        op = Op(name, operands, result_types, attrs, regions, loc)
        self.block.append(op)
        self.place_data_dependent_sizes(op.results)
        if self.concrete is not None:
            self.evaluate(op)
        return op

    # --- tracing mode ------------------------------------------------------------------------
    def evaluate(self, op: Op) -> None:
        """Compute ``op``'s results from its operands' concrete values (tracing mode)."""
        assert self.concrete is not None
        opdef = get_op(op.name)
        if op.name == CONST:
            self.concrete[op.results[0]] = op.attrs["value"]
            return
        if opdef.side_effect:
            return  # print and assert run when the graph runs, not while it is traced
        if opdef.control_flow or (opdef.kernel is None and opdef.kernel_factory is None):
            raise GraphBuildError(
                f"{op.name} inside a traced function: dy2st.trace records Python control flow as it runs; "
                "use dy2st.to_static for dy2st.cond and dy2st.while_loop",
                op.loc,
            )
        operands = []
        for v in op.operands:
            if v not in self.concrete:
                raise GraphBuildError(f"{op.name}: an operand without a value while tracing", op.loc)
            value = self.concrete[v]
            # A generator drawn from while tracing is a copy: the graph draws from the real one.
            operands.append(copy.deepcopy(value) if v.type.dtype == np.dtype(object) else value)
        attrs = kernel_attrs(op)
        kernel = opdef.kernel_factory(**attrs) if opdef.kernel_factory is not None else opdef.kernel
        assert kernel is not None
        with np.errstate(all="ignore"):
            result = kernel(*operands) if opdef.kernel_factory is not None else kernel(*operands, **attrs)
        if len(op.results) == 1:
            self.concrete[op.results[0]] = result
        else:
            self.concrete.update(zip(op.results, result))

    def decide(self, value: Value, kind: str, loc: SourceLocation | None) -> Any:
        """The Python value (``bool``, ``int``, ``float``, ``complex``, ``index``, ``item``) of a
        traced tensor's concrete value, recorded as a decision the graph checks when it runs."""
        assert self.concrete is not None
        if value not in self.concrete:
            raise GraphBuildError("a tensor without a value while tracing", loc)
        concrete = self.concrete[value]
        decided = DECISION_KINDS[kind](concrete)
        self.decisions.append(Decision(value, kind, decided, loc))
        return decided

    def place_data_dependent_sizes(self, values: list[Value]) -> None:
        """Record where each new data-dependent size can be read when the graph runs: the first
        value (in the block being emitted into) with that size as one of its dimensions."""
        for value in values:
            for axis, size in enumerate(value.type.shape):
                if isinstance(size, SymExpr) and size.data_dependent and len(size.terms) == 1:
                    ((monomial, coefficient),) = size.terms
                    if coefficient == 1 and len(monomial) == 1:
                        self.data_dependent_places.setdefault(monomial[0], []).append((value, axis))

    def format_placeholder(self, tensor: Any, spec: str) -> str:
        """The text standing for ``format(tensor, spec)`` until print resolves it."""
        self.formatted.append((tensor, spec))
        return f"{FORMAT_MARK}{len(self.formatted) - 1}{FORMAT_MARK}"

    def formatted_pieces(self, text: str, tensors: list[Any]) -> tuple:
        """``text`` split at the placeholders of formatted tensors (``format_placeholder``):
        literal text, and for each tensor its format spec in a one-item tuple (the tensor is
        appended to ``tensors``): the ``pieces`` of an ``ops.structural.Formatted``."""
        pieces: list[Any] = []
        for k, part in enumerate(text.split(FORMAT_MARK)):
            if k % 2 == 0:
                if part:
                    pieces.append(part)
                continue
            tensor, spec = self.formatted[int(part)]
            tensors.append(tensor)
            pieces.append((spec,))
        return tuple(pieces)

    def current_errstate(self) -> tuple[tuple[str, str], ...]:
        """The settings of the open ``np.errstate`` blocks, inner ones overriding outer ones."""
        merged: dict[str, str] = {}
        for settings in self.errstates:
            merged.update(settings)
        return tuple(sorted(merged.items()))

    def name_values_from(self, frame) -> None:
        """Name unnamed op results after the user's local variables now bound to them.

        Called before each op is emitted, so ``y = W @ x`` names the matmul ``%y`` once the
        assignment has happened; the printer adds SSA suffixes when a name is rebound.
        """
        if frame is None:
            return
        from dy2st.staging.tensor import Tensor  # the tracer's own recursion: tensor.py imports this module

        for name, value in frame.f_locals.items():
            if isinstance(value, Tensor) and value._builder is self:
                v = value._own  # not ``_value``: naming must not re-derive a view (emit ops)
                if v.name_hint is None and isinstance(v.owner, Op):
                    v.name_hint = name

    @staticmethod
    def infer(name: str, types: list[TensorType], attrs: dict[str, Any], loc) -> list[TensorType]:
        opdef = get_op(name)
        try:
            result = infer_types(opdef, types, attrs)
        except (ValueError, TypeError, IndexError) as e:
            operand_text = ", ".join(str(t) for t in types)
            raise build_error(e, f"{name}({operand_text}): {e}", loc) from None
        return list(result) if isinstance(result, (list, tuple)) else [result]

    def const(self, value: Any, loc: SourceLocation | None = None) -> Value:
        """A literal constant: a weak Python scalar or a concrete NumPy array/scalar."""
        # np.float64 and np.complex128 subclass float/complex but are strong NumPy scalars.
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            value_type = type_of_python_scalar(value)
        elif isinstance(value, np.generic):  # kept a NumPy scalar: returned, it is what eager returns
            value_type = type_of_array(value)
        elif isinstance(value, np.ndarray):
            value_type = type_of_array(value)
        else:
            raise TypeError(f"not a constant: {type(value).__name__}")
        return self.emit(CONST, [], {"value": value}, loc=loc or user_location(2), result_types=[value_type]).result

    # --- in-place updates ------------------------------------------------------------------
    def log_mutation(self, tensor: Any, previous: Value) -> None:
        if self.mutation_logs:
            self.mutation_logs[-1].append((tensor, previous))

    @contextlib.contextmanager
    def recording_mutations(self) -> Iterator[list[tuple[Any, Value]]]:
        """Collect every in-place update made inside the ``with`` (nested logs see their own)."""
        log: list[tuple[Any, Value]] = []
        self.mutation_logs.append(log)
        try:
            yield log
        finally:
            self.mutation_logs.pop()
            if self.mutation_logs:
                self.mutation_logs[-1].extend(log)

    def finish(self, outputs: list[Value], loc: SourceLocation | None = None, attrs: dict | None = None) -> Graph:
        self.graph.body.append(Op(RETURN, outputs, [], attrs, loc=loc))
        return self.graph
