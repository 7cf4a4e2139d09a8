"""The fused-kernel runtime: run a ``fused`` op's region over cache-sized tiles of its output.

For each fused op the backend generates one Python function that evaluates the region on one tile,
calling each op's ufunc with ``out=`` into a scratch buffer (or, for the group's outputs, straight
into the output tile)::

    def tile(i0, o0, s0):
        u_multiply(i0, 2.0, out=s0)
        u_tanh(s0, out=s0)
        u_add(s0, i0, out=o0)

and a driver that slices the inputs and outputs tile by tile and calls it. Intermediates live in
scratch buffers of one tile each, reused across tiles and calls, so they stay in cache and never
reach main memory; a buffer is reused in place as soon as the value it holds is dead.

Bit-identical to unfused NumPy: every op calls the same ufunc on operands of the same dtypes
(Python-scalar constants are passed as the same Python scalars, so NumPy 2's weak promotion picks
the same loop), and ``out=`` always has the dtype the unfused op would have produced, so NumPy
selects the same inner loop and never casts.

Tiling: when every input either has the output's shape and is C-contiguous or holds one element,
inputs and outputs are flattened and cut into contiguous tiles of ``TILE_ELEMENTS``. Otherwise
(true broadcasting, strided inputs) inputs are broadcast to the output shape as views and tiles are
taken along the outermost axis whose trailing block still fits in a tile.

Tile size, measured on the 2-core development machine for W1 (tanh-GELU, scale, bias; 11 ops) on
float32, median of 15 runs (ms):

    elements/tile   4K     8K     16K    32K    64K    128K   256K
    4M  (1 thread)  25.5   25.1   25.1   25.2   25.5   26.2   28.4
    64K (1 thread)  0.42   0.40   0.39   0.39   0.38   0.38   0.38

The curve is flat between 8K and 64K elements (a 64 KiB float32 tile keeps the few live scratch
buffers inside the 1-2 MiB L2 cache); below that Python per-tile overhead grows, above it the
buffers spill. 16K elements it is: at 4M that is 256 tiles, and the scratch of W1 (2 live
buffers after in-place reuse) is 128 KiB. Running tiles on 2 threads was measured and not kept
(see ``docs`` in the module's git history and the report): the float32 ``tanh`` loop dominates and
the second core is shared with the rest of the machine.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from dy2st.errors import Dy2stRuntimeError
from dy2st.ir.core import Block, Op, Value
from dy2st.ops.registry import get_op

TILE_ELEMENTS = 16384
PARALLEL = False
_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor
        _POOL = ThreadPoolExecutor(1)
    return _POOL

_INLINE_TYPES = (bool, int, float)


class TileProgram:
    """The generated per-tile function of one fused region, and what it needs to run.

    Attributes:
        source: the generated Python source of ``tile(inputs..., outputs..., scratch...)``.
        function: the compiled ``tile`` function.
        scratch_dtypes: one dtype per scratch buffer the function takes.
        line_ops: generated line number -> the region op that line runs (for error messages).
        filename: the pseudo file name the source was compiled under.
    """

    def __init__(self, block: Block, name: str):
        self.filename = f"<dy2st-fused {name}>"
        self.namespace: dict[str, Any] = {}
        self.line_ops: dict[int, Op] = {}
        self.scratch_dtypes: list[np.dtype] = []
        self.source = self._generate(block)
        self.alias_safe = self._outputs_written_after_inputs_read(block)
        exec(compile(self.source, self.filename, "exec"), self.namespace)
        self.function = self.namespace["tile"]

    def _generate(self, block: Block) -> str:
        ops = block.ops[:-1]
        outputs = block.ops[-1].operands
        names: dict[Value, str] = {arg: f"i{k}" for k, arg in enumerate(block.args)}
        names.update({v: f"o{k}" for k, v in enumerate(outputs)})
        last_use = _last_uses(ops)
        free: dict[np.dtype, list[str]] = {}
        body: list[str] = []
        for index, op in enumerate(ops):
            if op.name == "const":
                names[op.results[0]] = self._literal(op)
                continue
            result = op.results[0]
            operands = [names[v] for v in op.operands]
            if result not in names:
                names[result] = self._scratch_for(result, op, index, names, last_use, free)
            ufunc = get_op(op.name).ufunc
            call = f"u_{ufunc.__name__}({', '.join(operands)}, out={names[result]})"
            self.namespace[f"u_{ufunc.__name__}"] = ufunc
            body.append(call)
            self.line_ops[len(body) + 1] = op
            self._release_dead(op, index, names, last_use, free)
        params = [f"i{k}" for k in range(len(block.args))] + [f"o{k}" for k in range(len(outputs))]
        params += [f"s{k}" for k in range(len(self.scratch_dtypes))]
        lines = [f"def tile({', '.join(params)}):"] + ["    " + line for line in body or ["pass"]]
        return "\n".join(lines) + "\n"

    @staticmethod
    def _outputs_written_after_inputs_read(block: Block) -> bool:
        """Whether an ``out=`` buffer may be one of the inputs: no input is read after any output
        is written (an ufunc reading and writing the very same elements in one call is fine)."""
        ops = block.ops[:-1]
        last_use = _last_uses(ops)
        last_read = max((last_use.get(arg, -1) for arg in block.args), default=-1)
        outputs = set(block.ops[-1].operands)
        first_write = min((i for i, op in enumerate(ops) if op.results and op.results[0] in outputs), default=len(ops))
        return first_write >= last_read

    def _literal(self, op: Op) -> str:
        value = op.attrs["value"]
        if isinstance(value, _INLINE_TYPES) and np.isfinite(value):
            return repr(value)
        name = f"K{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def _scratch_for(self, result: Value, op: Op, index: int, names, last_use, free) -> str:
        """A scratch buffer for ``result``: a dying operand's buffer (in place), a free one, or new."""
        dtype = result.type.dtype
        for v in op.operands:
            name = names.get(v, "")
            if name.startswith("s") and last_use[v] == index and self.scratch_dtypes[int(name[1:])] == dtype:
                return name
        pool = free.get(dtype)
        if pool:
            return pool.pop()
        self.scratch_dtypes.append(dtype)
        return f"s{len(self.scratch_dtypes) - 1}"

    def _release_dead(self, op: Op, index: int, names, last_use, free) -> None:
        """Return the buffers of operands that die here (unless the result took them over)."""
        taken = names[op.results[0]]
        for v in dict.fromkeys(op.operands):
            name = names.get(v, "")
            if name.startswith("s") and last_use[v] == index and name != taken:
                free.setdefault(self.scratch_dtypes[int(name[1:])], []).append(name)


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
    when given, as the memory planner asks; otherwise fresh arrays are returned.
    """

    def __init__(self, op: Op, tile_elements: int | None = None):
        self.name = op.attrs.get("name", "fused")
        self.program = TileProgram(op.regions[0].block, self.name)
        self.shape = op.results[0].type.shape
        self.size = op.results[0].type.size
        self.result_dtypes = [r.type.dtype for r in op.results]
        self.single = len(op.results) == 1
        self.tile_elements = max(1, TILE_ELEMENTS if tile_elements is None else tile_elements)
        self._scratch: list[np.ndarray] | None = None
        self._scratch2: list[np.ndarray] | None = None
        self._scratch_lock = threading.Lock()

    def __call__(self, *inputs: Any, out: Any = None) -> Any:
        outputs = self._outputs(out)
        # The scratch buffers are reused across calls; a concurrent call (another thread) gets
        # its own rather than waiting.
        owned = self._scratch_lock.acquire(blocking=False)
        try:
            scratch = self._shared_scratch() if owned else self._new_scratch()
            if out is not None and not self.program.alias_safe and _overlaps(inputs, outputs):
                # An output buffer is also an input the tile still reads after writing it.
                staged = [np.empty(self.shape, dtype) for dtype in self.result_dtypes]
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
        if out is None and self.shape == ():
            # Eager NumPy returns scalars from 0-d elementwise ops.
            outputs = [o[()] for o in outputs]
        return outputs[0] if self.single else tuple(outputs)

    # --- buffers ---------------------------------------------------------------------------
    def _outputs(self, out: Any) -> list[np.ndarray]:
        if out is None:
            return [np.empty(self.shape, dtype) for dtype in self.result_dtypes]
        outs = [out] if self.single else list(out)
        for o, dtype in zip(outs, self.result_dtypes):
            if o.shape != self.shape or o.dtype != dtype:
                raise ValueError(f"{self.name}: out= must be {dtype}{list(self.shape)}, got {o.dtype}{list(o.shape)}")
        return outs

    def _new_scratch(self) -> list[np.ndarray]:
        n = min(self.tile_elements, max(self.size, 1))
        return [np.empty(n, dtype) for dtype in self.program.scratch_dtypes]

    def _shared_scratch(self) -> list[np.ndarray]:
        if self._scratch is None:
            self._scratch = self._new_scratch()
        return self._scratch

    # --- tiling ----------------------------------------------------------------------------
    def _run_tiles(self, inputs: tuple, outputs: list[np.ndarray], scratch: list[np.ndarray]) -> None:
        flat = self._flat_views(inputs, outputs)
        tiles = FlatTiles(*flat, self) if flat is not None else BroadcastTiles(inputs, outputs, self)
        if PARALLEL and tiles.count >= 2:
            half = tiles.count // 2
            worker = _pool().submit(tiles.run, self._helper_scratch(), half, tiles.count)
            tiles.run(scratch, 0, half)
            worker.result()
        else:
            tiles.run(scratch, 0, tiles.count)

    def _helper_scratch(self):
        if self._scratch2 is None:
            self._scratch2 = self._new_scratch()
        return self._scratch2

    def _flat_views(self, inputs: tuple, outputs: list[np.ndarray]):
        """1-D views of everything, when all inputs are full-shape C-contiguous or one element."""
        if not all(o.flags.c_contiguous for o in outputs):
            return None
        views = []
        for a in inputs:
            if np.ndim(a) == 0:
                views.append(a)
            elif np.size(a) == 1 and self.size != 1:
                views.append(np.asarray(a).reshape(()))
            elif np.shape(a) == self.shape and a.flags.c_contiguous:
                views.append(a.reshape(-1))
            else:
                return None
        return views, [o.reshape(-1) for o in outputs]

    # --- errors ----------------------------------------------------------------------------
    def _located(self, error: Exception) -> Exception:
        """The error re-raised naming the absorbed op and the user's line it came from."""
        op = self._failing_op(error)
        if op is None:
            return error
        from dy2st.backend.numpy.executor import describe_op

        where = f" ({op.loc.short})" if op.loc else ""
        message = f"while executing {describe_op(op)}{where} in {self.name}: {type(error).__name__}: {error}"
        return Dy2stRuntimeError(message, op.loc)

    def _failing_op(self, error: BaseException) -> Op | None:
        tb, lineno = error.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.program.filename:
                lineno = tb.tb_lineno
            tb = tb.tb_next
        return self.program.line_ops.get(lineno) if lineno is not None else None


class FlatTiles:
    """Contiguous tiles of flattened inputs and outputs (the common, fast case)."""

    def __init__(self, views: list, out_views: list[np.ndarray], kernel: FusedKernel):
        self.views = views
        self.out_views = out_views
        self.tile = kernel.program.function
        self.size = kernel.size
        self.step = kernel.tile_elements
        self.count = max(1, -(-self.size // self.step))
        self.sliced = [np.ndim(v) == 1 for v in views]

    def run(self, scratch: list[np.ndarray], first: int, last: int) -> None:
        """Run tiles ``first`` to ``last - 1`` with one set of scratch buffers."""
        n, step, tile = self.size, self.step, self.tile
        for index in range(first, last):
            start, stop = index * step, min((index + 1) * step, n)
            part = slice(start, stop)
            full = not scratch or stop - start == len(scratch[0])
            scr = scratch if full else [s[: stop - start] for s in scratch]
            args = [v[part] if cut else v for v, cut in zip(self.views, self.sliced)]
            tile(*args, *(o[part] for o in self.out_views), *scr)


class BroadcastTiles:
    """Tiles along the outermost axis whose trailing block fits in a tile, over broadcast views."""

    def __init__(self, inputs: tuple, outputs: list[np.ndarray], kernel: FusedKernel):
        self.shape = shape = kernel.shape
        self.views = [np.broadcast_to(np.asarray(a), shape) for a in inputs]
        self.outputs = outputs
        self.tile = kernel.program.function
        self.axis, self.inner = _split_axis(shape, kernel.tile_elements)
        self.chunk = max(1, kernel.tile_elements // max(self.inner, 1))
        extent = shape[self.axis] if shape else 1
        self.chunks_per_row = max(1, -(-extent // self.chunk))
        outer = 1
        for d in shape[: self.axis]:
            outer *= d
        self.count = outer * self.chunks_per_row if extent else 0

    def run(self, scratch: list[np.ndarray], first: int, last: int) -> None:
        """Run tiles ``first`` to ``last - 1`` with one set of scratch buffers."""
        shape, axis = self.shape, self.axis
        for index in range(first, last):
            row, chunk = divmod(index, self.chunks_per_row)
            outer = tuple(int(i) for i in np.unravel_index(row, shape[:axis])) if axis else ()
            start = chunk * self.chunk
            stop = min(start + self.chunk, shape[axis])
            where = outer + (slice(start, stop),)
            rows = (stop - start,) + shape[axis + 1 :]
            scr = [s[: (stop - start) * self.inner].reshape(rows) for s in scratch]
            self.tile(*(v[where] for v in self.views), *(o[where] for o in self.outputs), *scr)


def _overlaps(inputs: tuple, outputs: list[np.ndarray]) -> bool:
    return any(isinstance(a, np.ndarray) and np.may_share_memory(a, o) for a in inputs for o in outputs)


def _split_axis(shape: tuple[int, ...], tile_elements: int) -> tuple[int, int]:
    """The outermost axis ``k`` with ``prod(shape[k+1:]) <= tile_elements``, and that product."""
    inner = 1
    for axis in range(len(shape) - 1, -1, -1):
        if inner * shape[axis] > tile_elements:
            return axis, inner
        inner *= shape[axis]
    return 0, inner // shape[0] if shape and shape[0] else 1


def build_fused_kernel(op: Op) -> FusedKernel:
    """The ``kernel_factory`` of the ``fused`` op: a tiled kernel for this op instance."""
    return FusedKernel(op)
