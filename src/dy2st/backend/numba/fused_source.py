"""Write a fused elementwise group the ``compiled-regions`` pass marked as Numba functions: one
loop over the elements, each computing the group's ops on scalars, so the inputs are read once,
the results written once, and no temporary array exists. Example, ``0.5 * x * (1 + np.tanh(x))``
on float32::

    @numba.njit(cache=CACHE, error_model="python", nogil=True)
    def fused_0_serial(n, p0, r0):
        f0 = p0.reshape(n)
        g0 = r0.reshape(n)
        for k in range(n):
            e0 = f0[k]
            v1 = np.float32(np.multiply(np.float32(0.5), e0))
            v2 = _tanh_f32(e0)
            v3 = np.float32(np.add(np.float32(1.0), v2))
            g0[k] = np.float32(np.multiply(v1, v3))

``_tanh_f32`` is our vectorized tanh (``vector_math``), from the module's prelude. The
``_parallel`` twin runs the loop with ``numba.prange`` on every core, for large arrays. The
arrays are C-contiguous and of the group's shape (``fused_kernel`` checks that and gives anything
else to the NumPy tier's tiled kernel).
"""

from __future__ import annotations

from dy2st.backend.numba.scalar_source import ScalarSource
from dy2st.backend.numba.support import representation
from dy2st.ir.core import Op
from dy2st.ir.opcodes import CONST


class FusedSource(ScalarSource):
    """The Numba source of one fused group: ``{name}_serial`` and ``{name}_parallel``.

    Attributes:
        inputs: the group's block arguments (scalars and arrays), in the order the functions
            take them after the element count; the results' arrays follow them.
        source: both functions' source.
    """

    per_element = True

    def __init__(self, op: Op, name: str):
        super().__init__()
        self.op = op
        self.name = name
        self.inputs = list(op.regions[0].block.args)
        self.source = "\n\n".join(self.write(parallel) for parallel in (False, True))

    def write(self, parallel: bool) -> str:
        self.lines = []
        block = self.op.regions[0].block
        for k, arg in enumerate(self.inputs):
            if arg.type.ndim:
                self.line(1, f"f{k} = p{k}.reshape(n)")
                self.names[arg] = f"e{k}"
            else:
                self.names[arg] = f"p{k}"
        for k in range(len(self.op.results)):
            self.line(1, f"g{k} = r{k}.reshape(n)")
        self.line(1, f"for k in {'numba.prange' if parallel else 'range'}(n):")
        for k, arg in enumerate(self.inputs):
            if arg.type.ndim:
                self.line(2, f"e{k} = f{k}[k]")
        for inner in block.ops[:-1]:
            if inner.name == CONST:
                self.emit_const(inner, 2)
            else:
                self.assign(inner, 2, self.ufunc_call(inner))
        for k, (result, value) in enumerate(zip(self.op.results, block.ops[-1].operands)):
            self.line(2, f"g{k}[k] = {self.converted(value, representation(result))}")
        params = ["n", *(f"p{k}" for k in range(len(self.inputs))), *(f"r{k}" for k in range(len(self.op.results)))]
        suffix = "parallel" if parallel else "serial"
        decorator = f'@numba.njit(cache=CACHE, error_model="python", nogil=True{", parallel=True" if parallel else ""})'
        return "\n".join([decorator, f"def {self.name}_{suffix}({', '.join(params)}):", *self.lines]) + "\n"
