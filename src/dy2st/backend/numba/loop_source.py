"""Write a ``while_loop`` the ``compiled-regions`` pass marked as the source of one Numba function.

The function takes the values the loop reads from outside (arrays and scalars) and returns the
loop's results. Every value has the dtype NumPy gives it: each ufunc's operands are cast to the
dtypes of the NumPy loop NumPy would run (``support.loop_dtypes``) and its result to the op's
dtype, so Numba's own promotion rules never decide a type. Example, ``s += x[i]`` over float32::

    @numba.njit(cache=CACHE, error_model="python", nogil=True)
    def loop_0(p0, p1, p2):
        w0 = p1
        for w1 in range(0, p2):
            if w1 < -p0.shape[0] or w1 >= p0.shape[0]:
                raise IndexError("index out of bounds for axis 0 (kernel.py:5)")
            v0 = p0[w1]
            v1 = np.float32(np.add(w0, v0))
            w0 = v1
        w1 = p2 if p2 > 0 else 0
        return (w0, w1, )

Indices are checked against the array's size before every access, or once before an innermost
loop for every iteration (``bounds``): compiled code never reads or writes out of bounds. The
error names the user's line and ``errors`` maps it back to the op. An array expression read once
is written inside its reader's statement, where Numba fuses it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.backend.numba.axis_sums import AxisSum, is_maximum, is_mean, run_length
from dy2st.backend.numba.bounds import HoistedIndex, hoisted_indices, is_innermost, range_counter
from dy2st.backend.numba.buffers import Reuse, owned_ops, reuse_plans
from dy2st.backend.numba.element_loops import CHECKED, COUNTER, ElementLoop, element_loop
from dy2st.backend.numba.extremes import lane_order
from dy2st.backend.numba.products import (
    ACCUMULATE_INLINE_MOST,
    MATRIX_MATRIX,
    VECTOR_VECTOR,
    ProductWriter,
    inline_test,
    product_form,
    result_shape,
    written_out,
)
from dy2st.backend.numba.scalar_source import ScalarSource, dtype_call
from dy2st.backend.numba.shape_views import reshaped
from dy2st.backend.numba.support import (
    absorbed_ops,
    accumulated_product,
    compiled_axis_reduction,
    compiled_gather,
    float_vector_sum,
    numba_blas_available,
    reduces_into_new_array,
    representation,
    reshaped_view,
    returns_its_operand,
    scalar_select,
    small_matmul,
    strided_operands,
    transposed_matrix,
    vector_extreme,
)
from dy2st.backend.numpy.lowering import defined_outside, loop_comparison
from dy2st.ir.core import UPDATE_MAY_OVERLAP, VALUE_IN_PLACE, WRITES_UPDATE, Block, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, COND, CONST, DIM, WHILE_LOOP
from dy2st.ir.opdefs import get_op, overwritten_operand, reads_element, stores_element
from dy2st.ir.printer import describe_op
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import COPY_IF_OVERLAPPING, TENSOR_SLOT


class LoopSource(ScalarSource):
    """The Numba source of one function running compiled loops: one loop, or the loops of a
    ``compiled_sequence`` one after the other.

    Attributes:
        loops: the loops, in the order the function runs them.
        params: the values the loops read from outside, in the order the function takes them.
        returned: (position in ``loops``, result index) of the loops' results the function
            returns, in order; each other result is the array its loop took at that position
            (``returns_its_operand``).
        errors: the message of each error the function may raise -> the op that raises it.
        source: the function's source (``write`` fills it).
    """

    def __init__(self, loops: list[Op], name: str):
        super().__init__()
        self.loops = loops
        self.name = name
        # The (access, axis) indices whose checks were made before the innermost loop being
        # emitted (``bounds``).
        self.unchecked: set[tuple[Op, int]] = set()
        # Array expressions not yet written, each to be written out inside its one reader's
        # statement: Numba fuses an array expression within a statement into one loop with no
        # temporaries (``x[1:-1] = 0.3 * (a[:-2] + a[1:-1] + a[2:])``).
        self.pending: dict[Value, str] = {}
        self.readers: dict[Value, list[Op]] = {}
        # The arrays computed into buffers allocated before their loop: how, and the buffers'
        # names (``buffers``).
        self.buffers: dict[Value, tuple[Reuse, list[str]]] = {}
        # The ops making the arrays axis sums add up, computed inside the sums' loops instead.
        self.absorbed = {op for loop in loops for op in absorbed_ops(loop)}
        # Updates whose fused group wrote the stored value into the part itself (``destination``).
        self.stored_in_place: set[Op] = set()
        for loop in loops:
            for op in loop.walk():
                for value in op.operands:
                    self.readers.setdefault(value, []).append(op)
        self.source = self.write()

    # --- the function ------------------------------------------------------------------------
    def write(self) -> str:
        self.returned: list[tuple[int, int]] = []
        for position, loop in enumerate(self.loops):
            self.emit_loop(loop, 1)
            self.returned += [(position, k) for k in range(len(loop.results)) if not returns_its_operand(loop, k)]
        results = "".join(f"{self.names[self.loops[p].results[k]]}, " for p, k in self.returned)
        self.line(1, f"return ({results})")
        params = ", ".join(f"p{k}" for k in range(len(self.params)))
        header = ['@numba.njit(cache=CACHE, error_model="python", nogil=True)', f"def {self.name}({params}):"]
        return "\n".join(header + self.lines) + "\n"

    def emit_block(self, block: Block, depth: int) -> None:
        """The block's ops without its terminator (``pass`` when it emits nothing)."""
        start = len(self.lines)
        for op in block.ops[:-1]:
            self.emit_op(op, depth)
        if len(self.lines) == start:
            self.line(depth, "pass")

    # --- array expressions ---------------------------------------------------------------------
    def name_of(self, value: Value) -> str:
        expression = self.pending.pop(value, None)
        return super().name_of(value) if expression is None else f"({expression})"

    def written_out(self, value: Value, depth: int) -> str:
        """The name of ``value``, a pending expression written out first: the checks of an index
        into it and the access both name it (``r[:k][::-1]``, a view of a view)."""
        expression = self.pending.pop(value, None)
        if expression is None:
            return self.name_of(value)
        name = self.names[value] = self.fresh()
        self.line(depth, f"{name} = {expression}")
        return name

    def defer(self, op: Op, depth: int, expression: str) -> None:
        """Keep an array op's expression for its one reader in this block (written there), or
        write it out now."""
        value = op.results[0]
        readers = self.readers.get(value, [])
        if value.type.ndim and len(readers) == 1 and readers[0].parent is op.parent:
            self.pending[value] = expression
        else:
            self.assign(op, depth, expression)

    def flush(self, depth: int) -> None:
        """Write out every pending array expression: a store, an ``if`` or a loop comes next,
        which may change what they read."""
        for value in list(self.pending):
            self.written_out(value, depth)

    def emit_op(self, op: Op, depth: int) -> None:
        if op in self.absorbed:
            return  # computed element by element by the axis sum reading it, the op after it
        structure = {
            CONST: self.emit_const,
            WHILE_LOOP: self.emit_loop,
            COND: self.emit_cond,
            FUSED: self.emit_group,
            COPY_IF_OVERLAPPING: self.emit_overlap_check,
        }
        emit = structure.get(op.name)
        if emit is not None:
            emit(op, depth)
        else:
            self.emit_computation(op, depth)

    def emit_overlap_check(self, op: Op, depth: int) -> None:
        """A ``copy_if_overlapping`` that never copies (``carried_views.overlap_check_is_noop``,
        which a loop needs to compile): the array itself."""
        self.names[op.results[0]] = self.written_out(op.operands[0], depth)

    def emit_group(self, op: Op, depth: int) -> None:
        """A fused group: one loop over its elements where its arrays broadcast simply, else its
        ops inline (an array result read once stays an expression)."""
        self.flush(depth)
        plan = element_loop(op)
        if plan is not None:
            self.emit_element_loop(op, plan, depth)
            return
        block = op.regions[0].block
        for arg, operand in zip(block.args, op.operands):
            self.names[arg] = self.name_of(operand)
        for inner in block.ops[:-1]:
            self.emit_op(inner, depth)
        for result, value in zip(op.results, block.ops[-1].operands):
            readers = self.readers.get(result, [])
            if value in self.pending and len(readers) == 1 and readers[0].parent is op.parent:
                self.pending[result] = self.pending.pop(value)
            else:
                self.names[result] = self.name_of(value)
        self.flush_except(set(op.results), depth)

    def flush_except(self, kept: set[Value], depth: int) -> None:
        """``flush`` for the pending expressions other than ``kept``."""
        held = {v: e for v, e in self.pending.items() if v in kept}
        for value in held:
            del self.pending[value]
        self.flush(depth)
        self.pending.update(held)

    def emit_computation(self, op: Op, depth: int) -> None:
        name = op.name
        if name == DIM:
            self.assign(op, depth, f"{self.name_of(op.operands[0])}.shape[{op.attrs['axis']}]")
        elif name == AS_PYTHON_NUMBER:
            self.assign(op, depth, self.converted(op.operands[0], representation(op.results[0])))
        elif reads_element(op):
            self.emit_read(op, depth)
        elif stores_element(op):
            self.emit_store(op, depth)
        elif get_op(name).reduction:
            self.emit_reduction(op, depth)
        elif scalar_select(op):
            condition, x, y = op.operands
            result = op.results[0].type.dtype
            chosen = f"({self.converted(x, result)} if {self.name_of(condition)} else {self.converted(y, result)})"
            self.defer(op, depth, chosen)
        elif not self.emit_array_op(op, depth):
            self.defer(op, depth, self.ufunc_call(op))

    def emit_array_op(self, op: Op, depth: int) -> bool:
        """Views and products of arrays; False for any other op."""
        if reshaped_view(op):
            self.defer(op, depth, reshaped(self.written_out(op.operands[0], depth), op))
        elif transposed_matrix(op):
            self.defer(op, depth, f"{self.written_out(op.operands[0], depth)}.T")
        elif accumulated_product(op):
            self.emit_accumulated_product(op, depth)
        elif small_matmul(op):
            self.emit_product(op, depth)
        else:
            return False
        return True

    def emit_reduction(self, op: Op, depth: int) -> None:
        """A sum, mean, maximum or minimum (``support``: of a vector, or a sum over axes)."""
        if float_vector_sum(op):
            self.defer(op, depth, self.vector_sum(op))
            return
        if vector_extreme(op):
            self.emit_extreme(op, depth)
            return
        plan = compiled_axis_reduction(op)
        assert plan is not None, "support.op_compiles accepts these reductions only"
        self.emit_axis_sum(op, plan, depth)

    # --- arrays computed by loops of their own ------------------------------------------------
    def allocate_buffers(self, loop: Op, depth: int) -> None:
        """Before ``loop``: the buffers its body's products and element loops compute into."""
        made = [
            value
            for op in owned_ops(loop)
            if op not in self.absorbed and self.update_written_by(op) is None  # computed into its part
            for value in _buffered_results(op)
        ]
        for value, reuse in reuse_plans(loop, made).items():
            if reuse is Reuse.FRESH:
                continue  # allocated where it is computed
            names = [self.fresh("b") for _ in range(2 if reuse is Reuse.DOUBLE else 1)]
            # A size known only at run time: a flat buffer, grown by ``destination``.
            shape = value.type.shape if _static_shape(value) else (0,)
            for name in names:
                self.line(depth, f"{name} = np.empty({_shape_source(list(shape))}, {dtype_call(value.type.dtype)})")
            self.buffers[value] = (reuse, names)

    def destination(self, value: Value, sizes: list[str], depth: int) -> str:
        """The name of the array ``value`` is computed into, of the given sizes: its buffer (the
        other of two, in turn), or a new array. Where the sizes are known only at run time (a
        gather of each row's columns in a sparse product), the buffer is flat, grown to the
        largest size seen, and the array is a C-ordered view of its start: no allocation at each
        iteration whose size differs from the one before."""
        dtype = dtype_call(value.type.dtype)
        planned = self.buffers.get(value)
        if planned is None:
            name = self.fresh("b")
            self.line(depth, f"{name} = np.empty({_shape_source(sizes)}, {dtype})")
            return name
        reuse, names = planned
        name = names[0]
        if reuse is Reuse.DOUBLE:
            self.line(depth, f"{name}, {names[1]} = {names[1]}, {name}")
        if _static_shape(value):
            return name
        count = self.fresh("n")
        self.line(depth, f"{count} = {' * '.join(f'({size})' for size in sizes)}")
        self.line(depth, f"if {name}.shape[0] < {count}:")
        self.line(depth + 1, f"{name} = np.empty({count}, {dtype})")
        view = self.fresh("b")
        reshaped = f".reshape({_shape_source(sizes)})" if len(sizes) > 1 else ""
        self.line(depth, f"{view} = {name}[:{count}]{reshaped}")
        return view

    def emit_product(self, op: Op, depth: int) -> None:
        """``a @ b``: loops over the elements into the result's array below the sizes where BLAS
        is faster (``products``), else Numba's ``np.dot`` (matmul for 1-d and 2-d operands; Numba
        has no ``np.matmul``)."""
        a, b = (self.written_out(v, depth) for v in op.operands)
        form = product_form(op)
        inline = written_out(op, strided_operands(op))
        self.check_inner_size(op, a, b, depth)
        if inline is False:
            self.defer(op, depth, f"np.dot({a}, {b})")
            return
        result = op.results[0]
        writer = ProductWriter(form, result.type.dtype, self.fresh)
        if form == VECTOR_VECTOR:
            name = self.names[result] = self.fresh()
            for text in writer.write(a, b, name):
                self.line(depth, text)
            return
        static = [str(d) for d in result.type.shape if isinstance(d, int)]
        sizes = static if len(static) == result.type.ndim else result_shape(form, a, b)
        out = self.names[result] = self.destination(result, sizes, depth)
        inner = depth
        if inline is None:
            self.line(depth, f"if {inline_test(form, a, b)}:")
            inner = depth + 1
        for text in writer.write(a, b, out):
            self.line(inner, text)
        if inline is None:
            self.line(depth, "else:")
            self.line(depth + 1, f"{out} = np.dot({a}, {b})")

    def emit_accumulated_product(self, op: Op, depth: int) -> None:
        """``c + a @ b`` (``add_matmul``): loops adding each product into ``c``'s elements, in
        ``c``'s buffer where the update runs in place, else into a copy of ``c``."""
        c, a, b = (self.written_out(v, depth) for v in op.operands)
        self.check_inner_size(op, a, b, depth, first=1)
        result = op.results[0]
        if overwritten_operand(op) == 0:
            out = c
        else:
            out = self.fresh()
            self.line(depth, f"{out} = {c}.copy()")
        self.names[result] = out
        inner = depth
        if numba_blas_available():  # large products: BLAS's, which is faster there
            self.line(depth, f"if {a}.shape[0] * {a}.shape[1] * {b}.shape[1] <= {ACCUMULATE_INLINE_MOST}:")
            inner = depth + 1
        for text in ProductWriter(MATRIX_MATRIX, result.type.dtype, self.fresh, accumulate=True).write(a, b, out):
            self.line(inner, text)
        if inner > depth:
            self.line(depth, "else:")
            self.line(depth + 1, f"{out} += np.dot({a}, {b})")

    def check_inner_size(self, op: Op, a: str, b: str, depth: int, first: int = 0) -> None:
        """NumPy's ValueError where the inner sizes of the product's operands (from ``first``)
        differ (checked unless static): two parts cut by bounds read from data
        (``values[a:b] @ x[cols[a:b]]``) have sizes of their own, equal only where the data says so."""
        left, right = op.operands[first].type, op.operands[first + 1].type
        inner_a, inner_b = left.shape[-1], right.shape[0]
        if isinstance(inner_a, int) and isinstance(inner_b, int) and inner_a == inner_b:
            return
        where = f" ({op.loc.short})" if op.loc else ""
        message = f"matmul: Input operand 1 has a mismatch in its core dimension 0{where}"
        self.errors[message] = op
        self.line(depth, f"if {a}.shape[{left.ndim - 1}] != {b}.shape[0]:")
        self.line(depth + 1, f"raise ValueError({message!r})")

    def emit_element_loop(self, op: Op, plan: ElementLoop, depth: int) -> None:
        """A fused group as loops over its result's elements, into its results' arrays."""
        block = op.regions[0].block
        inputs = [self.written_out(operand, depth) for operand in op.operands]
        sizes = [str(size) if isinstance(size, int) else f"{inputs[size[0]]}.shape[{size[1]}]" for size in plan.sizes]
        self.check_broadcast(op, plan, inputs, sizes, depth)
        update = self.update_written_by(op)
        if update is not None:  # the part of the array the update stores into, as a view
            outputs = [self.bind(depth, f"{self.name_of(update.operands[0])}[{self.checked_index(update, depth, 2)}]")]
            self.stored_in_place.add(update)
        else:
            outputs = [self.destination(result, sizes, depth) for result in op.results]
        counters = [self.fresh("e") for _ in sizes]
        for axis, (counter, size) in enumerate(zip(counters, sizes)):
            self.line(depth + axis, f"for {counter} in range({size}):")
        inner = depth + len(sizes)
        for position, (arg, name) in enumerate(zip(block.args, inputs)):
            if position not in plan.axes:
                self.names[arg] = name
                continue
            index = ", ".join("0" if t is None else counters[t] for t in plan.axes[position])
            self.names[arg] = self.bind(inner, f"{name}[{index}]")
        for inner_op in block.ops[:-1]:
            if inner_op.name == CONST:
                self.emit_const(inner_op, inner)
            else:
                self.assign(inner_op, inner, self.ufunc_call(inner_op, per_element=True))
        element = ", ".join(counters)
        for result, value, out in zip(op.results, block.ops[-1].operands, outputs):
            self.line(inner, f"{out}[{element}] = {self.converted(value, representation(result))}")
            self.names[result] = out

    def update_written_by(self, op: Op) -> Op | None:
        """The update whose part of an array the fused group ``op`` computes its result into
        (``update-destinations`` marked both: ``C[i, :i + 1] += ...``), with no other operand
        that may share that part's memory; else None. Each element of the part is read, where the
        group reads it, before it is written."""
        if not op.attrs.get(WRITES_UPDATE) or op.attrs.get(UPDATE_MAY_OVERLAP) or len(op.results) != 1:
            return None
        readers = self.readers.get(op.results[0], [])
        if len(readers) != 1 or not readers[0].attrs.get(VALUE_IN_PLACE) or readers[0].parent is not op.parent:
            return None
        update = readers[0]
        if not stores_element(update) or update.operands[1] is not op.results[0]:
            return None
        return update

    def check_broadcast(self, op: Op, plan: ElementLoop, inputs: list[str], sizes: list[str], depth: int) -> None:
        """NumPy's ValueError where inputs whose sizes are symbolic differ at run time."""
        for position, axes in plan.axes.items():
            for axis, target in enumerate(axes):
                if target is None or plan.sizes[target] == (position, axis) or isinstance(plan.sizes[target], int):
                    continue  # broadcast, the size itself, or a static size
                self.line(depth, f"if {inputs[position]}.shape[{axis}] != {sizes[target]}:")
                self.line(depth + 1, f"raise ValueError({self.broadcast_error(op)!r})")

    def broadcast_error(self, op: Op) -> str:
        """The message of NumPy's ValueError for operands of ``op`` that do not broadcast."""
        where = f" ({op.loc.short})" if op.loc else ""
        message = f"operands could not be broadcast together{where}"
        self.errors[message] = op
        return message

    # --- sums over axes ---------------------------------------------------------------------------
    def emit_axis_sum(self, op: Op, plan: AxisSum, depth: int) -> None:
        """``np.sum(x, axis)`` (``mean``, ``max``, ``min``) as one loop nest over ``x``'s elements,
        each computed from the inputs where it is reduced (``x`` is never made), in NumPy's order
        (``axis_sums``): element by element into the result where NumPy's runs have length 1, else
        each run's elements into a scratch vector reduced as NumPy's pairwise summation (or its
        max/min reduction) does. A mean then divides by the count; a max or min first raises
        NumPy's ValueError where a reduced axis is empty."""
        inputs = [self.written_out(v, depth) if v.type.ndim else self.name_of(v) for v in plan.inputs]
        sizes = [str(s) if isinstance(s, int) else f"{inputs[s[0]]}.shape[{s[1]}]" for s in plan.sizes]
        self.check_summed_inputs(plan, inputs, sizes, depth)
        if plan.extreme:
            self.check_not_empty(op, [sizes[axis] for axis in plan.reduced], depth)
        result = op.results[0]
        dtype = dtype_call(result.type.dtype)
        counters = [self.fresh("e") for _ in sizes]
        if result.type.ndim:
            axes = [a for a in range(len(sizes)) if plan.keepdims or a not in plan.reduced]
            out = self.destination(result, ["1" if a in plan.reduced else sizes[a] for a in axes], depth)
            if not plan.extreme:  # a max or min sets each element at its first
                self.line(depth, f"{out}[...] = 0")
            target = f"{out}[{', '.join('0' if a in plan.reduced else counters[a] for a in axes)}]"
        else:
            out = target = self.fresh("s")
            self.line(depth, f"{out} = {dtype}(0)")
        static, run = run_length(plan, lambda axis: sizes[axis])
        if static == 1 or (plan.extreme and result.type.dtype.kind in "iu"):  # any order: same ints
            self.add_elements(plan, inputs, sizes, counters, target, None, depth)
        elif static is not None:
            self.add_elements(plan, inputs, sizes, counters, target, run, depth)
        else:
            length = self.bind(depth, run)
            self.line(depth, f"if {length} == 1:")
            self.add_elements(plan, inputs, sizes, counters, target, None, depth + 1)
            self.line(depth, "else:")
            self.add_elements(plan, inputs, sizes, counters, target, length, depth + 1)
        if plan.averages:
            self.divide_by_count(out, result, [sizes[axis] for axis in plan.reduced], depth)
        self.names[result] = out

    def divide_by_count(self, out: str, result: Value, counted: list[str], depth: int) -> None:
        """``out`` divided by the number of elements each of its elements summed, as ``np.mean``
        divides: by an ``intp`` count, so in float64, the quotient cast to the result's dtype."""
        dtype = dtype_call(result.type.dtype)
        count = self.bind(depth, f"np.float64({' * '.join(counted)})")
        # np.divide, not ``/``: a count of 0 gives NaN (NumPy warns "Mean of empty slice"), where
        # the loop's error model would raise ZeroDivisionError.
        if not result.type.ndim:
            self.line(depth, f"{out} = {dtype}(np.divide(np.float64({out}), {count}))")
            return
        flat, k = self.fresh("b"), self.fresh("e")
        self.line(depth, f"{flat} = {out}.reshape({out}.size)")  # a fresh C-contiguous array: a view
        self.line(depth, f"for {k} in range({flat}.shape[0]):")
        self.line(depth + 1, f"{flat}[{k}] = {dtype}(np.divide(np.float64({flat}[{k}]), {count}))")

    def add_elements(
        self,
        plan: AxisSum,
        inputs: list[str],
        sizes: list[str],
        counters: list[str],
        target: str,
        run: str | None,
        depth: int,
    ) -> None:
        """The loops over the reduced elements in C order, adding each to ``target`` (``run``
        None), or each ``run`` of them summed pairwise (a max or min: ``fold_extremes``)."""
        if plan.extreme:
            self.fold_extremes(plan, inputs, sizes, counters, target, run, depth)
            return
        dtype = dtype_call(plan.summed.type.dtype)
        if run is not None:
            scratch, filled = self.fresh("b"), self.fresh("m")
            self.line(depth, f"{scratch} = np.empty({run}, {dtype})")
            self.line(depth, f"{filled} = 0")
        for axis, (counter, size) in enumerate(zip(counters, sizes)):
            self.line(depth + axis, f"for {counter} in range({size}):")
        inner = depth + len(sizes)
        element = self.summed_element(plan, inputs, counters, inner)
        if run is None:
            self.line(inner, f"{target} = {target} + {element}")
            return
        self.line(inner, f"{scratch}[{filled}] = {element}")
        self.line(inner, f"{filled} += 1")
        self.line(inner, f"if {filled} == {run}:")
        self.line(inner + 1, f"{target} = {target} + _numpy_pairwise_sum({scratch}, 0, {run}, {dtype}(0.0))")
        self.line(inner + 1, f"{filled} = 0")

    def fold_extremes(
        self,
        plan: AxisSum,
        inputs: list[str],
        sizes: list[str],
        counters: list[str],
        target: str,
        run: str | None,
        depth: int,
    ) -> None:
        """The loops over the reduced elements in C order, as NumPy's max/min reduction visits them:
        a result element starts at its first element (where every reduced counter is 0), then
        takes each later element by NumPy's step (``run`` None), or each later ``run`` by NumPy's
        reduction started from the result element (``_numpy_extreme`` of the run after it in a
        scratch vector, in a plain pass where its extreme is a number other than 0; the first run
        from its own first element)."""
        dtype = plan.summed.type.dtype
        first = " and ".join(f"{counters[axis]} == 0" for axis in plan.reduced)
        if run is not None:
            scratch, filled, starts = self.fresh("b"), self.fresh("m"), self.fresh("m")
            self.line(depth, f"{scratch} = np.empty({run} + 1, {dtype_call(dtype)})")
            self.line(depth, f"{filled} = 0")
            self.line(depth, f"{starts} = False")
        for axis, (counter, size) in enumerate(zip(counters, sizes)):
            self.line(depth + axis, f"for {counter} in range({size}):")
        inner = depth + len(sizes)
        element = self.summed_element(plan, inputs, counters, inner)
        if run is None:
            self.line(inner, f"if {first}:")
            self.line(inner + 1, f"{target} = {element}")
            self.line(inner, "else:")
            self.line(inner + 1, f"{target} = _numpy_extreme_step({target}, {element}, {plan.maximum})")
            return
        order, nan = self.extreme_model(dtype)
        reduce = f"{plan.maximum}, {order!r}, {nan}"
        self.line(inner, f"if {filled} == 0:")
        self.line(inner + 1, f"{starts} = {first}")
        self.line(inner, f"{scratch}[1 + {filled}] = {element}")
        self.line(inner, f"{filled} += 1")
        self.line(inner, f"if {filled} == {run}:")
        self.line(inner + 1, f"if {starts}:")
        self.line(inner + 2, f"{target} = _numpy_extreme_of_numbers({scratch}[1:], {reduce})")
        self.line(inner + 1, "else:")
        self.line(inner + 2, f"{scratch}[0] = {target}")
        self.line(inner + 2, f"{target} = _numpy_extreme_of_numbers({scratch}, {reduce})")
        self.line(inner + 1, f"{filled} = 0")

    def summed_element(self, plan: AxisSum, inputs: list[str], counters: list[str], depth: int) -> str:
        """The name of the summed element at the counters' position: each input's element read at
        its broadcast position, the producer's ops computed on them with NumPy's semantics."""
        reads = {}
        for position, axes in plan.axes.items():
            index = ", ".join(
                counters[target]
                if how == COUNTER
                else f"min({counters[target]}, {inputs[position]}.shape[{axis}] - 1)"
                if how == CHECKED
                else "0"
                for axis, (target, how) in enumerate(axes)
            )
            reads[position] = self.bind(depth, f"{inputs[position]}[{index}]")
        producer = plan.producer
        if producer is None:
            return reads[0]
        if producer.name == FUSED:
            block = producer.regions[0].block
            for position, arg in enumerate(block.args):
                self.names[arg] = reads.get(position, inputs[position])
            for inner in block.ops[:-1]:
                if inner.name == CONST:
                    self.emit_const(inner, depth)
                else:
                    self.assign(inner, depth, self.ufunc_call(inner, per_element=True))
            return self.name_of(block.ops[-1].operands[0])
        # A single ufunc: its array operands stand for their elements while it is written.
        outside = {operand: self.names[operand] for operand in producer.operands if operand in self.names}
        self.names.update({producer.operands[position]: name for position, name in reads.items()})
        expression = self.ufunc_call(producer, per_element=True)
        self.names.update(outside)
        return self.bind(depth, expression)

    def check_summed_inputs(self, plan: AxisSum, inputs: list[str], sizes: list[str], depth: int) -> None:
        """NumPy's ValueError where an input's size known only when the loop runs neither is the
        summed array's nor broadcasts (1); the producer is the op raising it."""
        raiser = plan.producer or plan.total
        for position, axes in plan.axes.items():
            for axis, (target, how) in enumerate(axes):
                if how != CHECKED:
                    continue
                size = f"{inputs[position]}.shape[{axis}]"
                self.line(depth, f"if {size} != {sizes[target]} and {size} != 1:")
                self.line(depth + 1, f"raise ValueError({self.broadcast_error(raiser)!r})")

    def vector_sum(self, op: Op) -> str:
        """``x.sum()`` / ``x.mean()`` of a 1-d float array with NumPy's pairwise summation."""
        vector = self.name_of(op.operands[0])
        dtype = dtype_call(op.results[0].type.dtype)
        if is_mean(op):
            return f"{dtype}(_numpy_mean({vector}, {dtype}(0.0)))"
        return f"_numpy_sum({vector}, {dtype}(0.0))"

    def emit_extreme(self, op: Op, depth: int) -> None:
        """``x.max()`` / ``x.min()`` of a 1-d array with NumPy's reduction (``extremes``), after
        NumPy's check that the array is not empty, which names the user's line."""
        vector = self.written_out(op.operands[0], depth)
        self.check_not_empty(op, [f"{vector}.shape[0]"], depth)
        order, nan = self.extreme_model(op.operands[0].type.dtype)
        self.defer(op, depth, f"_numpy_extreme({vector}, {is_maximum(op)}, {order!r}, {nan})")

    def check_not_empty(self, op: Op, reduced: list[str], depth: int) -> None:
        """NumPy's ValueError, naming the user's line, where one of the ``reduced`` sizes of the
        max or min ``op`` is 0: those reductions have no identity."""
        ufunc = np.maximum if is_maximum(op) else np.minimum
        where = f" ({op.loc.short})" if op.loc else ""
        message = f"zero-size array to reduction operation {ufunc.__name__} which has no identity{where}"
        self.errors[message] = op
        may_be_empty = [size for size in reduced if not size.isdigit() or size == "0"]
        if may_be_empty:
            self.line(depth, f"if {' or '.join(f'{size} == 0' for size in may_be_empty)}:")
            self.line(depth + 1, f"raise ValueError({message!r})")

    @staticmethod
    def extreme_model(dtype: np.dtype) -> tuple[tuple[int, ...], str]:
        """The lane order and NaN ``_numpy_extreme`` takes for ``dtype`` (``extremes``)."""
        if dtype.kind == "f":
            order = lane_order(dtype)
            assert order is not None, "support accepts float max/min only where a model fits"
            return order, f"{dtype_call(dtype)}(np.nan)"
        return (0,), f"{dtype_call(dtype)}(0)"  # any order gives an integer maximum's bits

    def emit_read(self, op: Op, depth: int) -> None:
        """``x[index]``: an element or a view (``A[i, j]``, ``A[i, a:b]``), or a gather."""
        if compiled_gather(op):
            self.emit_gather(op, depth)
            return
        index = self.checked_index(op, depth, first=1)
        self.defer(op, depth, f"{self.name_of(op.operands[0])}[{index}]")

    def emit_gather(self, op: Op, depth: int) -> None:
        """``x[idx]`` by an integer array (``support.compiled_gather``): loops over ``idx`` copying
        the element (or row) of ``x`` each index names into the result's array, the index checked
        against ``x``'s first axis before the read and a negative one counted from its end, as
        NumPy's advanced indexing does; an index out of range raises NumPy's IndexError, naming
        the user's line."""
        array, index = (self.written_out(v, depth) for v in op.operands)
        x, idx = (v.type for v in op.operands)
        result = op.results[0]
        sizes = [f"{index}.shape[{axis}]" for axis in range(idx.ndim)]
        sizes += [f"{array}.shape[{axis}]" for axis in range(1, x.ndim)]
        static = [str(d) if isinstance(d, int) else size for d, size in zip(result.type.shape, sizes)]
        out = self.names[result] = self.destination(result, static, depth)
        size = self.bind(depth, f"{array}.shape[0]")
        counters = [self.fresh("e") for _ in range(idx.ndim)]
        for axis, counter in enumerate(counters):
            self.line(depth + axis, f"for {counter} in range({index}.shape[{axis}]):")
        inner = depth + idx.ndim
        position = ", ".join(counters)
        where = f" ({op.loc.short})" if op.loc else ""
        message = f"index out of bounds for axis 0 in {describe_op(op)}{where}"
        self.errors[message] = op
        named = self.bind(inner, f"{index}[{position}]")
        if idx.dtype.kind == "u":  # no negative indices; compared as uint64, which holds every one
            self.line(inner, f"if np.uint64({named}) >= np.uint64({size}):")
            self.line(inner + 1, f"raise IndexError({message!r})")
            row = self.bind(inner, f"np.int64({named})")
        else:
            row = self.bind(inner, f"np.int64({named})")
            self.line(inner, f"if {row} < -{size} or {row} >= {size}:")
            self.line(inner + 1, f"raise IndexError({message!r})")
            self.line(inner, f"if {row} < 0:")
            self.line(inner + 1, f"{row} += {size}")
        self.line(inner, f"{out}[{position}] = {array}[{row}]")

    # --- elements ------------------------------------------------------------------------------
    def checked_index(self, op: Op, depth: int, first: int) -> str:
        """The subscript of an element or a view (``A[i, j]``, ``A[i, a:b]``), after a check of
        each integer index against its axis (slices clip, as NumPy's do)."""
        array = self.written_out(op.operands[0], depth)
        tensors = iter(op.operands[first:])
        items = []
        indexed = [item for item in op.attrs["template"] if item is not None]
        axes = iter(range(len(indexed)))
        for item in op.attrs["template"]:
            if item is None:
                items.append("None")  # a new axis of length 1, as NumPy's
                continue
            axis = next(axes)
            if isinstance(item, slice):
                bounds = [self.bound(p, tensors) for p in (item.start, item.stop, item.step)]
                items.append(":".join(bounds if item.step is not None else bounds[:2]))
                continue
            if item is TENSOR_SLOT:
                text = self.converted(next(tensors), np.dtype(np.int64))
                if not text.isidentifier():
                    text = self.bind(depth, text)
            else:
                text = repr(int(item))
            if (op, axis) in self.unchecked:
                items.append(f"np.uint64({text})")  # known in [0, size): no wrap-around of negatives
                continue
            items.append(text)
            where = f" ({op.loc.short})" if op.loc else ""
            message = f"index out of bounds for axis {axis} in {describe_op(op)}{where}"
            self.errors[message] = op
            size = f"{array}.shape[{axis}]"
            self.line(depth, f"if {text} < -{size} or {text} >= {size}:")
            self.line(depth + 1, f"raise IndexError({message!r})")
        return ", ".join(items)

    def bound(self, bound: object, tensors) -> str:
        """A slice bound's source: empty for None, the int, or its 0-d integer's name."""
        if bound is None:
            return ""
        if bound is TENSOR_SLOT:
            return self.converted(next(tensors), np.dtype(np.int64))
        return repr(int(bound))  # type: ignore[call-overload]

    def emit_store(self, op: Op, depth: int) -> None:
        """``A[index] = v`` in ``A``'s buffer: an element, or a part from a scalar or an array (a
        copy of it first where it may share memory with ``A``, which NumPy reads before writing)."""
        array, value = op.operands[0], op.operands[1]
        if op in self.stored_in_place:  # the fused group computed the value into the part itself
            self.names[op.results[0]] = self.name_of(array)
            return
        index = self.checked_index(op, depth, first=2)
        if value.type.ndim:
            stored = self.name_of(value) + ("" if _fresh(value) else ".copy()")
        else:
            stored = self.converted(value, array.type.dtype)
        target = self.name_of(array)
        self.flush(depth)  # what other pending expressions read is read before the store
        self.line(depth, f"{target}[{index}] = {stored}")
        self.names[op.results[0]] = self.name_of(array)  # updated in place: the same array

    # --- control flow ------------------------------------------------------------------------
    def emit_cond(self, op: Op, depth: int) -> None:
        self.flush(depth)
        results = [self.fresh("r") for _ in op.results]
        self.line(depth, f"if {self.name_of(op.operands[0])}:")
        for k, region in enumerate(op.regions):
            if k == 1:
                self.line(depth, "else:")
            self.emit_block(region.block, depth + 1)
            self.rebind(results, op.results, region.block.ops[-1].operands, depth + 1)
        for value, name in zip(op.results, results):
            self.names[value] = name

    def rebind(self, names: list[str], targets: list[Value], values: list[Value], depth: int) -> None:
        """``a, b = x, y`` for the names whose values change, each cast to its target's dtype."""
        pairs = [
            (name, self.converted(value, representation(target))) for name, target, value in zip(names, targets, values)
        ]
        changed = [(name, text) for name, text in pairs if name != text]
        if changed:
            self.line(depth, f"{', '.join(n for n, _ in changed)} = {', '.join(t for _, t in changed)}")

    def emit_loop(self, op: Op, depth: int) -> None:
        self.flush(depth)
        self.allocate_buffers(op, depth)
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        carried = [self.fresh("w") for _ in op.operands]
        counted = range_counter(op)
        others = [k for k in range(len(carried)) if k != counted]
        self.rebind(
            [carried[k] for k in others], [op.results[k] for k in others], [op.operands[k] for k in others], depth
        )
        for block in (cond_block, body_block):
            for value, name in zip(block.args, carried):
                self.names[value] = name
        yielded = body_block.ops[-1].operands
        if counted is None:
            self.line(depth, "while True:")
            self.emit_block(cond_block, depth + 1)
            self.line(depth + 1, f"if not {self.name_of(cond_block.ops[-1].operands[0])}:")
            self.line(depth + 2, "break")
            self.emit_block(body_block, depth + 1)
            self.rebind(carried, list(op.results), list(yielded), depth + 1)
        else:
            self.emit_counted(op, carried, counted, depth)
        for value, name in zip(op.results, carried):
            self.names[value] = name

    def emit_counted(self, op: Op, carried: list[str], counted: int, depth: int) -> None:
        """``for w in range(start, bound)``, as the NumPy tier runs a counted loop; the counter ends
        at the bound (or the start, for a loop that never runs), as the while loop leaves it."""
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        compare = loop_comparison(cond_block)
        assert compare is not None, "a counted loop's condition is its comparison"
        start = self.converted(op.operands[counted], np.dtype(np.int64))
        bound = self.bind(depth, self.converted(compare.operands[1], np.dtype(np.int64)))
        if not start.isidentifier():
            start = self.bind(depth, start)
        counter = carried[counted]
        self.counters.add(body_block.args[counted])
        hoisted = self.hoisted_checks(op, counted, start, bound) if is_innermost(op) else None
        if hoisted is None:
            self.emit_range_loop(op, carried, counted, start, bound, depth)
        else:
            condition, indices = hoisted
            self.line(depth, f"if {bound} <= {start} or ({condition}):")
            self.unchecked |= indices
            self.emit_range_loop(op, carried, counted, start, bound, depth + 1)
            self.unchecked -= indices
            self.line(depth, "else:")
            self.emit_range_loop(op, carried, counted, start, bound, depth + 1)
        self.line(depth, f"{counter} = {bound} if {bound} > {start} else {start}")

    def emit_range_loop(self, op: Op, carried: list[str], counted: int, start: str, bound: str, depth: int) -> None:
        """``for w in range(start, bound)`` and the body; the increment the body yields for the
        counter is computed as written (other ops may read it) and left unused."""
        body_block = op.regions[1].block
        self.line(depth, f"for {carried[counted]} in range({start}, {bound}):")
        self.emit_block(body_block, depth + 1)
        others = [k for k in range(len(carried)) if k != counted]
        yielded = body_block.ops[-1].operands
        self.rebind(
            [carried[k] for k in others], [op.results[k] for k in others], [yielded[k] for k in others], depth + 1
        )

    def hoisted_checks(self, loop: Op, counted: int, start: str, bound: str) -> tuple[str, set[tuple[Op, int]]] | None:
        """The test, made before the innermost loop, that every hoistable index is in bounds at
        every iteration, and the indices it covers; None when there are none."""
        tests: list[str] = []
        covered: set[tuple[Op, int]] = set()
        body = loop.regions[1].block
        for index in hoisted_indices(loop, counted):
            size = self.size_before(index.access.operands[0], index.axis, body)
            if size is None:
                continue
            tests.append(self.in_bounds_test(index, size, start, bound))
            covered.add((index.access, index.axis))
        return (" and ".join(dict.fromkeys(tests)), covered) if tests else None

    def in_bounds_test(self, index: HoistedIndex, size: str, start: str, bound: str) -> str:
        if index.literal is not None:
            return f"{index.literal} >= 0 and {index.literal} < {size}"
        if index.value is not None:
            name = self.converted(index.value, np.dtype(np.int64))
            return f"{name} >= 0 and {name} < {size}"
        return f"{start} + {index.offset} >= 0 and {bound} - 1 + {index.offset} < {size}"

    def size_before(self, array: Value, axis: int, body: Block) -> str | None:
        """Source for the size of ``array``'s axis that is valid before the loop: the static size,
        or the size of the array it updates in place, named outside the loop (None if neither)."""
        size = array.type.shape[axis]
        if isinstance(size, int):
            return repr(size)
        while isinstance(array.owner, Op) and stores_element(array.owner):
            array = array.owner.operands[0]
        if array in body.args or defined_outside(array, body):
            return f"{self.name_of(array)}.shape[{axis}]"
        return None


def _buffered_results(op: Op) -> list[Value]:
    """The arrays ``op`` computes by loops of its own (into buffers, where they may be reused)."""
    if small_matmul(op) and op.results[0].type.ndim and written_out(op, strided_operands(op)) is not False:
        return [op.results[0]]
    if compiled_gather(op):
        return [op.results[0]]
    if op.name == FUSED and element_loop(op) is not None:
        return list(op.results)
    if reduces_into_new_array(op):
        return [op.results[0]]
    return []


def _static_shape(value: Value) -> bool:
    """Are all of ``value``'s sizes known when the loop is compiled?"""
    return all(isinstance(d, int) for d in value.type.shape)


def _shape_source(sizes: list[Any]) -> str:
    """A shape tuple's source."""
    return f"({''.join(f'{size}, ' for size in sizes)})"


def _fresh(value: Value) -> bool:
    """Is ``value`` an array computed here, sharing memory with no other (a ufunc's or a gather's
    result)?"""
    owner = value.owner
    if not isinstance(owner, Op):
        return False
    if owner.name == FUSED:
        return _fresh(owner.regions[0].block.ops[-1].operands[owner.results.index(value)])
    return get_op(owner.name).ufunc is not None or compiled_gather(owner) or reduces_into_new_array(owner)
