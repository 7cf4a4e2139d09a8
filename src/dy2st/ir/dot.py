"""Graphviz pictures of graphs (``Graph.to_dot()``, ``dy2st dump --format dot|svg``).

Each op is a box labelled with its name, its result types and the user's source line; each
graph input and capture an ellipse; an edge runs from the op (or input) that defines a value to
each op that uses it, labelled with the value's type. ``cond`` and ``while_loop`` regions are
nested clusters (``then``/``else``, ``cond``/``body``) inside a cluster for the op, and a fused
op is a cluster showing its member ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dy2st.ir.opcodes import COND, WHILE_LOOP

if TYPE_CHECKING:
    from dy2st.ir.core import Block, Graph, Op, Value

_REGION_NAMES = {COND: ("then", "else"), WHILE_LOOP: ("cond", "body"), "fused": ("members",)}


def to_dot(graph: Graph) -> str:
    """The graph as Graphviz DOT text."""
    return _DotWriter(graph).render()


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _DotWriter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.lines: list[str] = []
        self.defined_by: dict[Value, str] = {}  # value -> the node that defines it
        self.edges: list[str] = []
        self.counter = 0

    def node_id(self) -> str:
        self.counter += 1
        return f"n{self.counter}"

    def render(self) -> str:
        self.lines.append(f"digraph {_quote(self.graph.name)} {{")
        self.lines.append('  graph [rankdir=TB, fontname="Helvetica", fontsize=10];')
        self.lines.append('  node [shape=box, fontname="Helvetica", fontsize=10];')
        self.lines.append('  edge [fontname="Helvetica", fontsize=8];')
        for index, value in enumerate(self.graph.body.args):
            kind = "input" if index < self.graph.num_inputs else "capture"
            self.block_argument(value, f"{kind} {value.name_hint or index}", depth=1)
        self.block(self.graph.body, depth=1)
        # Edges last, at the top level: an edge written inside a cluster would pull the nodes it
        # names (an input used in a branch) into that cluster.
        self.lines.extend(f"  {edge}" for edge in self.edges)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def block_argument(self, value: Value, title: str, depth: int) -> None:
        name = self.node_id()
        self.defined_by[value] = name
        self.line(depth, f"{name} [shape=ellipse, label={_quote(f'{title}: {value.type}')}];")

    def block(self, block: Block, depth: int) -> None:
        for op in block.ops:
            self.op(op, depth)

    def op(self, op: Op, depth: int) -> None:
        name = self.node_id()
        results = ", ".join(str(r.type) for r in op.results)
        where = f"\n{op.loc.short}" if op.loc is not None else ""
        label = f"{op.name}" + (f" -> {results}" if results else "") + where
        if op.regions:
            self.region_cluster(op, name, label, depth)
        else:
            self.line(depth, f"{name} [label={_quote(label)}];")
        for operand in op.operands:
            self.edge(operand, name)
        for result in op.results:
            self.defined_by[result] = name

    def region_cluster(self, op: Op, name: str, label: str, depth: int) -> None:
        """An op with regions: a cluster holding its node and one cluster per region."""
        self.line(depth, f"subgraph cluster_{name} {{")
        self.line(depth + 1, f"label={_quote(op.name)}; style=rounded;")
        self.line(depth + 1, f"{name} [label={_quote(label)}, style=bold];")
        titles = _REGION_NAMES.get(op.name, tuple(f"region {k}" for k in range(len(op.regions))))
        for title, region in zip(titles, op.regions):
            self.line(depth + 1, f"subgraph cluster_{name}_{title.replace(' ', '_')} {{")
            self.line(depth + 2, f"label={_quote(title)}; style=dashed;")
            for arg in region.block.args:
                self.block_argument(arg, f"{title} argument {arg.name_hint or arg.index}", depth + 2)
            self.block(region.block, depth + 2)
            self.line(depth + 1, "}")
        self.line(depth, "}")

    def edge(self, value: Value, target: str) -> None:
        source = self.defined_by.get(value)
        if source is not None:
            self.edges.append(f"{source} -> {target} [label={_quote(str(value.type))}];")

    def line(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)
