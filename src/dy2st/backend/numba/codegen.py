"""The executor functions of the compiled tier: the NumPy tier's generated function, with each
compiled loop called where the NumPy tier would run it.

A compiled loop takes C-ordered, aligned, writeable arrays (its machine code is specialised for
them); the call checks that and runs the NumPy tier's code for the loop otherwise, so a strided
view or a read-only array still gives NumPy's answer::

    if a0.flags.carray:
        c1, c2, = loop_0(a0, v4)
    else:
        w5 = a0
        ...                      # the loop as the NumPy tier runs it
        c1, c2 = w5, w6

Before the compiled code is ready, the tiered executor runs a variant that times the marked loops
(``WatchingCodeGenerator``): once they have taken long enough, it starts compiling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dy2st.backend.numba.fused_kernel import CompiledFusedKernel
from dy2st.backend.numba.support import COMPILED_KERNEL, COMPILED_LOOP
from dy2st.backend.numpy.codegen import CodeGenerator
from dy2st.ir.core import CONST, Graph, Op, Value


@dataclass
class CompiledLoop:
    """A loop compiled to machine code.

    Attributes:
        function: the Numba dispatcher, compiled for ``params``' types.
        entry: the entry of its machine code for ``params``' types (``kernel_cache.machine_entry``),
            which the executor calls.
        params: the values it takes, in order.
        returned: (position in ``loops``, result index) of the results it returns; each other
            result is its loop's operand at that index, an array the loop updated in place.
        errors: the message of each error it raises -> the op raising it.
        source: its Numba source.
        loops: the loops it runs, one after the other (a ``compiled_sequence``'s, or one).
    """

    function: Any
    params: list[Value]
    returned: list[tuple[int, int]]
    errors: dict[str, Op] = field(default_factory=dict)
    source: str = ""
    loops: list[Op] = field(default_factory=list)
    entry: Any = None


def scalar_of(value: Any) -> Any:
    """A 0-d value as the scalar a compiled function takes (the NumPy tier may hold a 0-d array)."""
    return value[()] if type(value) is np.ndarray else value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _constants_between(loops: list[Op]) -> list[Op]:
    """The ops of a sequence's block between its first and last loop other than the loops: the
    ``compiled-regions`` pass lets only constants be there."""
    block = loops[0].parent
    assert block is not None
    ops = block.ops
    between = [op for op in ops[ops.index(loops[0]) : ops.index(loops[-1])] if op not in loops]
    assert all(op.name == CONST for op in between), "a compiled sequence holds loops and constants only"
    return between


class CompiledCodeGenerator(CodeGenerator):
    """The NumPy tier's code generator, calling compiled loops (``loops``) and fused kernels
    (``kernels``) where it has them."""

    def __init__(
        self, graph: Graph, writebacks: dict[int, int] | None = None, plan: bool = True, *, loops=None, kernels=None
    ):
        super().__init__(graph, writebacks, plan)
        self.loops: dict[Op, CompiledLoop] = loops or {}
        self.kernels: dict[Op, CompiledFusedKernel] = kernels or {}

    def kernel_for(self, op: Op) -> str:
        return self.compiled_kernel(op) or super().kernel_for(op)

    def out_kernel_for(self, op: Op) -> str:
        return self.compiled_kernel(op) or super().out_kernel_for(op)

    def compiled_kernel(self, op: Op) -> str | None:
        """The name of a fused group's compiled kernel (which takes ``out=`` too), if it has one."""
        compiled = self.kernels.get(op)
        return None if compiled is None else self.bind(compiled, self.fresh(f"k_{op.name}_compiled_"))

    def emit_while_loop(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        compiled = self.loops.get(op)
        if compiled is None:
            super().emit_while_loop(op, depth, aliasing)
            return
        if op is not compiled.loops[0]:
            return  # a later loop of a sequence: the call of the first ran it
        for between in _constants_between(compiled.loops):  # named now: the call may take them
            self.emit_op(between, depth, aliasing)
        function = self.bind(compiled.entry, self.fresh("loop_"))
        arguments = [self.argument(value) for value in compiled.params]
        tests = [f"{name}.flags.carray" for name, value in zip(arguments, compiled.params) if value.type.ndim > 0]
        # A Python int beyond 64 bits (``big = 2**64``) runs the NumPy tier's loop.
        tests += [
            f"{_INT64_MIN} <= {name} <= {_INT64_MAX}"
            for name, value in zip(arguments, compiled.params)
            if value.type.ndim == 0 and value.type.weak and value.type.dtype.kind in "iu" and name.isidentifier()
        ]
        results = {value: self.fresh("c") for loop in compiled.loops for value in loop.results}
        returned = [results[compiled.loops[p].results[k]] for p, k in compiled.returned]
        self.line(depth, f"if {' and '.join(tests) or 'True'}:", op)
        call = f"{function}({', '.join(arguments)})"
        self.line(depth + 1, f"{''.join(r + ', ' for r in returned)}= {call}" if returned else call, op)
        for position, loop in enumerate(compiled.loops):
            self.bind_compiled_results(loop, position, compiled, results, depth + 1)
        self.line(depth, "else:")
        for loop in compiled.loops:
            super().emit_while_loop(loop, depth + 1, aliasing)
        fallback = [self.name_of(value) for value in results]
        self.line(depth + 1, f"{', '.join(results.values())} = {', '.join(fallback)}")
        for value, name in results.items():
            self.names[value] = name

    def bind_compiled_results(
        self, loop: Op, position: int, compiled: CompiledLoop, results: dict[Value, str], depth: int
    ) -> None:
        """After the compiled call: the names of ``loop``'s results. An array it updated in place
        is its operand (for a later loop of a sequence, an earlier loop's result); a returned
        NumPy scalar is made one again from the Python number Numba returns."""
        kept = [k for k in range(len(loop.results)) if (position, k) not in compiled.returned]
        if kept:  # arrays updated in place: the operands themselves
            targets = ", ".join(results[loop.results[k]] for k in kept)
            self.line(depth, f"{targets} = {', '.join(self.name_of(loop.operands[k]) for k in kept)}")
        for value in loop.results:
            name = self.names[value] = results[value]
            if value.type.ndim == 0 and not value.type.weak:
                # Numba returns Python numbers; eager code holds NumPy scalars here.
                self.line(depth, f"{name} = {self.bind(value.type.dtype.type, 'np_' + value.type.dtype.name)}({name})")

    def argument(self, value: Value) -> str:
        """How the call passes ``value``: arrays as they are, a NumPy 0-d value as a scalar."""
        name = self.name_of(value)
        if value.type.ndim > 0 or value.type.weak:
            return name
        if isinstance(value.owner, Op) and value.owner.name == CONST:  # made a scalar once, here
            return self.bind(scalar_of(value.owner.attrs["value"]), self.fresh("S"))
        return f"{self.bind(scalar_of, 'scalar_of')}({name})"


class WatchingCodeGenerator(CodeGenerator):
    """The NumPy tier's code, timing each loop and fused group the ``compiled-regions`` pass
    marked: ``watch`` is called with the seconds it took, and decides when to compile."""

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None, plan: bool = True, *, watch=None):
        super().__init__(graph, writebacks, plan)
        self.watch = watch

    def emit_while_loop(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        if not op.attrs.get(COMPILED_LOOP) or self.watch is None:
            super().emit_while_loop(op, depth, aliasing)
            return
        started = self.start_clock(depth)
        super().emit_while_loop(op, depth, aliasing)
        self.stop_clock(started, depth)

    def emit_fused(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        if not op.attrs.get(COMPILED_KERNEL) or self.watch is None:
            super().emit_fused(op, depth, aliasing)
            return
        started = self.start_clock(depth)
        super().emit_fused(op, depth, aliasing)
        self.stop_clock(started, depth)

    def start_clock(self, depth: int) -> str:
        started = self.fresh("t")
        self.line(depth, f"{started} = {self.bind(time.perf_counter, 'perf_counter')}()")
        return started

    def stop_clock(self, started: str, depth: int) -> None:
        clock = self.bind(time.perf_counter, "perf_counter")
        self.line(depth, f"{self.bind(self.watch, 'watch')}({clock}() - {started})")
