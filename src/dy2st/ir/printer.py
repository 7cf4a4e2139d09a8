"""The textual IR printer: stable, readable, used by golden tests and ``dy2st dump --ir``.

One op per line; results are named after source variables where known (``%y``, ``%y_1``) and
numbered otherwise (``%0``); Python-scalar constants print inline at their uses; regions nest by
indentation; ``locs=True`` appends ``# file.py:LINE`` to each op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dy2st.ir.opcodes import COND, CONST, WHILE_LOOP
from dy2st.ir.types import TensorType

if TYPE_CHECKING:  # core.py imports this module to print graphs
    from dy2st.ir.core import Block, Graph, Op, Value


class _Namer:
    def __init__(self):
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        self.counter = 0

    def name(self, value: Value) -> str:
        if value not in self.names:
            self.names[value] = self._fresh(value.name_hint)
        return self.names[value]

    def _fresh(self, hint: str | None) -> str:
        if hint:
            hint = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            candidate, n = hint, 0
            while candidate in self.taken:
                n += 1
                candidate = f"{hint}_{n}"
        else:
            while str(self.counter) in self.taken:
                self.counter += 1
            candidate = str(self.counter)
            self.counter += 1
        self.taken.add(candidate)
        return candidate


def is_inline_const(op: Op) -> bool:
    """Scalar Python-literal constants print at their uses instead of on a line of their own."""
    return op.name == CONST and op.results[0].type.weak


def format_literal(value) -> str:
    if isinstance(value, np.generic):  # a NumPy scalar constant prints like the 0-d array it acts as
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.size <= 8:
            body = np.array2string(value, separator=", ", threshold=8).replace("\n", "")
            return f"dense<{body}>"
        return f"<{TensorType(value.shape, value.dtype)}>"
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"
    return repr(value)


def format_attr(value) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, slice):
        start, stop, step = ("" if p is None else format_attr(p) for p in (value.start, value.stop, value.step))
        # Only the step's colon is optional: `1:` must not print like the integer index `1`.
        return f"{start}:{stop}" + (f":{step}" if step else "")
    if isinstance(value, tuple):
        return "(" + ", ".join(format_attr(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, np.ndarray):
        return format_literal(value)
    if value is Ellipsis:
        return "..."
    return repr(value)


class Printer:
    def __init__(self, locs: bool = False):
        self.locs = locs
        self.namer = _Namer()
        self.inline: dict[Value, str] = {}
        self.lines: list[str] = []

    def ref(self, value: Value) -> str:
        if value in self.inline:
            return self.inline[value]
        return "%" + self.namer.name(value)

    def print_graph(self, graph: Graph) -> str:
        inputs = ", ".join(f"{self.ref(v)}: {v.type}" for v in graph.inputs)
        header = f"func @{graph.name}({inputs})"
        if graph.captures:
            caps = ", ".join(f"{self.ref(v)}: {v.type}" for v in graph.captures)
            header += f"\n    captures({caps})"
        results = [str(v.type) for v in graph.outputs]
        header += " -> " + (results[0] if len(results) == 1 else "(" + ", ".join(results) + ")")
        self.lines.extend(f"# {note}" for note in graph.notes)
        self.lines.append(header + " {")
        self.print_block(graph.body, 1)
        self.lines.append("}")
        return "\n".join(self.lines)

    def print_block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            if is_inline_const(op):
                self.inline[op.results[0]] = format_literal(op.attrs["value"])
                continue
            self.print_op(op, depth)

    def _loc(self, op: Op) -> str:
        return f"  # {op.loc.short}" if self.locs and op.loc is not None else ""

    def print_op(self, op: Op, depth: int) -> None:
        pad = "  " * depth
        if op.name == COND:
            return self.print_cond(op, depth)
        if op.name == WHILE_LOOP:
            return self.print_while(op, depth)
        text = pad
        if op.results:
            text += ", ".join(self.ref(r) for r in op.results) + " = "
        text += op.name
        parts = []
        if op.name == CONST:
            parts.append(format_literal(op.attrs["value"]))
        parts.extend(self.ref(v) for v in op.operands)
        if parts:
            text += " " + ", ".join(parts)
        text += self.attrs({k: v for k, v in op.attrs.items() if not (op.name == CONST and k == "value")})
        if op.results:
            text += " : " + self.types(op.results)
        self.lines.append(text + self._loc(op))
        for i, region in enumerate(op.regions):  # generic ops with regions (fused ops)
            self.lines.append(pad + ("{" if i == 0 else "} {"))
            self.print_region_block(region.block, depth + 1)
        if op.regions:
            self.lines.append(pad + "}")

    @staticmethod
    def attrs(attrs: dict) -> str:
        """`` {key=value, ...}`` (sorted), or nothing."""
        if not attrs:
            return ""
        return " {" + ", ".join(f"{k}={format_attr(v)}" for k, v in sorted(attrs.items())) + "}"

    def types(self, values: list[Value]) -> str:
        return (
            ", ".join(str(v.type) for v in values)
            if len(values) == 1
            else "(" + ", ".join(str(v.type) for v in values) + ")"
        )

    def block_args(self, block: Block) -> str:
        return "(" + ", ".join(f"{self.ref(a)}: {a.type}" for a in block.args) + ")"

    def print_region_block(self, block: Block, depth: int) -> None:
        if block.args:
            self.lines.append("  " * depth + "^args" + self.block_args(block))
        self.print_block(block, depth)

    def print_cond(self, op: Op, depth: int) -> None:
        pad = "  " * depth
        results = ", ".join(self.ref(r) for r in op.results)
        lhs = f"{results} = " if op.results else ""
        arrow = f" -> {self.types(op.results)}" if op.results else ""
        self.lines.append(f"{pad}{lhs}cond {self.ref(op.operands[0])}{self.attrs(op.attrs)}{arrow} {{" + self._loc(op))
        self.print_block(op.regions[0].block, depth + 1)
        self.lines.append(f"{pad}}} else {{")
        self.print_block(op.regions[1].block, depth + 1)
        self.lines.append(f"{pad}}}")

    def print_while(self, op: Op, depth: int) -> None:
        pad = "  " * depth
        results = ", ".join(self.ref(r) for r in op.results)
        inits = ", ".join(self.ref(v) for v in op.operands)
        lhs = f"{results} = " if op.results else ""
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        types = self.types(op.results) if op.results else "()"
        self.lines.append(f"{pad}{lhs}while_loop ({inits}){self.attrs(op.attrs)} : {types}" + self._loc(op))
        self.lines.append(f"{pad}    cond {self.block_args(cond_block)} {{")
        self.print_block(cond_block, depth + 1)
        self.lines.append(f"{pad}}} body {self.block_args(body_block)} {{")
        self.print_block(body_block, depth + 1)
        self.lines.append(f"{pad}}}")


def print_graph(graph: Graph, locs: bool = False) -> str:
    """The graph as text. ``locs=True`` appends the user's ``file.py:LINE`` to each op."""
    return Printer(locs).print_graph(graph)


def describe_op(op: Op) -> str:
    """``matmul(f32[512,512], f32[256])`` for error messages."""
    return f"{op.name}({', '.join(str(v.type) for v in op.operands)})"
