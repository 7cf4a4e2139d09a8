"""Generate one straight-line Python function per graph, so a call runs no interpreter loop.

The generated function takes the graph's inputs then captures as positional arguments and returns
a tuple of outputs. Each op becomes one line calling its NumPy kernel through a local name; ``cond``
becomes ``if/else``, ``while_loop`` becomes ``while True`` with a ``break``. A map from generated line
numbers to ops lets the executor name the user's op and line when a kernel raises.

Example, for ``relu(x @ W + b)``::

    def run(x, W, b):
        v0 = k_matmul(x, W)
        v1 = k_add(v0, b)
        v2 = k_maximum(v1, 0)
        return (v2,)
"""

from __future__ import annotations

import functools
import keyword
from typing import Any

import numpy as np

from dy2st.ir.core import Block, Graph, Op, Value
from dy2st.ops.registry import get_op

_INLINE_TYPES = (bool, int, float, complex)


def _is_inline_literal(value: Any) -> bool:
    if isinstance(value, float):
        return np.isfinite(value)
    if isinstance(value, complex):
        return np.isfinite(value.real) and np.isfinite(value.imag)
    return isinstance(value, _INLINE_TYPES)


class GeneratedCode:
    """The source, namespace and line->op map of one generated function."""

    def __init__(self, source: str, namespace: dict[str, Any], line_ops: dict[int, Op], filename: str):
        self.source = source
        self.namespace = namespace
        self.line_ops = line_ops
        self.filename = filename
        exec(compile(source, filename, "exec"), namespace)
        self.function = namespace["run"]


class CodeGenerator:
    """Turns a graph into Python source; subclasses may override ``emit_op`` for new op kinds."""

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None):
        self.graph = graph
        self.writebacks = writebacks or {}
        self.names: dict[Value, str] = {}
        self.namespace: dict[str, Any] = {"np": np}
        self.kernel_names: dict[Any, str] = {}
        self.lines: list[str] = []
        self.line_ops: dict[int, Op] = {}
        self.counter = 0

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
            name = stem if stem.isidentifier() and stem not in self.namespace and not keyword.iskeyword(stem) else self.fresh(stem)
            self.namespace[name] = obj
            self.kernel_names[key] = name
        return self.kernel_names[key]

    def kernel_for(self, op: Op) -> str:
        opdef = get_op(op.name)
        factory = opdef.extra.get("kernel_factory")
        if factory is not None:
            # Ops with a body (fused groups) build one kernel per op instance from the op itself.
            return self.bind(factory(op), self.fresh(f"k_{op.name}_"))
        kernel = opdef.kernel
        if kernel is None:
            raise NotImplementedError(f"no NumPy kernel for op {op.name!r}")
        if op.attrs:
            return self.bind(functools.partial(kernel, **op.attrs), self.fresh(f"k_{op.name}_"))
        return self.bind(kernel, f"k_{op.name}")

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
        self.emit_block(self.graph.body, 1, aliasing)
        return "\n".join(self.lines) + "\n"

    def emit_block(self, block: Block, depth: int, aliasing: set[Value]) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.emit_op(op, depth, aliasing)
        if len(self.lines) == start:
            self.line(depth, "pass")

    def emit_op(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        handler = getattr(self, f"emit_{op.name}", None)
        if handler is not None:
            handler(op, depth, aliasing)
            return
        results = [self.fresh() for _ in op.results]
        for value, name in zip(op.results, results):
            self.names[value] = name
        call = f"{self.kernel_for(op)}({', '.join(self.name_of(v) for v in op.operands)})"
        if not results:
            self.line(depth, call, op)
        elif len(results) == 1:
            self.line(depth, f"{results[0]} = {call}", op)
        else:
            self.line(depth, f"{', '.join(results)} = {call}", op)

    def emit_const(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        value = op.attrs["value"]
        if _is_inline_literal(value):
            self.names[op.results[0]] = repr(value)
        else:
            self.names[op.results[0]] = self.bind(value, self.fresh("K"))

    def emit_return(self, op: Op, depth: int, aliasing: set[Value]) -> None:
        outputs = []
        for i, value in enumerate(op.operands):
            name = self.name_of(value)
            if i in self.writebacks:
                self.line(depth, f"np.copyto(a{self.writebacks[i]}, {name})", op)
            if value in aliasing:
                name = f"np.array({name}, copy=True)"
            outputs.append(name)
        self.line(depth, "return (" + "".join(f"{o}, " for o in outputs) + ")", op)

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
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        carried = [self.fresh("w") for _ in op.operands]
        for names_for in (cond_block.args, body_block.args):
            for value, name in zip(names_for, carried):
                self.names[value] = name
        if carried:
            inits = ", ".join(self.name_of(v) for v in op.operands)
            self.line(depth, f"{', '.join(carried)}{',' if len(carried) == 1 else ''} = {inits}{',' if len(carried) == 1 else ''}", op)
        self.line(depth, "while True:", op)
        self.emit_block_body(cond_block, depth + 1, aliasing)
        self.line(depth + 1, f"if not {self.name_of(cond_block.ops[-1].operands[0])}:", op)
        self.line(depth + 2, "break")
        self.emit_block_body(body_block, depth + 1, aliasing)
        if carried:
            yielded = [self.name_of(v) for v in body_block.ops[-1].operands]
            self.line(depth + 1, f"{', '.join(carried)}{',' if len(carried) == 1 else ''} = {', '.join(yielded)}{',' if len(carried) == 1 else ''}", op)
        for value, name in zip(op.results, carried):
            self.names[value] = name


def may_alias_inputs(graph: Graph) -> set[Value]:
    """Values whose buffer may be an input, a capture, or a constant: outputs must copy them."""
    aliasing: set[Value] = set(graph.body.args)

    def visit(block: Block) -> None:
        for op in block.ops:
            if op.name == "const":
                aliasing.update(op.results)
            elif op.name == "cond":
                for region in op.regions:
                    visit(region.block)
                for i, r in enumerate(op.results):
                    if any(region.block.ops[-1].operands[i] in aliasing for region in op.regions):
                        aliasing.add(r)
            elif op.name == "while_loop":
                body_yield = op.regions[1].block.ops[-1].operands
                for i, (init, r) in enumerate(zip(op.operands, op.results)):
                    if init in aliasing or body_yield[i] in aliasing:
                        aliasing.update((r, op.regions[0].block.args[i], op.regions[1].block.args[i]))
                for region in op.regions:
                    visit(region.block)
            elif get_op(op.name).view and op.operands and op.operands[0] in aliasing:
                aliasing.update(op.results)
            for region in op.regions if op.name not in ("cond", "while_loop") else ():
                visit(region.block)

    # A loop can hand an aliasing value back to its own arguments: iterate to a fixed point.
    size = -1
    while size != len(aliasing):
        size = len(aliasing)
        visit(graph.body)
    return aliasing


def generate(graph: Graph, writebacks: dict[int, int] | None = None, generator_cls=CodeGenerator) -> GeneratedCode:
    """Compile ``graph`` to a Python function. ``writebacks`` maps output index -> arg index."""
    gen = generator_cls(graph, writebacks)
    source = gen.generate(may_alias_inputs(graph))
    filename = f"<dy2st-generated {graph.name}>"
    return GeneratedCode(source, gen.namespace, gen.line_ops, filename)
