"""Generate one straight-line Python function per graph, so a call runs no interpreter loop.

The generated function takes the graph's inputs then captures as positional arguments and returns
a tuple of outputs. Each op becomes one line calling its NumPy kernel through a local name; ``cond``
becomes ``if/else``, ``while_loop`` becomes ``while True`` with a ``break``. A map from generated line
numbers to ops lets the executor name the user's op and line when a kernel raises.

Example, for ``np.maximum(x @ W1, 0) @ W2`` after memory planning (``m0`` is a buffer kept across
calls; ``p1`` is allocated at every call because it is handed back to the caller)::

    def run(a0, a1, a2):
        p1 = np_empty((512, 512), dt_float32)
        v0 = k_matmul(a0, a1, out=m0)
        v1 = k_maximum(v0, 0, out=m0)     # in place: v0 dies here
        v2 = k_matmul(v1, a2, out=p1)
        return (v2, )

Ops with a memory plan (``out_buffer`` attribute, see ``passes/memory_plan.py``) call their ``out=``
form; ``plan=False`` ignores the plan (used when a call arrives while another thread runs the planned
function, whose buffers are shared).
"""

from __future__ import annotations

import functools
import keyword
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from dy2st.backend.numpy.fused import build_fused_kernel
from dy2st.backend.numpy.kernels import out_kernel
from dy2st.backend.numpy.lowering import (
    COMPARISON_OPERATORS,
    FUNCTION_OPERATORS,
    defined_outside,
    holds_python_number,
    is_inline_literal,
    loop_comparison,
)
from dy2st.ir.core import ERRSTATE_ATTR, UPDATE_MAY_OVERLAP, WRITES_UPDATE, Block, Graph, Op, Value, kernel_attrs
from dy2st.ir.opcodes import (
    CALLER_ARRAY_FROM_OUTPUT,
    KIND_CODES,
    KIND_FROM_OUTPUT,
    NUMPY_SCALAR,
    RESULT_KINDS,
    RETURNS_CALLER_ARRAY,
    ZERO_D_ARRAY,
    numpy_kind_of_code,
)
from dy2st.ir.opdefs import get_op, in_place_results, overwritten_operand
from dy2st.ir.symbolic import SymExpr, symbols_in
from dy2st.ir.types import PYTHON_TYPE_OF_DTYPE_KIND
from dy2st.ops.creation import fills_with_zeros
from dy2st.ops.indexing import TENSOR_SLOT, share_elements
from dy2st.ops.python_numbers import python_power
from dy2st.passes.alias import may_alias_inputs
from dy2st.passes.memory_plan import planned_slots, schedule
from dy2st.passes.update_destinations import views_the_same_part


class GeneratedCode:
    """The source, namespace and line->op map of one generated function."""

    def __init__(
        self, source: str, namespace: dict[str, Any], line_ops: dict[int, Op], filename: str, persistent_bytes: int = 0
    ):
        self.source = source
        self.namespace = namespace
        self.line_ops = line_ops
        self.filename = filename
        # Bytes of buffers the function writes on every call: it must not run twice at once.
        self.persistent_bytes = persistent_bytes
        exec(compile(source, filename, "exec"), namespace)
        self.function = namespace["run"]


def as_numpy_scalar(value: Any) -> Any:
    """A 0-d result as the NumPy scalar eager code returns (ops may give a 0-d array)."""
    return value[()] if type(value) is np.ndarray else value


def as_zero_d_array(value: Any) -> Any:
    """A 0-d result as the 0-d array eager code returns (ops may give a NumPy scalar)."""
    return value if isinstance(value, np.ndarray) else np.array(value)


def _as_numpy_scalar_of_weak(value: Any) -> Any:
    """A value the graph carried as a Python number (its type was weak) as NumPy's scalar of it
    again: np.float64, np.int64, np.bool_."""
    return value if isinstance(value, np.generic) else np.asarray(value)[()]


def _as_new_zero_d_array(value: Any) -> Any:
    """A 0-d array of the caller's own."""
    return np.array(value, copy=True)


# The conversion of each kind code but the negative ones. A Python type converts exactly:
# ``int(np.int64(5))`` is ``np.int64(5).item()`` for every dtype a slot carries (a 0-d array
# converts alike), in a fifth of the time (30 against 160 ns).
_CONVERSION_OF_KIND: dict[int, Any] = {
    **{code: kind for kind, code in KIND_CODES.items() if isinstance(kind, type)},
    KIND_CODES[NUMPY_SCALAR]: _as_numpy_scalar_of_weak,
    KIND_CODES[ZERO_D_ARRAY]: _as_new_zero_d_array,
}


def as_path_kind(value: Any, kind: Any) -> Any:
    """A 0-d result as what eager code returned on the path taken (``kind``, a ``KIND_CODES``
    code computed by the graph): a Python bool/int/float/complex, a NumPy scalar or a new 0-d
    array."""
    if type(kind) is np.ndarray:  # a 0-d array: unhashable (a NumPy integer hashes as its int)
        kind = int(kind)
    convert = _CONVERSION_OF_KIND.get(kind)
    if convert is not None:
        return convert(value)
    of_dtype = numpy_kind_of_code(int(kind))
    assert of_dtype is not None, f"unknown kind code {kind}"
    # Carried in a wider slot: exact in the path's own dtype.
    dtype_name, scalar = of_dtype
    return np.asarray(value).astype(dtype_name)[()] if scalar else np.array(value, dtype=dtype_name)


def copy_output(value: Any) -> Any:
    """A returned array that may share memory with an argument or another output, copied (as a
    plain ndarray). A NumPy scalar is immutable and returned as it is: copying it with
    ``np.array`` would turn the ``np.float64`` eager code returns into a 0-d array."""
    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


_SYMBOL_PREFIX = "z_"


def _attr_code(value: Any) -> str:
    """Python source computing an attribute holding symbolic sizes from the ``z_`` size names."""
    if isinstance(value, SymExpr):
        return f"({value.format(lambda symbol: _SYMBOL_PREFIX + symbol.name)})"
    if isinstance(value, tuple):
        return "(" + "".join(f"{_attr_code(item)}, " for item in value) + ")"
    return repr(value)


def _is_bare(size: SymExpr) -> bool:
    """Is the size one symbol itself (``u0``, not ``u0 - 1``)?"""
    return len(size.terms) == 1 and size.terms[0][1] == 1 and len(size.terms[0][0]) == 1


class CodeGenerator:
    """Turns a graph into Python source; subclasses may override ``emit_op`` for new op kinds."""

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None, plan: bool = True):
        self.graph = graph
        self.writebacks = writebacks or {}
        self.plan = plan
        self.buffer_names: dict[tuple[int, tuple[Any, ...]], str] = {}
        self.persistent_bytes = 0
        self.names: dict[Value, str] = {}
        self.namespace: dict[str, Any] = {"np": np}
        self.kernel_names: dict[Any, str] = {}
        self.lines: list[str] = []
        self.line_ops: dict[int, Op] = {}
        self.counter = 0
        # 0-d graph arguments read as NumPy scalars by the scalar operators (see ``scalar_name``).
        self.scalar_args: dict[str, str] = {}
        # Ops of small fused groups run op by op that overwrite a dying temporary of the group.
        # (op, operand) -> the name that op reads the operand by (a loop bound as a Python int).
        self.operand_names: dict[tuple[Op, Value], str] = {}
        # The data-dependent sizes attributes use, set from each value that has one.
        self.data_dependent_used: set[Any] = set()
        # Updates whose value an op already wrote into their array's view (``writes_update``).
        self.stored_in_place: set[Op] = set()
        # The last op of a small group run op by op that computes the group's result into an
        # update's view -> the group.
        self.computes_for_update: dict[Op, Op] = {}
        # An op of a small group run op by op that computes a result the group writes into one of
        # its operands (``in_place_results``) -> the name of that operand.
        self.computes_into_operand: dict[Op, str] = {}
        self._readers: dict[Value, list[Op]] | None = None

    # --- names -----------------------------------------------------------------------------
    def fresh(self, stem: str = "v") -> str:
        name = f"{stem}{self.counter}"
        self.counter += 1
        return name

    def name_of(self, value: Value) -> str:
        return self.names[value]

    def bind(self, obj: Any, stem: str) -> str:
        """A namespace name for a Python object the generated code needs."""
        key = (id(obj), stem)
        if key not in self.kernel_names:
            name = (
                stem
                if stem.isidentifier() and stem not in self.namespace and not keyword.iskeyword(stem)
                else self.fresh(stem)
            )
            self.namespace[name] = obj
            self.kernel_names[key] = name
        return self.kernel_names[key]

    def kernel_for(self, op: Op) -> str:
        opdef = get_op(op.name)
        if opdef.region_kernel:
            # Ops with a body (fused groups) build one kernel per op instance from the op itself.
            return self.bind(build_fused_kernel(op).entry, self.fresh(f"k_{op.name}_"))
        if opdef.kernel_factory is not None:
            return self.bind(opdef.kernel_factory(**kernel_attrs(op)), self.fresh(f"k_{op.name}_"))
        kernel = opdef.kernel
        stem = f"k_{op.name}"
        if overwritten_operand(op) is not None and opdef.in_place_kernel is not None:
            kernel, stem = opdef.in_place_kernel, f"k_{op.name}_in_place"  # the in-place-updates pass chose it
        if kernel is None:
            raise KeyError(f"no NumPy kernel for op {op.name!r}: the backend handles it itself or it is a bug")
        attrs = {k: v for k, v in kernel_attrs(op).items() if not symbols_in(v)}
        if attrs:
            return self.bind(functools.partial(kernel, **attrs), self.fresh(f"{stem}_"))
        return self.bind(kernel, stem)

    def symbolic_attrs(self, op: Op) -> list[str]:
        """``shape=(z_n0, 3)``: the attributes holding symbolic sizes, passed at the call as the
        sizes of this call (``emit_symbol_sizes``); the others are bound to the kernel."""
        return [f"{name}={_attr_code(value)}" for name, value in kernel_attrs(op).items() if symbols_in(value)]

    def out_kernel_for(self, op: Op) -> str:
        kernel = out_kernel(op)
        if kernel is get_op(op.name).kernel:
            return self.bind(kernel, f"k_{op.name}")
        return self.bind(kernel, self.fresh(f"k_{op.name}_out_"))

    # --- planned buffers ---------------------------------------------------------------------
    def emit_buffers(self, depth: int) -> None:
        """Persistent slots become namespace arrays; per-call slots are allocated on entry. Every
        (slot, shape) an op writes gets its name here, a reshaped view when the shape differs."""
        if not self.plan:
            return
        slots, per_call = planned_slots(self.graph)
        for slot, (shape, dtype) in sorted(slots.items()):
            if slot in per_call:
                empty = self.bind(np.empty, "np_empty")
                dtype_name = self.bind(dtype, "dt_" + "".join(c if c.isalnum() else "_" for c in dtype.name))
                name = f"p{slot}"
                self.line(depth, f"{name} = {empty}({shape!r}, {dtype_name})")
            else:
                name = self.bind(np.empty(shape, dtype), f"m{slot}")
                self.persistent_bytes += int(np.prod(shape)) * dtype.itemsize
            self.buffer_names[(slot, shape)] = name
        for op in schedule(self.graph).ops:
            planned = op.attrs.get("out_buffer")
            if planned is None:
                continue
            key = (planned, op.results[0].type.shape)
            if key in self.buffer_names:
                continue
            base_name = self.buffer_names[(planned, slots[planned][0])]
            count = math.prod(key[1])
            # An occupant smaller than the slot (memory_plan._larger_free_slot) uses its first elements.
            prefix = "" if count == math.prod(slots[planned][0]) else f".reshape(-1)[:{count}]"
            if planned in per_call:
                self.buffer_names[key] = self.fresh(f"p{planned}_")
                self.line(depth, f"{self.buffer_names[key]} = {base_name}{prefix}.reshape({key[1]!r})")
            else:
                base = self.namespace[base_name]
                view = (base.reshape(-1)[:count] if prefix else base).reshape(key[1])
                self.buffer_names[key] = self.bind(view, self.fresh(f"m{planned}_"))

    def buffer_for(self, op: Op) -> str:
        """The name of the buffer (view) ``op`` writes into."""
        return self.buffer_names[(op.attrs["out_buffer"], op.results[0].type.shape)]

    # --- emitting --------------------------------------------------------------------------
    def line(self, depth: int, text: str, op: Op | None = None) -> None:
        self.lines.append("    " * depth + text)
        if op is not None:
            self.line_ops[len(self.lines)] = op

    def generate(self, aliasing: set[Value]) -> str:
        args = []
        for i, value in enumerate(self.graph.body.args):
            self.names[value] = f"a{i}"
            args.append(f"a{i}")
        self.line(0, f"def run({', '.join(args)}):")
        self.emit_symbol_sizes(1)
        self.emit_buffers(1)
        self.emit_scalar_args(1)
        self.emit_block(self.graph.body, 1, aliasing)
        return "\n".join(self.lines) + "\n"

    def emit_symbol_sizes(self, depth: int) -> None:
        """``z_n0 = a0.shape[0]`` for each symbolic size an attribute uses (``np.zeros_like`` of an
        argument of symbolic length has a ``shape`` attribute holding it)."""
        used = {s for op in self.graph.walk() for value in kernel_attrs(op).values() for s in symbols_in(value)}
        self.data_dependent_used = {s for s in used if s.hint is None}
        for index, value in enumerate(self.graph.body.args):
            for axis, size in enumerate(value.type.shape):
                if isinstance(size, SymExpr) and size.symbols <= used:
                    (symbol,) = size.symbols
                    used.discard(symbol)
                    self.line(depth, f"{_SYMBOL_PREFIX}{symbol.name} = a{index}.shape[{axis}]")

    def emit_scalar_args(self, depth: int) -> None:
        """``s0 = a0[()]`` for each 0-d argument a scalar operator reads: NumPy scalar math on
        ``s0`` gives the same values and types as the ufunc a 0-d array operand would call
        (``np.float64(2.0) - a0``), at a tenth of the cost. Newton's ``x * x - a`` runs on it."""
        if not any("python_operator" in op.attrs for op in self.graph.walk()):
            return
        ndarray = self.bind(np.ndarray, "np_ndarray")
        for value in self.graph.body.args:
            if value.type.ndim == 0:
                arg = self.name_of(value)
                name = self.scalar_args[arg] = f"s{arg[1:]}"
                self.line(depth, f"{name} = {arg}[()] if type({arg}) is {ndarray} else {arg}")

    def scalar_name(self, value: Value) -> str:
        """The name a scalar operator reads ``value`` by: its NumPy scalar for a 0-d argument
        (also when it arrives as the argument of a small fused group run op by op)."""
        name = self.name_of(value)
        return self.scalar_args.get(name, name)

    def emit_block(self, block: Block, depth: int, aliasing: set[Value]) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.emit_op(op, depth, aliasing)
        if len(self.lines) == start:
            self.line(depth, "pass")

    def emit_op(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        errstate = op.attrs.get(ERRSTATE_ATTR)
        if errstate and not get_op(op.name).structural:
            # The user's `with np.errstate(...)` around this op: applied when it runs.
            settings = ", ".join(f"{name}={value!r}" for name, value in errstate)
            self.line(depth, f"with np.errstate({settings}):", op)
            start = len(self.lines)
            self.emit_op_itself(op, depth + 1, aliasing)
            if len(self.lines) == start:
                self.line(depth + 1, "pass")
        else:
            self.emit_op_itself(op, depth, aliasing)
        self.emit_data_dependent_sizes(op.results, depth)
        self.emit_releases(op, depth)

    def emit_data_dependent_sizes(self, values: list[Value], depth: int) -> None:
        """``z_u0 = v3.shape[0]`` after each value with a data-dependent size an attribute uses
        (``np.zeros(len(x[m]))``): every value with the size sets it, so whichever path the
        graph took to the use has set it."""
        for value in values:
            for axis, size in enumerate(value.type.shape):
                if isinstance(size, SymExpr) and size.symbols & self.data_dependent_used and _is_bare(size):
                    (symbol,) = size.symbols
                    self.line(depth, f"{_SYMBOL_PREFIX}{symbol.name} = {self.name_of(value)}.shape[{axis}]")

    def emit_releases(self, op: Op, depth: int) -> None:
        """``del v3, v7``: drop the names of the arrays that die at ``op`` (the lowering's
        ``releases``), unless a result of ``op`` goes by the same name."""
        kept = {self.names.get(result) for result in op.results}
        names = {self.name_of(op.operands[i]) for i in op.attrs.get("releases", ())} - kept
        if names:
            self.line(depth, f"del {', '.join(sorted(names))}", op)

    def emit_op_itself(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        if op.attrs.get("truth_test"):  # ``if x:`` tests x itself (the lowering's decision)
            self.names[op.results[0]] = self.scalar_name(op.operands[0])
            return
        handler = getattr(self, f"emit_{op.name}", None)
        if handler is not None:
            handler(op, depth, aliasing)
        elif "python_operator" in op.attrs:
            self.emit_scalar_operator(op, depth)
        else:
            self.emit_kernel_call(op, depth)

    def emit_full(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """``v = np_zeros(shape, dtype)`` for ``np.zeros``: NumPy's own call, without the kernel's
        keywords and tests (0.3 of trisolv's 0.4 us to allocate its result)."""
        attrs = kernel_attrs(op)
        writes_elsewhere = "out_buffer" in op.attrs or op in self.computes_for_update or op.attrs.get(WRITES_UPDATE)
        if writes_elsewhere or not fills_with_zeros(attrs["fill_value"], attrs["dtype"]):
            self.emit_kernel_call(op, depth)
            return
        name = self.names[op.results[0]] = self.fresh()
        zeros = self.bind(np.zeros, "np_zeros")
        dtype = self.bind(attrs["dtype"], f"np_{attrs['dtype'].name}_dtype")
        self.line(depth, f"{name} = {zeros}({_attr_code(attrs['shape'])}, {dtype})", op)

    def emit_kernel_call(self, op: Op, depth: int) -> None:
        """``v = kernel(operands)``, or its ``out=`` form when the op has a planned buffer or
        writes into an operand."""
        results = [self.fresh() for _ in op.results]
        for value, name in zip(op.results, results):
            self.names[value] = name
        arguments = ", ".join([*(self.name_of(v) for v in op.operands), *self.symbolic_attrs(op)])
        in_place = in_place_results(op)
        stored = self.computes_for_update.get(op, op if op.attrs.get(WRITES_UPDATE) else None)
        destination = self.update_destination(stored, depth) if stored is not None else None
        if stored is not None and destination is not None:
            # A tiled kernel may read an input overlapping the view after writing part of it.
            overlap = get_op(op.name).region_kernel and stored.attrs.get(UPDATE_MAY_OVERLAP)
            check = ", out_may_overlap=True" if overlap else ""
            call = f"{self.out_kernel_for(op)}({arguments}, out={destination}{check})"
        elif in_place and get_op(op.name).in_place_kernel is None:
            # The in-place-updates pass chose an elementwise update of its operand (`x += y`), or
            # results of a fused group it writes into its operands.
            call = f"{self.out_kernel_for(op)}({arguments}, out={self.in_place_out(op, in_place)})"
        elif op in self.computes_into_operand:
            call = f"{self.out_kernel_for(op)}({arguments}, out={self.computes_into_operand[op]})"
        elif self.plan and "out_buffer" in op.attrs:
            call = f"{self.out_kernel_for(op)}({arguments}, out={self.buffer_for(op)})"
        elif self.plan and "overwrites" in op.attrs:  # the unplanned variant lets NumPy allocate
            temporary = self.name_of(op.operands[op.attrs["overwrites"]])
            call = f"{self.out_kernel_for(op)}({arguments}, out={temporary})"
        else:
            call = f"{self.kernel_for(op)}({arguments})"
        if not results:
            self.line(depth, call, op)
        elif len(results) == 1:
            self.line(depth, f"{results[0]} = {call}", op)
        else:
            self.line(depth, f"{', '.join(results)} = {call}", op)

    def in_place_out(self, op: Op, in_place: dict[int, int]) -> str:
        """The ``out=`` of an op writing results into its operands (``in_place_results``): the
        operand for a one-result op, else a tuple with None for each result the kernel allocates
        (``out=(a0, None)``)."""
        targets = [self.name_of(op.operands[in_place[k]]) if k in in_place else "None" for k in range(len(op.results))]
        return targets[0] if len(targets) == 1 else "(" + "".join(f"{target}, " for target in targets) + ")"

    def update_destination(self, op: Op, depth: int) -> str | None:
        """For an op the ``update-destinations`` pass chose: emit ``v = A[index]``, the view of the
        array that the update reading its result stores into, and return its name (None where
        the index cannot be written out: the update then stores the value as usual). A small
        group run op by op computes its last op into the view."""
        if self._readers is None:
            self._readers = {}
            for inner in self.graph.walk():
                for value in inner.operands:
                    self._readers.setdefault(value, []).append(inner)
        (update,) = self._readers[op.results[0]]
        index = self.index_source(update, first=2)
        if index is None:
            return None
        self.stored_in_place.add(update)
        same = next((v for v in op.operands if views_the_same_part(v, update)), None)
        if same is not None:  # ``A[s] -= v``: the view the op reads is the very view it writes
            return self.name_of(same)
        destination = self.fresh()
        self.line(depth, f"{destination} = {self.name_of(update.operands[0])}[{index}]", op)
        return destination

    def emit_scalar_operator(self, op: Op, depth: int) -> None:
        """``v = a < b``: Python's operator, as the lowering recorded it. On the eager code's Python
        numbers it is what the eager code ran; on a NumPy scalar it reaches NumPy's scalar math,
        ten times cheaper than a ufunc call, with the values and types the ufunc gives."""
        results = [self.fresh() for _ in op.results]
        for value, name in zip(op.results, results):
            self.names[value] = name
        operands = [self.operand_names.get((op, v)) or self.scalar_name(v) for v in op.operands]
        operator = op.attrs["python_operator"]
        if operator in FUNCTION_OPERATORS:
            expression = f"{operator}({', '.join(operands)})"
        elif operator == "**":
            # Python's power may change type with the values (``2 ** -1`` is a float): checked.
            power = self.bind(python_power, "python_power")
            expected = PYTHON_TYPE_OF_DTYPE_KIND[op.results[0].type.dtype.kind].__name__
            expression = f"{power}({operands[0]}, {operands[1]}, {expected})"
        elif len(operands) == 1:
            expression = f"{operator} {operands[0]}" if operator.isalpha() else f"{operator}{operands[0]}"
        else:
            expression = f"{operands[0]} {operator} {operands[1]}"
        self.line(depth, f"{', '.join(results)} = {expression}", op)

    def emit_getitem(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """``v = x[i, 1:3]`` written out, instead of a kernel that rebuilds the index each call."""
        index = self.index_source(op)
        if index is None:
            self.emit_kernel_call(op, depth)
            return
        name = self.names[op.results[0]] = self.fresh()
        self.line(depth, f"{name} = {self.name_of(op.operands[0])}[{index}]", op)

    emit_gather = emit_getitem

    def emit_setitem(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """An update running in place written out, as eager code runs it (``a0[1, :] = v2``),
        instead of a kernel call that rebuilds the index: in a loop of small row updates the
        call costs more than the update."""
        index = self.index_source(op, first=2) if overwritten_operand(op) is not None else None
        if index is None:
            self.emit_kernel_call(op, depth)
            return
        target, value = (self.name_of(v) for v in op.operands[:2])
        result = self.names[op.results[0]] = self.fresh()
        if op not in self.stored_in_place:  # else the value's op wrote it there (``value_in_place``)
            self.line(depth, f"{target}[{index}] = {value}", op)
        self.line(depth, f"{result} = {target}", op)

    def emit_copy_if_overlapping(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """``v = a.copy(order="K") if share(w3, a[i, ...]) else a`` written out: it runs at
        every iteration of a loop, where a kernel call would cost as much as the test."""
        index = self.index_source(op)
        if index is None:
            self.emit_kernel_call(op, depth)
            return
        array = self.name_of(op.operands[0])
        region = self.fresh()
        if not any(item is Ellipsis for item in op.attrs["template"]):
            # a view even where the index picks one element
            index = "..." if index == "()" else f"{index.rstrip(', ')}, ..."
        self.line(depth, f"{region} = {array}[{index}]", op)
        share = self.bind(share_elements, "share_elements")
        others = op.operands[1 + op.attrs["indices"] :]
        test = " or ".join(f"{share}({self.name_of(v)}, {region})" for v in others)
        result = self.names[op.results[0]] = self.fresh()
        self.line(depth, f"{result} = {array}.copy(order='K') if {test} else {array}", op)
        self.line(depth, f"del {region}", op)

    def emit_as_python_number(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """A NumPy value becomes a Python number; a Python operator's result already is one (the
        lowering marks it ``already_python``), so nothing is emitted for it."""
        if op.attrs.get("already_python"):
            self.names[op.results[0]] = self.name_of(op.operands[0])
            return
        self.emit_kernel_call(op, depth)

    def index_source(self, op: Op, first: int = 1) -> str | None:
        """The subscript source of an indexing op's template, whose tensor slots are the operands
        from ``first`` on (None if the template holds anything else)."""
        tensors = iter(op.operands[first:])
        items = []
        for item in op.attrs["template"]:
            if item is TENSOR_SLOT:
                items.append(self.name_of(next(tensors)))
            elif item is None or item is Ellipsis or _is_index_int(item):
                items.append("None" if item is None else "..." if item is Ellipsis else repr(int(item)))
            elif isinstance(item, slice) and all(
                p is None or p is TENSOR_SLOT or _is_index_int(p) for p in (item.start, item.stop, item.step)
            ):
                bounds = [self._bound_source(p, tensors) for p in (item.start, item.stop, item.step)]
                items.append(":".join(bounds if item.step is not None else bounds[:2]))
            else:
                return None
        if len(items) == 1:
            return items[0]  # x[i] is x[(i,)] for every item kind above, and a little faster
        return "".join(f"{item}, " for item in items) if items else "()"

    def _bound_source(self, bound: Any, tensors: Iterator[Value]) -> str:
        """A slice bound's source: empty for None, the int, or the name of its tensor."""
        if bound is None:
            return ""
        return self.name_of(next(tensors)) if bound is TENSOR_SLOT else repr(int(bound))

    def emit_fused(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """Small fused groups run their ops one by one (the lowering marks them ``unfused``)."""
        if not op.attrs.get("unfused"):
            self.emit_kernel_call(op, depth)
            return
        block = op.regions[0].block
        for arg, operand in zip(block.args, op.operands):
            self.names[arg] = self.name_of(operand)
        if op.attrs.get(WRITES_UPDATE):
            last = block.ops[-1].operands[0].op
            assert last is not None, "the pass chose a group whose result an op of it computes"
            self.computes_for_update[last] = op
        for index, position in in_place_results(op).items():
            computing = block.ops[-1].operands[index].op
            assert computing is not None, "the pass writes in place only results an op of the group computes"
            self.computes_into_operand[computing] = self.name_of(op.operands[position])
        for inner in block.ops[:-1]:
            self.emit_op(inner, depth, aliasing)
        for result, value in zip(op.results, block.ops[-1].operands):
            self.names[result] = self.name_of(value)

    def emit_const(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        value = op.attrs["value"]
        if is_inline_literal(value):
            self.names[op.results[0]] = repr(value)
        else:
            self.names[op.results[0]] = self.bind(value, self.fresh("K"))

    def emit_return(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        outputs = []
        returned: set[Value] = set()
        kinds = op.attrs.get(RESULT_KINDS, ())
        caller_arrays = op.attrs.get(RETURNS_CALLER_ARRAY, ())
        for i, value in enumerate(op.operands):
            name = self.name_of(value)
            caller_array, chosen = self._caller_array(op, caller_arrays[i] if i < len(caller_arrays) else None)
            if caller_array is not None:
                outputs.append(caller_array)
                continue
            kind = kinds[i] if i < len(kinds) else None
            converted = self._converted_kind(op, kind, name)
            if converted is not None:  # a new immutable scalar or number, or a fresh 0-d array
                if self.writebacks:  # taken before an argument it may be is written back
                    converted = self.bind_line(depth, converted, op)
                outputs.append(converted)
                returned.add(value)
                continue
            if kind == ZERO_D_ARRAY:
                name = f"{self.bind(as_zero_d_array, 'as_zero_d_array')}({name})"
            name = self._new_array_output(op, i, name, aliasing, returned, depth, bound=chosen is None)
            if chosen is not None:
                # The caller's array where the graph chose one, else the value as a new array;
                # taken before the write-backs, as the copies.
                name = self.bind_line(depth, f"{chosen} if {chosen} is not None else {name}", op)
            returned.add(value)
            outputs.append(name)
        for i, argument in self.writebacks.items():
            if op.operands[i] in aliasing:
                self.line(depth, f"if {outputs[i]} is not a{argument}:", op)
                self.line(depth + 1, f"np.copyto(a{argument}, {outputs[i]})", op)
            else:
                self.line(depth, f"np.copyto(a{argument}, {outputs[i]})", op)
        self.line(depth, "return (" + "".join(f"{o}, " for o in outputs) + ")", op)

    def _new_array_output(
        self, op: Op, i: int, name: str, aliasing: set[Value], returned: set[Value], depth: int, bound: bool
    ) -> str:
        """Return operand ``i`` (named ``name``) as an array of the caller's own. The same value
        twice (CSE merged `np.zeros(3), np.zeros(3)`) must still give the caller two arrays, as
        eager NumPy does. Copies are taken before the write-backs (``bound``: on a line of their
        own): a returned value may be an argument's value on entry (`v = x * 1.0` simplified to
        `x`), which writing the argument back would overwrite."""
        value = op.operands[i]
        if not (value in aliasing or (value in returned and i not in self.writebacks)):
            return name
        copied = f"{self.bind(copy_output, 'copy_output')}({name})"
        if i in self.writebacks and value in aliasing:
            # Updated in place in the argument's own buffer: nothing to copy or write back.
            copied = f"{name} if {name} is a{self.writebacks[i]} else {copied}"
        return self.bind_line(depth, copied, op) if self.writebacks and bound else copied

    def _caller_array(self, op: Op, entry: Any) -> tuple[str | None, str | None]:
        """For a ``RETURNS_CALLER_ARRAY`` entry: the output when it is always a caller's array
        (eager code returns the caller's array object itself, its final value written back
        after the call when the function updates it), else None; and for an entry
        ``(CALLER_ARRAY_FROM_OUTPUT, j, candidates)``, the expression of the candidate return
        operand ``j`` picks (None for an array of the function's own: the value is returned)."""
        if entry is None:
            return None, None
        if not isinstance(entry, tuple):
            return f"a{entry}", None
        assert entry[0] == CALLER_ARRAY_FROM_OUTPUT, f"unknown caller-array entry {entry!r}"
        candidates = "".join("None, " if index is None else f"a{index}, " for index in entry[2])
        chosen = f"({candidates})[int({self.name_of(op.operands[entry[1]])})]"
        return (chosen, None) if None not in entry[2] else (None, chosen)

    def _converted_kind(self, op: Op, kind: Any, name: str) -> str | None:
        """The expression converting a 0-d result to the kind eager code returns (``RESULT_KINDS``)
        when that needs no copy: a NumPy scalar, or the kind the path taken computed."""
        if kind == NUMPY_SCALAR:
            return f"{self.bind(as_numpy_scalar, 'as_numpy_scalar')}({name})"
        if isinstance(kind, tuple) and kind[0] == KIND_FROM_OUTPUT:
            kind_name = self.name_of(op.operands[kind[1]])
            return f"{self.bind(as_path_kind, 'as_path_kind')}({name}, {kind_name})"
        return None

    def bind_line(self, depth: int, expression: str, op: Op) -> str:
        """Emit ``name = expression`` under a fresh name and return the name."""
        name = self.fresh()
        self.line(depth, f"{name} = {expression}", op)
        return name

    def emit_cond(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        results = [self.fresh() for _ in op.results]
        self.line(depth, f"if {self.name_of(op.operands[0])}:", op)
        for region in op.regions:
            block = region.block
            self.emit_block_body(block, depth + 1, aliasing)
            yielded = [self.name_of(v) for v in block.ops[-1].operands]
            if results:
                self.line(depth + 1, f"{', '.join(results)} = {', '.join(yielded)}")
            if region is op.regions[0]:
                self.line(depth, "else:")
        for value, name in zip(op.results, results):
            self.names[value] = name

    def emit_block_body(self, block: Block, depth: int, aliasing: set[Value]) -> None:
        """A region block without its terminator (``pass`` when empty)."""
        start = len(self.lines)
        for op in block.ops[:-1]:
            self.emit_op(op, depth, aliasing)
        if len(self.lines) == start:
            self.line(depth, "pass")

    def emit_while_loop(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """``while True`` with the carried values as locals; the condition's comparison with a
        loop-invariant integer bound compares Python ints (``w2 < v0_int``). A counted loop
        becomes a ``for`` over ``range`` (the lowering marks it ``counted_loop``)."""
        if "counted_loop" in op.attrs:
            self.emit_counted_loop(op, depth, aliasing)
            return
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        carried = [self.fresh("w") for _ in op.operands]
        for names_for in (cond_block.args, body_block.args):
            for value, name in zip(names_for, carried):
                self.names[value] = name
        if carried:
            inits = [self.name_of(v) for v in op.operands]
            self.line(depth, f"{_targets(carried)} = {_targets(inits)}", op)
        self.emit_integer_bounds(cond_block, depth)
        self.line(depth, "while True:", op)
        self.emit_data_dependent_sizes(cond_block.args, depth + 1)
        self.emit_block_body(cond_block, depth + 1, aliasing)
        self.line(depth + 1, f"if not {self.name_of(cond_block.ops[-1].operands[0])}:", op)
        self.line(depth + 2, "break")
        self.emit_block_body(body_block, depth + 1, aliasing)
        yielded = [self.name_of(v) for v in body_block.ops[-1].operands]
        # A value the body hands back unchanged needs no re-binding.
        changed = [(c, y) for c, y in zip(carried, yielded) if c != y]
        if changed:
            self.line(depth + 1, f"{_targets([c for c, _ in changed])} = {_targets([y for _, y in changed])}", op)
        for value, name in zip(op.results, carried):
            self.names[value] = name

    def emit_counted_loop(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        """``for w2 in range(0, int(bound))``: Python's range does the compare and the ``+ 1`` the
        while loop would run at every step. The counter's final value is the bound (or the start,
        for a loop that never runs), as the while loop leaves it."""
        index = op.attrs["counted_loop"]
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        step = body_block.ops[-1].operands[index].owner  # as_python_number(i + 1)
        carried = [self.fresh("w") for _ in op.operands]
        for names_for in (cond_block.args, body_block.args):
            for value, name in zip(names_for, carried):
                self.names[value] = name
        others = [i for i in range(len(carried)) if i != index]
        if others:
            inits = [self.name_of(op.operands[i]) for i in others]
            self.line(depth, f"{_targets([carried[i] for i in others])} = {_targets(inits)}", op)
        compare = loop_comparison(cond_block)
        assert compare is not None, "a counted loop's condition is its comparison"  # counted_loop checked it
        start = self.name_of(op.operands[index])
        bound = self.fresh("bound")
        self.line(depth, f"{bound} = int({self.name_of(compare.operands[1])})", op)
        self.line(depth, f"for {carried[index]} in range({start}, {bound}):", op)
        skipped = {step, step.operands[0].owner}
        start_lines = len(self.lines)
        self.emit_data_dependent_sizes(body_block.args, depth + 1)
        for inner in body_block.ops[:-1]:
            if inner not in skipped:
                self.emit_op(inner, depth + 1, aliasing)
        yielded = [self.name_of(v) for i, v in enumerate(body_block.ops[-1].operands) if i != index]
        changed = [(carried[i], y) for i, y in zip(others, yielded) if carried[i] != y]
        if changed:
            self.line(depth + 1, f"{_targets([c for c, _ in changed])} = {_targets([y for _, y in changed])}", op)
        if len(self.lines) == start_lines:
            self.line(depth + 1, "pass")
        self.line(depth, f"{carried[index]} = {bound} if {bound} > {start} else {start}", op)
        for value, name in zip(op.results, carried):
            self.names[value] = name

    def emit_integer_bounds(self, cond_block: Block, depth: int) -> None:
        """Before the loop, ``v0_int = int(v0)`` for each 0-d integer defined outside the loop that
        a scalar comparison deciding the loop reads: comparing Python ints is exact for every
        integer dtype and cheaper than comparing with a NumPy integer. Only a comparison whose
        result is nothing but the loop's condition qualifies (its result becomes a Python bool)."""
        condition = cond_block.ops[-1].operands[0]
        users = [op for op in cond_block.ops if condition in op.operands]
        compare = condition.owner
        if not isinstance(compare, Op) or compare.parent is not cond_block or len(users) != 1:
            return
        if compare.attrs.get("python_operator") not in COMPARISON_OPERATORS:
            return
        for value in compare.operands:
            if value.type.dtype.kind in "iu" and not holds_python_number(value) and defined_outside(value, cond_block):
                name = self.fresh(f"{self.name_of(value)}_int")
                self.line(depth, f"{name} = int({self.name_of(value)})")
                self.operand_names[(compare, value)] = name


# The Python type of a Python number of each dtype kind (the expected type of a checked power).


def _targets(names: list[str]) -> str:
    """An assignment side: ``a`` for one name (no tuple to pack), ``a, b`` for more."""
    return ", ".join(names)


def _is_index_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def generate(
    graph: Graph,
    writebacks: dict[int, int] | None = None,
    generator_cls=CodeGenerator,
    plan: bool = True,
    variant: str = "",
) -> GeneratedCode:
    """Compile ``graph`` to a Python function.

    Args:
        graph: the graph to compile.
        writebacks: output index -> argument index, for arrays updated in place.
        generator_cls: a ``CodeGenerator`` subclass.
        plan: follow the memory plan recorded on the ops (False: let NumPy allocate every result).
        variant: a word naming this function among others of the graph (its code's file name).
    """
    gen = generator_cls(graph, writebacks, plan=plan)
    source = gen.generate(may_alias_inputs(graph))
    filename = f"<dy2st-generated {graph.name}{'' if plan else ' unplanned'}{' ' + variant if variant else ''}>"
    return GeneratedCode(source, gen.namespace, gen.line_ops, filename, gen.persistent_bytes)
