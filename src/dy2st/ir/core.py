"""The SSA graph IR: values, ops, blocks, regions and graphs.

Every op produces fresh values (SSA). Control flow is structured: a ``cond`` op owns a then- and an
else-region, a ``while_loop`` op owns a condition region and a body region; each region is one
block whose arguments are the values flowing in (loop-carried values) and whose last op is a
terminator (``yield``, or ``return`` for the graph body). There are no phi nodes.

A ``Graph`` is a function: its body block's arguments are the inputs (placeholders) followed by the
captures (arrays read from globals or closures by reference at every call).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dy2st.errors import SourceLocation
from dy2st.ir.dot import to_dot
from dy2st.ir.opcodes import (  # noqa: F401  (re-exported)
    COND,
    CONST,
    IN_PLACE_UPDATE,
    RETURN,
    TERMINATORS,
    UPDATE_MAY_OVERLAP,
    VALUE_IN_PLACE,
    WHILE_LOOP,
    WRITES_BACK,
    WRITES_UPDATE,
    YIELD,
)
from dy2st.ir.printer import print_graph
from dy2st.ir.types import TensorType

# Op attributes that record a pass's or a backend's decisions (a planned buffer, how an op is
# lowered) rather than what the op computes: shape rules and kernels never see them. The modules
# that write them add their names here.
ANNOTATION_ATTRS: set[str] = set()

# The attribute holding the ``np.errstate`` settings an op runs under (``with np.errstate(...)``
# around it in the user's code), as sorted ``(name, value)`` pairs.
ERRSTATE_ATTR = "errstate"
ANNOTATION_ATTRS.add(ERRSTATE_ATTR)
# Whether a functional update runs in place (see ir/opcodes.py): both of its kernels take the
# same attributes, so they never see it.
ANNOTATION_ATTRS.add(IN_PLACE_UPDATE)
# Where an update's value is computed (the ``update-destinations`` pass): also no kernel's concern.
ANNOTATION_ATTRS.update((WRITES_UPDATE, VALUE_IN_PLACE, UPDATE_MAY_OVERLAP))


def kernel_attrs(op: Op) -> dict:
    """The op's attributes as its kernel takes them: without the annotations the builder, passes
    and backends record on it (errstate, the memory plan's, the lowering's)."""
    return {k: v for k, v in op.attrs.items() if k not in ANNOTATION_ATTRS}


class Value:
    """An SSA value: defined once, by an op result or a block argument.

    Attributes:
        type: static shape and dtype.
        name_hint: a source variable name used by the printer, when one is known.
        owner: the defining ``Op`` for a result, or the ``Block`` for a block argument.
        index: the position among the owner's results or arguments.
    """

    __slots__ = ("type", "name_hint", "owner", "index")

    def __init__(self, type: TensorType, name_hint: str | None = None, owner=None, index: int = 0):
        self.type = type
        self.name_hint = name_hint
        self.owner = owner
        self.index = index

    @property
    def op(self) -> Op | None:
        """The op defining this value, or None for a block argument."""
        return self.owner if isinstance(self.owner, Op) else None

    def __repr__(self) -> str:
        return f"<Value {self.name_hint or ''}:{self.type}>"


class Op:
    """One operation.

    Attributes:
        name: the opcode (``add``, ``matmul``, ``cond``, ...), a key of the op registry.
        operands: input values.
        results: output values (fresh; owned by this op).
        attrs: compile-time attributes (``axis``, ``value`` of a ``const``, ...).
        regions: nested regions (``cond``: then, else; ``while_loop``: cond, body).
        loc: the user's source location the op came from.
        parent: the block holding this op.
    """

    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(
        self,
        name: str,
        operands: list[Value],
        result_types: list[TensorType],
        attrs: dict[str, Any] | None = None,
        regions: list[Region] | None = None,
        loc: SourceLocation | None = None,
    ):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, None, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        for region in self.regions:
            region.parent = self
        self.loc = loc
        self.parent: Block | None = None

    @property
    def result(self) -> Value:
        """The single result of a one-result op."""
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def walk(self) -> Iterator[Op]:
        """This op, then every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            yield from region.block.walk()

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


class Block:
    """A straight-line list of ops with arguments; the last op is a terminator."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: list[TensorType] | None = None, arg_names: list[str | None] | None = None):
        names = arg_names or [None] * len(arg_types or [])
        self.args = [Value(t, n, self, i) for i, (t, n) in enumerate(zip(arg_types or [], names))]
        self.ops: list[Op] = []
        self.parent: Region | None = None

    def add_arg(self, type: TensorType, name: str | None = None) -> Value:
        value = Value(type, name, self, len(self.args))
        self.args.append(value)
        return value

    def append(self, op: Op) -> Op:
        op.parent = self
        self.ops.append(op)
        return op

    def set_ops(self, ops: list[Op]) -> None:
        """Replace the op list (used by passes), re-parenting every op."""
        for op in ops:
            op.parent = self
        self.ops = ops

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].name in TERMINATORS else None

    def walk(self) -> Iterator[Op]:
        for op in self.ops:
            yield from op.walk()

    def arguments_reaching(self, value: Value) -> set[int]:
        """The positions of this block's arguments that ``value`` is computed from (through ops
        and the ops nested in their regions)."""
        found: set[int] = set()
        seen: set[int] = set()
        stack = [value]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            if current.owner is self:
                found.add(current.index)
            elif current.op is not None:
                stack.extend(operand for inner in current.op.walk() for operand in inner.operands)
        return found


class Region:
    """A single-block region owned by a control-flow op."""

    __slots__ = ("block", "parent")

    def __init__(self, block: Block):
        self.block = block
        block.parent = self
        self.parent: Op | None = None


class Graph:
    """A function in SSA form.

    Attributes:
        name: the converted function's name.
        body: the top-level block; its args are ``inputs + captures``; it ends with ``return``.
        num_inputs: how many leading body args are inputs; the rest are captures.
        notes: how the graph was built, a line each (which loops were rolled or unrolled, and
            why); the printer shows them above the graph as comments.
    """

    def __init__(self, name: str, body: Block, num_inputs: int):
        self.name = name
        self.body = body
        self.num_inputs = num_inputs
        self.notes: list[str] = []

    @property
    def inputs(self) -> list[Value]:
        return self.body.args[: self.num_inputs]

    @property
    def captures(self) -> list[Value]:
        return self.body.args[self.num_inputs :]

    @property
    def outputs(self) -> list[Value]:
        term = self.body.terminator
        return list(term.operands) if term is not None else []

    def walk(self) -> Iterator[Op]:
        """Every op, recursively into regions, in program order."""
        return self.body.walk()

    def __str__(self) -> str:
        return print_graph(self)

    def to_dot(self) -> str:
        """The graph as Graphviz DOT text: ops labelled with their source lines, ``cond`` and
        ``while_loop`` regions and fused groups as nested clusters, edges labelled with the
        values' types (``dot -Tsvg`` draws it; ``dy2st dump --format svg`` does both)."""
        return to_dot(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {sum(1 for _ in self.walk())} ops>"


def replace_uses(block: Block, mapping: dict[Value, Value]) -> None:
    """Rewrite operands in ``block`` and its nested regions through ``mapping``."""
    if not mapping:
        return
    for op in block.walk():
        op.operands = [mapping.get(v, v) for v in op.operands]


def use_counts(block: Block) -> dict[Value, int]:
    """How many operand slots refer to each value, recursively into regions."""
    counts: dict[Value, int] = {}
    for op in block.walk():
        for v in op.operands:
            counts[v] = counts.get(v, 0) + 1
    return counts
