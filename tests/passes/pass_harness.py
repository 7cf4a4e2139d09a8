"""Helpers for pass tests: stage a function or build a graph by hand, run one pass, compare text.

Graphs with ``cond``/``while_loop`` are built directly with the ``GraphBuilder``/``Block``/``Region``
API, so the pass tests do not depend on the control-flow converters.
"""

from __future__ import annotations

import difflib
import textwrap
from collections.abc import Callable, Sequence

import numpy as np

import dy2st
from dy2st.backend.numpy.executor import Executor
from dy2st.errors import SourceLocation
from dy2st.ir.core import Block, Graph, Op, Region, Value
from dy2st.ir.printer import print_graph
from dy2st.ir.types import TensorType
from dy2st.ir.verifier import verify
from dy2st.passes.base import Pass
from dy2st.staging.builder import GraphBuilder

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)


def tensor_type(dtype, *shape: int) -> TensorType:
    return TensorType(tuple(shape), np.dtype(dtype))


def staged_graph(fn: Callable, *args) -> Graph:
    """The unoptimized graph ``fn`` stages for ``args``."""
    return dy2st.to_static(fn, optimize=False).graph(*args, optimize=False)


def run_pass(pass_cls: type[Pass], graph: Graph) -> bool:
    """Run one pass, check it returned a bool and left a valid graph, and return what it said."""
    changed = pass_cls().run(graph)
    assert isinstance(changed, bool)
    verify(graph)
    return changed


def assert_ir(graph: Graph, expected: str) -> None:
    """The graph prints exactly as ``expected`` (indentation of the literal is ignored)."""
    actual, wanted = print_graph(graph), textwrap.dedent(expected).strip()
    if actual != wanted:
        diff = difflib.unified_diff(wanted.splitlines(), actual.splitlines(), "expected", "actual", lineterm="")
        raise AssertionError("IR differs from the golden text:\n" + "\n".join(diff))


def assert_unchanged_by(pass_cls: type[Pass], graph: Graph) -> None:
    """Running the pass reports no change and leaves the printed IR identical."""
    before = print_graph(graph)
    assert run_pass(pass_cls, graph) is False
    assert print_graph(graph) == before


def execute(graph: Graph, *arrays) -> tuple:
    """Run ``graph`` on the generated executor (arguments: inputs then captures)."""
    return Executor(graph)(*arrays)


def assert_same_results(actual: Sequence, expected: Sequence) -> None:
    """Same number of results, each with the same shape and dtype and equal values."""
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.dtype, a.shape, e.dtype, e.shape)
        np.testing.assert_allclose(a, e, rtol=1e-6)


# --- building graphs with regions by hand --------------------------------------------------------
HAND_BUILT = SourceLocation("hand_built.py", 1)
"""The location of hand-built ops (the builder would otherwise look for a user frame)."""


def new_builder(name: str, **inputs: TensorType) -> tuple[GraphBuilder, list[Value]]:
    """A builder (made current by the caller's ``with``) and its input values, in order."""
    builder = GraphBuilder(name)
    values = [builder.add_input(t, n) for n, t in inputs.items()]
    return builder, values


def emit(builder: GraphBuilder, name: str, *operands: Value, **attrs) -> Value:
    """Emit a one-result op and return its result."""
    return builder.emit(name, list(operands), attrs, loc=HAND_BUILT).result


def const(builder: GraphBuilder, value) -> Value:
    """A literal constant: weak for Python scalars, strong for NumPy scalars and arrays."""
    return builder.const(value, HAND_BUILT)


def emit_cond(
    builder: GraphBuilder, pred: Value, then_fn: Callable[[], list[Value]], else_fn: Callable[[], list[Value]]
) -> Op:
    """A ``cond`` whose branches are built by ``then_fn``/``else_fn`` returning the yielded values."""
    regions = []
    yielded_types = None
    for branch in (then_fn, else_fn):
        block = Block()
        with builder.in_block(block):
            values = branch()
            builder.emit("yield", values, loc=HAND_BUILT, result_types=[])
        yielded_types = [v.type.strong() for v in values]
        regions.append(Region(block))
    return builder.emit("cond", [pred], regions=regions, loc=HAND_BUILT, result_types=yielded_types)


def emit_while(
    builder: GraphBuilder,
    inits: list[Value],
    names: list[str],
    cond_fn: Callable[..., Value],
    body_fn: Callable[..., list[Value]],
) -> Op:
    """A ``while_loop`` over ``inits``; ``cond_fn``/``body_fn`` get the region's block arguments."""
    types = [v.type.strong() for v in inits]
    cond_block, body_block = Block(types, list(names)), Block(types, list(names))
    with builder.in_block(cond_block):
        builder.emit("yield", [cond_fn(*cond_block.args)], loc=HAND_BUILT, result_types=[])
    with builder.in_block(body_block):
        builder.emit("yield", body_fn(*body_block.args), loc=HAND_BUILT, result_types=[])
    regions = [Region(cond_block), Region(body_block)]
    return builder.emit("while_loop", inits, regions=regions, loc=HAND_BUILT, result_types=types)


def emit_print(builder: GraphBuilder, value: Value) -> None:
    """A runtime ``print`` of one tensor (a side effect)."""
    builder.emit("print", [value], {"template": (None,)}, loc=HAND_BUILT)
