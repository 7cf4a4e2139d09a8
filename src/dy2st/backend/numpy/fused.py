"""The fused-kernel runtime: run a ``fused`` op's region over cache-sized tiles of its output.

For each fused op the backend generates one Python function that evaluates the region on one tile,
calling each op's ufunc with ``out=`` into a scratch buffer (or, for the group's outputs, straight
into the output tile)::

    def run_tile(i0, o0, s0):
        u_multiply(i0, 2.0, out=s0)
        u_tanh(s0, out=s0)
        u_add(s0, i0, out=o0)

and a driver that slices the inputs and outputs tile by tile and calls it. Intermediates live in
scratch buffers of one tile each, reused across tiles and calls, so they stay in cache and never
reach main memory; a buffer is reused in place as soon as the value it holds is dead.

Bit-identical to unfused NumPy: every op calls the same ufunc on operands of the same dtypes
(Python-scalar constants are passed as the same Python scalars, so NumPy 2's weak promotion picks
the same loop), and ``out=`` always has the dtype the unfused op would have produced, so NumPy
selects the same inner loop and never casts. Tiles are C-ordered, which is the memory order unfused
NumPy gives its results when the inputs are in C order (``_c_ordered``); a group whose layout
matters, because it reduces rows or because the memory plan marks its results ``eager_layout`` (a
reduction reads them), runs its ops unfused, one NumPy call each, for inputs in another order
(``x.T``, Fortran-ordered arrays), so its results have NumPy's order and its reductions round as
NumPy's do.

Tiling: when every input either has the output's shape and is C-contiguous or holds one element,
inputs and outputs are flattened and cut into contiguous tiles of ``TILE_ELEMENTS``. Otherwise
(true broadcasting, strided inputs) inputs are broadcast to the iteration shape as views and tiles
are taken along the outermost axis whose trailing block still fits in a tile. A group that reduces
over the last axis (softmax, layernorm) keeps whole rows in each tile. When everything fits in one
tile the region runs once on the inputs as given.

Tile size, measured on the shared 2-core development machine (2 MiB L2 per core) for W1 (tanh-GELU,
scale and bias: 11 ufuncs) on float32, this kernel alone with ``out=``, interleaved runs, min /
median in ms (the machine was loaded by other jobs, so medians are noisy)::

    elements/tile     4K           16K          32K          64K          128K         256K
    4M  (21 runs)     28.8 / 62.9  18.2 / 38.5  15.0 / 33.4  16.0 / 31.5  18.2 / 35.1  19.5 / 37.0
    64K (401 runs)    0.21 / 0.26  0.13 / 0.15  0.12 / 0.14  0.11 / 0.12  -            -

Below 16K elements the Python cost of one ufunc call per op per tile dominates; above 64K the
tile's working set (input, two live scratch buffers, output) no longer fits in L2. 64K elements
is kept: it is as fast as 32K at 4M, and a 64K-element array then runs as one tile, with no
per-tile slicing. W1's scratch is two float32 tiles (512 KiB), within the 1 MiB budget.

Two threads (tiles split in halves, the second half on a pool thread with its own scratch; NumPy
releases the GIL inside ufunc loops) were measured and are not used: W1 at 64K went from 0.10 to
0.16 ms (min) and at 4M from 30.0 to 30.7 ms; each ufunc call re-takes the GIL, and on this shared
machine the second core is rarely free.
"""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any

import numpy as np

from dy2st.backend.numpy.fused_select import SelectWriter, late_operands
from dy2st.backend.numpy.target import SMALL_FUSED_BYTES
from dy2st.errors import runtime_error
from dy2st.ir.core import CONST, Block, Op, Value, kernel_attrs
from dy2st.ir.opdefs import get_op
from dy2st.ir.printer import describe_op
from dy2st.ir.symbolic import SymbolicSizeNeeded, SymExpr, broadcast_shapes, has_symbolic, symbols_in
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import share_elements

TILE_ELEMENTS = 65536

_INLINE_TYPES = (bool, int, float)


def _row_reduction(op: Op):
    """The function that reduces each tile row into ``out=`` for ``op``, or None (see OpDef)."""
    return get_op(op.name).row_reduction


FULL, ROW = "full tile", "row"
"""Scratch kinds: one element per tile element, or one per tile row (reduced values)."""


def iteration_shape(block: Block) -> tuple[Any, ...]:
    """The shape a fused region iterates over: its elementwise results and reduction inputs."""
    shapes = []
    for op in block.ops[:-1]:
        if _row_reduction(op) is not None:
            shapes.append(op.operands[0].type.shape)
        elif op.name != CONST:
            shapes.append(op.results[0].type.shape)
    return broadcast_shapes(*shapes) if shapes else ()


def has_row_reductions(block: Block) -> bool:
    return any(_row_reduction(op) is not None for op in block.ops)


class TileProgram:
    """The generated per-tile function of one fused region, and what it needs to run.

    Attributes:
        source: the generated Python source of ``tile(inputs..., outputs..., scratch...)``.
        function: the compiled ``tile`` function.
        scratch: (dtype, kind) of each scratch buffer the function takes; kind is ``FULL`` or ``ROW``.
        line_ops: generated line number -> the region op that line runs (for error messages).
        filename: the pseudo file name the source was compiled under.
        read_before_written: the (input, output) pairs whose output buffer may be that input: the
            region reads the input no later than it first writes the output
            (``_reads_before_writes``), so a tile reads the input's elements before it writes
            them (a result written into its operand: ``x += a * b``).
        alias_safe: every output buffer may also be any input (every pair is read before written).
    """

    def __init__(self, block: Block, name: str):
        self.filename = f"<dy2st-fused {name}>"
        self.namespace: dict[str, Any] = {"np": np}  # repr of a NumPy scalar literal: np.float64(1.0)
        self.line_ops: dict[int, Op] = {}
        self.scratch: list[tuple[np.dtype, str]] = []
        self._free: dict[tuple[np.dtype, str], list[str]] = {}
        self.shape = iteration_shape(block)
        self.read_before_written = self._reads_before_writes(block)
        self.alias_safe = len(self.read_before_written) == len(block.args) * len(block.ops[-1].operands)
        self.source = self._generate(block)
        self.source += self._generate_unfused(block)
        if has_symbolic(self.shape):
            self.source += self._generate_entry(block)
        exec(compile(self.source, self.filename, "exec"), self.namespace)
        self.function = self.namespace["run_tile"]
        self.unfused = self.namespace["run_unfused"]
        # Set by the kernel: the generated entry calls back into it.
        self.entry = self.namespace.get("entry")

    def _kind(self, value: Value) -> str:
        return FULL if value.type.shape == self.shape else ROW

    def _generate(self, block: Block) -> str:
        ops = block.ops[:-1]
        outputs = block.ops[-1].operands
        names: dict[Value, str] = {arg: f"i{k}" for k, arg in enumerate(block.args)}
        names.update({v: f"o{k}" for k, v in enumerate(outputs)})
        last_use = _last_uses(ops)
        # Scratch buffers holding no live value, by (dtype, kind); a select takes its mask from them.
        free = self._free
        body: list[str] = []
        for index, op in enumerate(ops):
            if op.name == CONST:
                names[op.results[0]] = self._literal(op)
                continue
            result = op.results[0]
            if result not in names:
                names[result] = self._scratch_for(result, op, index, names, last_use, free)
            for line in self._call(op, names, names[result]):
                body.append(line)
                self.line_ops[len(body) + 1] = op
            self._release_dead(op, index, names, last_use, free)
        params = [f"i{k}" for k in range(len(block.args))] + [f"o{k}" for k in range(len(outputs))]
        params += [f"s{k}" for k in range(len(self.scratch))]
        lines = [f"def run_tile({', '.join(params)}):"] + ["    " + line for line in body or ["pass"]]
        return "\n".join(lines) + "\n"

    def _generate_unfused(self, block: Block) -> str:
        """``run_unfused(inputs...)``: the region's ops one NumPy call each, as unfused code runs
        them, NumPy allocating every result (so each gets the memory order NumPy gives it) but
        those the lowering writes over a dying temporary (``overwrites``)."""
        body, outputs = self._unfused_body(block, self.source.count("\n") + 2)
        params = ", ".join(f"i{k}" for k in range(len(block.args)))
        lines = [f"def run_unfused({params}):"] + ["    " + line for line in body] + [f"    return ({outputs})"]
        return "\n".join(lines) + "\n"

    def _generate_entry(self, block: Block) -> str:
        """``entry(inputs..., out=None, out_may_overlap=False)`` for a group of symbolic size whose
        inputs are vectors and scalars: small vectors run the ops inline, as ``run_unfused``
        does (one NumPy call per op costs less than setting up tiles), with no dispatch on the
        way, also into an ``out=`` where the group reads every input before writing its one
        result (each op is one NumPy call on whole arrays, right however they overlap);
        anything else goes to the kernel (``general``). Empty when an input has more axes (its
        result could be large however small the check found it)."""
        vectors = [f"i{k}" for k, arg in enumerate(block.args) if arg.type.ndim == 1]
        if not vectors or any(arg.type.ndim > 1 for arg in block.args):
            return ""
        small = " and ".join(f"{name}.nbytes <= {SMALL_FUSED_BYTES}" for name in vectors)
        params = ", ".join(f"i{k}" for k in range(len(block.args)))
        single = len(block.ops[-1].operands) == 1
        last = block.ops[-1].operands[0].op
        # Only a ufunc takes ``out=`` here: a group ending in a select (``np.where``) allocates.
        ends_in_ufunc = last is not None and get_op(last.name).ufunc is not None
        into_out = single and ends_in_ufunc and self.alias_safe
        lines = [f"def entry({params}, out=None, out_may_overlap=False):"]
        first_line = self.source.count("\n") + 1  # of ``def entry``

        def inline(condition: str, out: bool) -> None:
            lines.extend([f"    if {condition}:", "        try:"])
            body, outputs = self._unfused_body(block, first_line + len(lines), into_out=out)
            lines.extend("            " + line for line in body)
            result = "out" if out else outputs[:-2] if single else "(" + outputs + ")"
            lines.append("        except Exception as error:")
            lines.append("            raise located(error) from error")
            lines.append(f"        return {result}")

        inline(f"out is None and {small}", out=False)
        if into_out:
            inline(small, out=True)
        lines.append(f"    return general({params}, out=out, out_may_overlap=out_may_overlap)")
        return "\n".join(lines) + "\n"

    def _unfused_body(self, block: Block, first_line: int, into_out: bool = False) -> tuple[list[str], str]:
        """The lines of the region's ops, one NumPy call each, and the outputs they compute
        (``"t1, t3, "``); ``line_ops`` maps each line, counted from ``first_line``, to its op.
        ``into_out``: the op computing the one result writes it into ``out``."""
        names: dict[Value, str] = {arg: f"i{k}" for k, arg in enumerate(block.args)}
        body: list[str] = []
        last = block.ops[-1].operands[0].op if into_out else None
        for op in block.ops[:-1]:
            if op.name == CONST:
                names[op.results[0]] = self._literal(op)
                continue
            names[op.results[0]] = f"t{len(body)}"
            kernel = f"k{len(body)}"
            self.namespace[kernel] = _unfused_kernel(op)
            arguments = [names[v] for v in op.operands]
            if op is last:
                arguments.append("out=out")
            elif "overwrites" in op.attrs:  # the backend's lowering chose a dying temporary
                arguments.append(f"out={names[op.operands[op.attrs['overwrites']]]}")
            self.line_ops[first_line + len(body)] = op
            body.append(f"{names[op.results[0]]} = {kernel}({', '.join(arguments)})")
        return body, "".join(f"{names[v]}, " for v in block.ops[-1].operands)

    def _call(self, op: Op, names: dict[Value, str], target: str) -> list[str]:
        """The lines that compute ``op`` on one tile into ``target``."""
        operands = [names[v] for v in op.operands]
        if _row_reduction(op) is not None:
            # Tiles keep whole rows and may drop leading axes: the reduced axis is the last one.
            self.namespace[f"r_{op.name}"] = _row_reduction(op)
            keepdims = op.attrs.get("keepdims", False)
            return [f"r_{op.name}({operands[0]}, axis=-1, keepdims={keepdims!r}, out={target})"]
        if get_op(op.name).select:
            return self._select(op, names, target)
        ufunc = get_op(op.name).ufunc
        assert ufunc is not None, f"{op.name} in a fused region has no ufunc"  # fusion admits ufuncs and selects
        self.namespace[f"u_{ufunc.__name__}"] = ufunc
        return [f"u_{ufunc.__name__}({', '.join(operands)}, out={target})"]

    def _select(self, op: Op, names: dict[Value, str], target: str) -> list[str]:
        """The lines of a select (``np.where``), with a scratch tile for its mask if it needs one."""
        kind = self._kind(op.results[0])

        def temporary(dtype: np.dtype) -> str:
            pool = self._free.get((dtype, kind))
            if pool:
                return pool.pop()
            self.scratch.append((dtype, kind))
            return f"s{len(self.scratch) - 1}"

        def release(name: str) -> None:
            self._free.setdefault(self.scratch[int(name[1:])], []).append(name)

        return SelectWriter(self.namespace, temporary, release).lines(op, names, target)

    @staticmethod
    def _reads_before_writes(block: Block) -> frozenset[tuple[int, int]]:
        """The (input, output) pairs where the ``out=`` buffer of the output may be the input: the
        region reads the input no later than it first writes the output (an ufunc reading and
        writing the very same elements in one call is fine). No pair in a group that reduces
        rows: a reduction reads a whole row, other elements than it writes."""
        ops = block.ops[:-1]
        if any(_row_reduction(op) is not None for op in ops):
            return frozenset()
        writes = [
            next((i for i, op in enumerate(ops) if op.results and op.results[0] is output), len(ops))
            for output in block.ops[-1].operands
        ]
        reads = [_last_input_read(ops, {arg}) for arg in block.args]
        return frozenset((k, r) for k, read in enumerate(reads) for r, write in enumerate(writes) if write >= read)

    def _literal(self, op: Op) -> str:
        value = op.attrs["value"]
        if isinstance(value, _INLINE_TYPES) and np.isfinite(value):
            return repr(value)
        name = f"K{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def _scratch_for(self, result: Value, op: Op, index: int, names, last_use, free) -> str:
        """A scratch buffer for ``result``: a dying operand's buffer (in place), a free one, or new."""
        slot = (result.type.dtype, self._kind(result))
        if _row_reduction(op) is None:
            for v in _overwritable_operands(op):
                name = names.get(v, "")
                if name.startswith("s") and last_use[v] == index and self.scratch[int(name[1:])] == slot:
                    return name
        pool = free.get(slot)
        if pool:
            return pool.pop()
        self.scratch.append(slot)
        return f"s{len(self.scratch) - 1}"

    def _release_dead(self, op: Op, index: int, names, last_use, free) -> None:
        """Return the buffers of operands that die here (unless the result took them over)."""
        taken = names[op.results[0]]
        for v in dict.fromkeys(op.operands):
            name = names.get(v, "")
            if name.startswith("s") and last_use[v] == index and name != taken:
                free.setdefault(self.scratch[int(name[1:])], []).append(name)


def _unfused_kernel(op: Op):
    """The NumPy function unfused code calls for a region op: its ufunc, or its kernel with the
    op's attributes (a reduction's axis and keepdims)."""
    opdef = get_op(op.name)
    attrs = kernel_attrs(op)
    if opdef.ufunc is not None and not attrs:
        return opdef.ufunc
    assert opdef.kernel is not None, f"{op.name} in a fused region has no kernel"  # ufuncs and reductions
    return functools.partial(opdef.kernel, **attrs) if attrs else opdef.kernel


def _late_operands(op: Op) -> set[int]:
    """Positions of the operands ``op``'s lines read after they first write its result: none for
    a ufunc (one call reads each element before writing it), some for a select."""
    return late_operands(op) if get_op(op.name).select else set()


def _overwritable_operands(op: Op) -> list[Value]:
    """The operands whose buffer ``op``'s result may take over: those it reads no later than it
    first writes the result, unless the same value is also an operand read later."""
    late = _late_operands(op)
    read_late = [v for i, v in enumerate(op.operands) if i in late]
    return [v for i, v in enumerate(op.operands) if i not in late and not any(v is w for w in read_late)]


def _last_input_read(ops: list[Op], inputs: set[Value]) -> float:
    """When the region last reads one of ``inputs``: op ``i``'s reads count as at ``i``, or at
    ``i + 0.5`` for reads after the op first writes its result (``_late_operands``). -1 if none."""
    last = -1.0
    for index, op in enumerate(ops):
        late = _late_operands(op)
        for position, v in enumerate(op.operands):
            if v in inputs:
                last = max(last, index + (0.5 if position in late else 0.0))
    return last


def _last_uses(ops: list[Op]) -> dict[Value, int]:
    last: dict[Value, int] = {}
    for index, op in enumerate(ops):
        for v in op.operands:
            last[v] = index
    return last


class FusedKernel:
    """The kernel of one fused op: ``kernel(*inputs, out=None)`` returns its result(s).

    Args:
        op: the ``fused`` op.
        tile_elements: elements per tile (the module docstring says how the default was chosen).

    ``out`` (an array for a one-result op, a sequence of arrays otherwise) receives the results
    when given, as the memory planner asks, or as the ``in-place-updates`` pass asks (an argument
    updated in place, None for the results the kernel allocates); otherwise fresh arrays are
    returned.
    """

    def __init__(self, op: Op, tile_elements: int | None = None):
        self.name = op.attrs.get("name", FUSED)
        block = op.regions[0].block
        self.program = TileProgram(block, self.name)
        self.whole_rows = has_row_reductions(block)
        self.single = len(op.results) == 1
        self.tile_elements = max(1, TILE_ELEMENTS if tile_elements is None else tile_elements)
        # Tiles write C-ordered results and reduce C-ordered rows, which is what unfused NumPy
        # does only when its inputs are laid out in C order (``_c_ordered``).
        self.keeps_eager_layout = self.whole_rows or bool(op.attrs.get("eager_layout"))
        self._scratch_lock = threading.Lock()
        self.symbolic_shape = self.program.shape
        self.symbolic_results = [(r.type.shape, r.type.dtype) for r in op.results]
        # A group whose sizes are known only at run time keeps one kernel per concrete shape.
        self.sized: dict[tuple[int, ...], FusedKernel] | None = None
        self._seen_once: set[tuple[int, ...]] = set()
        # What the executor calls: the generated entry where there is one (``_generate_entry``,
        # ``_one_tile_entry``).
        self.entry: Any = self
        if self.program.entry is not None:
            self.program.namespace.update(general=self, located=self._located)
            self.entry = self.program.entry
        if has_symbolic(self.symbolic_shape):
            self.sized = {}
            # Each symbolic size of a result must be an iteration axis's (``_sized_kernel`` reads it
            # there); else the graph is built again with those sizes static.
            iteration_sizes = set(self.symbolic_shape)
            for shape, _ in self.symbolic_results:
                stray = frozenset(d for d in shape if isinstance(d, SymExpr) and d not in iteration_sizes)
                if stray:
                    raise SymbolicSizeNeeded(symbols_in(shape), f"{self.name}: a result size is not an iteration size")
            return
        self._set_shape(self.symbolic_shape, self.symbolic_results)
        if self.split.count == 1 and not self.keeps_eager_layout and all(shape for shape, _ in self.result_types):
            self.entry = self._one_tile_entry(len(block.args))

    def _one_tile_entry(self, arity: int) -> Any:
        """A generated entry for a group that fits one tile: the tile function on the whole
        arrays, with the scratch views made once, writing a planned ``out=`` or fresh results,
        and nothing else on the way (the general ``__call__`` costs a few microseconds, as much
        as a small group's work). An ``out=`` an input may overlap, and a call while another
        thread holds the scratch, go to ``__call__``."""
        params = ", ".join(f"i{k}" for k in range(arity))
        outputs = ", ".join(f"o{k}" for k in range(len(self.result_types)))
        views = self._whole_views(self._shared_scratch())
        namespace = {
            "general": self,
            "run_tile": self.program.function,
            "misread": _tiles_may_misread,
            "acquire": self._scratch_lock.acquire,
            "release": self._scratch_lock.release,
            "located": self._located,
            "new_array": np.empty,
            **{f"s{k}": view for k, view in enumerate(views)},
            **{f"S{k}": shape for k, (shape, _) in enumerate(self.result_types)},
            **{f"D{k}": dtype for k, (_, dtype) in enumerate(self.result_types)},
        }
        scratch = "".join(f", s{k}" for k in range(len(views)))
        fresh = ", ".join(f"new_array(S{k}, D{k})" for k in range(len(self.result_types)))
        if self.program.alias_safe:
            # Every input is read before an output is written, and in one tile each op is one
            # NumPy call on the whole arrays, which NumPy makes right however they overlap.
            misread = "False"
        else:
            namespace["safe_pairs"] = self.program.read_before_written
            misread = f"misread(({params},), ({outputs},), False, out_may_overlap, safe_pairs)"
        # A group of several results is given None for those it allocates (``_outputs``).
        allocated = "".join(
            f"        if o{k} is None:\n            o{k} = new_array(S{k}, D{k})\n"
            for k in range(len(self.result_types))
            if not self.single
        )
        source = (
            f"def entry({params}, out=None, out_may_overlap=False):\n"
            f"    if out is None:\n"
            f"        {outputs}, = {fresh},\n"
            f"    else:\n"
            f"        {outputs}, = {'(out,)' if self.single else 'out'}\n"
            f"{allocated}"
            f"        if {misread}:\n"
            f"            return general({params}, out=out, out_may_overlap=out_may_overlap)\n"
            f"    if not acquire(False):\n"
            f"        return general({params}, out=out)\n"
            f"    try:\n"
            f"        run_tile({params}, {outputs}{scratch})\n"
            f"    except Exception as error:\n"
            f"        raise located(error) from error\n"
            f"    finally:\n"
            f"        release()\n"
            f"    return {outputs}{'' if self.single else ','}\n"
        )
        exec(compile(source, f"<dy2st-fused {self.name} entry>", "exec"), namespace)
        return namespace["entry"]

    def _set_shape(self, shape: tuple[Any, ...], result_types: list[tuple[tuple[Any, ...], np.dtype]]) -> None:
        """Size the tiling and scratch buffers for one concrete iteration shape."""
        self.shape = shape
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.result_types = result_types
        self.split = TileSplit(self.shape, self.tile_elements, self.whole_rows)
        self._scratch: list[np.ndarray] | None = None
        self._whole_view_cache: tuple[list[np.ndarray], list[np.ndarray]] | None = None

    def _sized_kernel(self, inputs: tuple) -> FusedKernel | None:
        """The kernel sized for these inputs (a group with symbolic sizes), or None where the
        group runs op by op, as unfused NumPy does: the first time a shape is seen, and for
        every new shape once ``_MAX_SIZED_KERNELS`` are kept. A loop whose slices change size at
        every iteration (``C[:i]``) would otherwise pay for a tile plan and scratch buffers per
        iteration and never use them again. The
        iteration shape is the broadcast of the inputs' shapes, and each symbolic size of a
        result is the size of the iteration axis that has it."""
        assert self.sized is not None
        shape = _broadcast_shape([getattr(a, "shape", ()) for a in inputs])
        kernel = self.sized.get(shape)
        if kernel is not None:
            return kernel
        if len(self.sized) >= _MAX_SIZED_KERNELS:
            return None  # more shapes than kernels kept: building one per call would cost more
        if shape not in self._seen_once:
            if len(self._seen_once) >= _MAX_SEEN_SHAPES:
                self._seen_once.clear()
            self._seen_once.add(shape)
            return None
        with self._scratch_lock:  # another thread may be adding a size
            if len(self.sized) >= _MAX_SIZED_KERNELS:
                return None
            sizes: dict[Any, int] = {d: n for d, n in zip(self.symbolic_shape, shape) if isinstance(d, SymExpr)}
            results = [
                (tuple(sizes[d] if isinstance(d, SymExpr) else d for d in s), t) for s, t in self.symbolic_results
            ]
            kernel = copy.copy(self)
            kernel.sized = None
            kernel._scratch_lock = threading.Lock()
            kernel._set_shape(shape, results)
            self.sized[shape] = kernel
        return kernel

    def __call__(self, *inputs: Any, out: Any = None, out_may_overlap: bool = False) -> Any:
        """The group's result(s) for ``inputs``, written into ``out`` when given. An ``out`` the
        memory planner gives overlaps an input only as that same input (a dying buffer reused);
        ``out_may_overlap`` says it may also overlap one elsewhere (a view of an array being
        updated, ``A[1:-1]``, while the group reads ``A[2:]``): then tiles never read what
        earlier tiles wrote."""
        if self.sized is not None:
            if out is None and _small_vectors(inputs):
                # What the backend does for a small group of static size (``runs_unfused``):
                # one NumPy call per op costs less than setting up tiles.
                return self._run_unfused(inputs, None)
            kernel = self._sized_kernel(inputs)
            if kernel is None:
                return self._run_unfused(inputs, out)
            return kernel(*inputs, out=out, out_may_overlap=out_may_overlap)
        if self.keeps_eager_layout and not all(map(_c_ordered, inputs)):
            return self._run_unfused(inputs, out)
        outputs = self._outputs(out)
        # The scratch buffers are reused across calls; a concurrent call (another thread) gets
        # its own rather than waiting.
        owned = self._scratch_lock.acquire(blocking=False)
        try:
            scratch = self._shared_scratch() if owned else self._new_scratch()
            one_safe_tile = self.program.alias_safe and self.split.count == 1  # see _one_tile_entry
            if out is not None and (
                (
                    not one_safe_tile
                    and _tiles_may_misread(
                        inputs, outputs, self.program.alias_safe, out_may_overlap, self.program.read_before_written
                    )
                )
                or (self.split.count > 1 and _floating_point_errors_raise())
            ):
                # An output buffer is also an input the tile still reads after writing it; or an
                # error could stop the tiles with ``out`` (an argument updated in place, a view of
                # one) half written, where eager code computes the whole value before storing it.
                staged = [np.empty(shape, dtype) for shape, dtype in self.result_types]
                self._run_tiles(inputs, staged, scratch)
                for target, value in zip(outputs, staged):
                    np.copyto(target, value)
            else:
                self._run_tiles(inputs, outputs, scratch)
        except Exception as error:
            raise self._located(error) from error
        finally:
            if owned:
                self._scratch_lock.release()
        if out is None:
            # Eager NumPy returns scalars from 0-d elementwise ops and full reductions.
            outputs = [o[()] if o.ndim == 0 else o for o in outputs]
        return outputs[0] if self.single else tuple(outputs)

    def _run_unfused(self, inputs: tuple, out: Any) -> Any:
        """The region as unfused NumPy runs it: for inputs not in C order, the memory order of the
        results, and with it how a reduction of them rounds, is NumPy's to choose (``order='K'``)."""
        try:
            results = self.program.unfused(*inputs)
        except Exception as error:
            raise self._located(error) from error
        if out is None:
            return results[0] if self.single else results
        outs = [out] if self.single else list(out)
        for k, (target, value) in enumerate(zip(outs, results)):
            if target is None:
                outs[k] = value  # a result the caller left to the kernel (``_outputs``)
            else:
                np.copyto(target, value)
        return outs[0] if self.single else tuple(outs)

    # --- buffers ---------------------------------------------------------------------------
    def _outputs(self, out: Any) -> list[np.ndarray]:
        """The arrays the results go into: ``out``, or new ones. A group of several results may be
        given None for some of them (``out=(a0, None)``: the in-place-updates pass writes one
        result into an operand); those are new too."""
        if out is None:
            return [np.empty(shape, dtype) for shape, dtype in self.result_types]
        outs = [out] if self.single else list(out)
        for k, (o, (shape, dtype)) in enumerate(zip(outs, self.result_types)):
            if o is None:
                outs[k] = np.empty(shape, dtype)
            elif o.shape != shape or o.dtype != dtype:
                raise ValueError(f"{self.name}: out= must be {dtype}{list(shape)}, got {o.dtype}{list(o.shape)}")
        return outs

    def _new_scratch(self) -> list[np.ndarray]:
        # Big enough for a flat tile and for a tile of the split (a row longer than a tile).
        full = max(1, min(max(self.split.max_tile_elements, self.tile_elements), self.size))
        row = max(1, full // (self.shape[-1] or 1)) if self.shape else 1
        return [np.empty(full if kind == FULL else row, dtype) for dtype, kind in self.program.scratch]

    def _shared_scratch(self) -> list[np.ndarray]:
        if self._scratch is None:
            self._scratch = self._new_scratch()
        return self._scratch

    def _whole_views(self, scratch: list[np.ndarray]) -> list[np.ndarray]:
        """The scratch buffers shaped as the whole iteration space (or its rows), cached."""
        cached = self._whole_view_cache
        if cached is not None and cached[0] is scratch:
            return cached[1]
        rows = self.shape[:-1] + (1,) if self.shape else ()
        views = [
            s[: _count(self.shape if kind == FULL else rows)].reshape(self.shape if kind == FULL else rows)
            for s, (_, kind) in zip(scratch, self.program.scratch)
        ]
        self._whole_view_cache = (scratch, views)
        return views

    # --- tiling ----------------------------------------------------------------------------
    def _run_tiles(self, inputs: tuple, outputs: list[np.ndarray], scratch: list[np.ndarray]) -> None:
        if self.split.count == 1:
            # Everything fits in one tile: the ops broadcast the inputs themselves, as eager does.
            self.program.function(*inputs, *outputs, *self._whole_views(scratch))
            return
        flat = None if self.whole_rows else self._flat_views(inputs, outputs)
        if flat is not None:
            FlatTiles(*flat, self).run(scratch)
        else:
            BroadcastTiles(inputs, outputs, self).run(scratch)

    def _flat_views(self, inputs: tuple, outputs: list[np.ndarray]) -> tuple[list, list] | None:
        """1-D views of everything, when all inputs are full-shape C-contiguous or one element.

        Runs on every call, so it reads array attributes directly (``np.ndim`` and friends cost
        a dispatch each).
        """
        views = []
        for a in inputs:
            shape = getattr(a, "shape", ())
            if shape == self.shape:
                view = _flat_view(a)
                if view is None:
                    return None
                views.append(view)
            elif not shape:
                views.append(a)
            elif a.size == 1:
                views.append(a.reshape(()))
            else:
                return None
        out_views = [_flat_view(o) for o in outputs]
        if any(v is None for v in out_views):
            return None
        return views, out_views

    # --- errors ----------------------------------------------------------------------------
    def _located(self, error: Exception) -> Exception:
        """The error re-raised naming the absorbed op and the user's line it came from."""
        op = self._failing_op(error)
        if op is None:
            return error
        where = f" ({op.loc.short})" if op.loc else ""
        message = f"while executing {describe_op(op)}{where} in {self.name}: {type(error).__name__}: {error}"
        return runtime_error(error, message, op.loc)

    def _failing_op(self, error: BaseException) -> Op | None:
        tb, lineno = error.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.program.filename:
                lineno = tb.tb_lineno
            tb = tb.tb_next
        return self.program.line_ops.get(lineno) if lineno is not None else None


class TileSplit:
    """How an iteration shape is cut into tiles: along ``axis``, ``chunk`` indices at a time.

    Tiles are taken along the outermost axis whose trailing block (``inner`` elements) fits in a
    tile. With ``whole_rows`` (the group reduces over the last axis) the last axis is never cut.
    """

    def __init__(self, shape: tuple[int, ...], tile_elements: int, whole_rows: bool):
        self.shape = shape
        last_cuttable = len(shape) - (2 if whole_rows else 1)
        self.axis, self.inner = _split_axis(shape, tile_elements, last_cuttable)
        extent = shape[self.axis] if self.axis is not None else 1
        self.chunk = max(1, min(extent, tile_elements // max(self.inner, 1)))
        self.chunks_per_row = max(1, -(-extent // self.chunk))
        outer = 1
        for d in shape[: self.axis or 0]:
            outer *= d
        self.count = outer * self.chunks_per_row if extent else 0
        self.max_tile_elements = self.chunk * self.inner

    def tile(self, index: int) -> tuple[tuple, int]:
        """The index expression of tile ``index`` and how many indices of ``axis`` it covers."""
        if self.axis is None:
            return (Ellipsis,), 1
        row, chunk = divmod(index, self.chunks_per_row)
        outer: tuple[int, ...] = ()
        for d in reversed(self.shape[: self.axis]):
            row, i = divmod(row, d)
            outer = (i,) + outer
        start = chunk * self.chunk
        stop = min(start + self.chunk, self.shape[self.axis])
        return outer + (slice(start, stop),), stop - start


def _split_axis(shape: tuple[int, ...], tile_elements: int, last_cuttable: int) -> tuple[int | None, int]:
    """The outermost axis ``k <= last_cuttable`` with ``prod(shape[k+1:]) <= tile_elements`` (or the
    innermost cuttable axis when no block fits), and that product. ``None`` when nothing may be cut."""
    inner = 1
    for d in shape[last_cuttable + 1 :]:
        inner *= d
    if last_cuttable < 0:
        return None, inner
    for axis in range(last_cuttable, 0, -1):
        if inner * shape[axis] > tile_elements:
            return axis, inner
        inner *= shape[axis]
    return 0, inner


class FlatTiles:
    """Contiguous tiles of flattened inputs and outputs (the common, fast case)."""

    def __init__(self, views: list, out_views: list[np.ndarray], kernel: FusedKernel):
        self.views = views
        self.out_views = out_views
        self.tile = kernel.program.function
        self.size = kernel.size
        self.step = kernel.tile_elements
        self.sliced = [getattr(v, "ndim", 0) == 1 for v in views]

    def run(self, scratch: list[np.ndarray]) -> None:
        n, step, tile = self.size, self.step, self.tile
        if n <= step:
            tile(*self.views, *self.out_views, *(s[:n] for s in scratch))
            return
        for start in range(0, n, step):
            stop = min(start + step, n)
            part = slice(start, stop)
            scr = scratch if stop - start == step else [s[: stop - start] for s in scratch]
            args = [v[part] if cut else v for v, cut in zip(self.views, self.sliced)]
            tile(*args, *(o[part] for o in self.out_views), *scr)


class BroadcastTiles:
    """Tiles of inputs broadcast (as views) to the iteration shape, cut as ``TileSplit`` says.

    In a group with row reductions, inputs without a full last axis are broadcast to the row shape
    (last axis 1) instead, so ops on reduced rows see one value per row.
    """

    def __init__(self, inputs: tuple, outputs: list[np.ndarray], kernel: FusedKernel):
        shape = kernel.shape
        row_shape = shape[:-1] + (1,) if shape else shape
        self.views = []
        for a in inputs:
            a = np.asarray(a)
            full = not kernel.whole_rows or (a.ndim > 0 and a.shape[-1] != 1) or shape[-1:] == (1,)
            self.views.append(np.broadcast_to(a, shape if full else row_shape))
        self.outputs = outputs
        self.split = kernel.split
        self.tile = kernel.program.function
        self.scratch_kinds = [kind for _, kind in kernel.program.scratch]

    def run(self, scratch: list[np.ndarray]) -> None:
        split, tile = self.split, self.tile
        trailing = split.shape[split.axis + 1 :] if split.axis is not None else split.shape
        for index in range(split.count):
            where, extent = split.tile(index)
            rows = ((extent,) if split.axis is not None else ()) + trailing
            scr = [self._scratch_view(s, kind, rows) for s, kind in zip(scratch, self.scratch_kinds)]
            tile(*(v[where] for v in self.views), *(o[where] for o in self.outputs), *scr)

    @staticmethod
    def _scratch_view(buffer: np.ndarray, kind: str, rows: tuple[int, ...]) -> np.ndarray:
        shape = rows if kind == FULL else rows[:-1] + (1,)
        count = 1
        for d in shape:
            count *= d
        return buffer[:count].reshape(shape)


def _c_ordered(operand: Any) -> bool:
    """Does NumPy lay out a result computed from ``operand`` in C order, as far as it decides?

    For ``order='K'`` NumPy orders the axes by the operands' strides, ignoring broadcast and
    length-1 axes, and C order wins ties and conflicts: strides that never grow from an outer
    axis to an inner one (and are not negative) keep C order. Runs at every call of a kernel
    that keeps eager layouts, so the common case (C-contiguous, or no array) returns first."""
    flags = getattr(operand, "flags", None)
    if flags is None or flags.c_contiguous:
        return True
    outer_stride = None
    for length, stride in zip(operand.shape, operand.strides):
        if length == 1 or stride == 0:
            continue
        if stride < 0 or (outer_stride is not None and stride > outer_stride):
            return False
        outer_stride = stride
    return True


def _flat_view(array: np.ndarray) -> np.ndarray | None:
    """A 1-D view of a C-contiguous array, or None when flattening would copy."""
    try:
        return array.reshape(-1, copy=False)
    except ValueError:
        return None


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """``np.broadcast_shapes`` for the shapes of one call, at a fraction of its cost (it makes
    arrays to broadcast): a group of symbolic size asks at every call."""
    ndim = max(map(len, shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for axis, size in enumerate(shape, ndim - len(shape)):
            if size != 1:
                if result[axis] not in (1, size):
                    return np.broadcast_shapes(*shapes)  # raises NumPy's own ValueError
                result[axis] = size
    return tuple(result)


def _tiles_may_misread(
    inputs: tuple,
    outputs: tuple | list,
    alias_safe: bool,
    may_overlap: bool,
    read_before_written: frozenset[tuple[int, int]] = frozenset(),
) -> bool:
    """Could a tile read an input element that a tile already overwrote? Only where an input
    shares memory with an output, and, where the program reads that input before it writes that
    output (``alias_safe``: every pair; else the pairs of ``read_before_written``), only where
    they are not the very same elements."""
    if alias_safe and not may_overlap:
        return False
    for k, a in enumerate(inputs):
        if not isinstance(a, np.ndarray):
            continue
        for r, o in enumerate(outputs):
            safe = alias_safe or (k, r) in read_before_written
            if a is o:
                if not safe:
                    return True
            elif np.may_share_memory(a, o) and not (safe and _same_elements(a, o)) and share_elements(a, o):
                return True
    return False


def _floating_point_errors_raise() -> bool:
    """Does a floating-point error raise here (``np.errstate(divide="raise")`` around the call)?"""
    return "raise" in np.geterr().values()


def _same_elements(a: np.ndarray, b: np.ndarray) -> bool:
    """Do ``a`` and ``b`` view the same elements in the same positions?"""
    return (
        a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def _small_vectors(inputs: tuple) -> bool:
    """Are the inputs at most 1-D (so the results are no larger) and small (``SMALL_FUSED_BYTES``)?"""
    for a in inputs:
        if getattr(a, "ndim", 0) > 1 or getattr(a, "nbytes", 0) > SMALL_FUSED_BYTES:
            return False
    return True


_MAX_SIZED_KERNELS = 16
"""Concrete shapes a fused kernel with symbolic sizes keeps tile plans and scratch buffers for."""

_MAX_SEEN_SHAPES = 256
"""Shapes a fused kernel with symbolic sizes remembers having run once (then forgets them all)."""


def build_fused_kernel(op: Op) -> FusedKernel:
    """The ``kernel_factory`` of the ``fused`` op: a tiled kernel for this op instance."""
    return FusedKernel(op)
