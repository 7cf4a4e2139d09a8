"""ONNX export (``dy2st.export_onnx``, optional extra ``dy2st[onnx]``; docs/onnx.md).

The graph left by the cleanup passes (as ``dy2st.save`` writes it) becomes an ONNX model: each
op is written by its definition's ``onnx`` trait (``OnnxWriter`` is what those rules call),
``cond`` becomes ``If`` and ``while_loop`` becomes ``Loop``, the graph's inputs keep their names,
and arrays read from globals become initializers (by value). ONNX does not promote types the
way NumPy does, so every operand is cast to the dtype NumPy's loop computes in, and every result
to the dtype NumPy gives it: the exported model computes what eager NumPy computes, in NumPy's
types. An op without an ONNX form is an ``OnnxExportError`` naming it and the user's line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dy2st.errors import Dy2stError
from dy2st.ir.core import COND, CONST, WHILE_LOOP, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import SymExpr
from dy2st.runtime.staging import Program

OPSET = 18


class OnnxExportError(Dy2stError):
    """A graph ONNX cannot express: an op without an ONNX form, a dtype or a structure it lacks."""


def onnx_module() -> Any:
    try:
        import onnx
    except ImportError:
        raise OnnxExportError(
            "ONNX export needs the onnx package", note="pip install 'dy2st[onnx]' installs onnx and onnxruntime"
        ) from None
    return onnx


class OnnxWriter:
    """Builds the nodes of one ONNX graph (a region is a nested writer sharing the names)."""

    def __init__(self, onnx: Any, names: dict[Value, str], initializers: list[Any], counter: list[int]):
        self.onnx = onnx
        self.names = names
        self.initializers = initializers
        self.counter = counter
        self.nodes: list[Any] = []
        self.op: Op | None = None  # the op being written (for errors)

    # --- what rules call --------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        self.counter[0] += 1
        return f"{hint}_{self.counter[0]}"

    def input(self, value: Value, dtype: np.dtype | None = None) -> str:
        """The ONNX name of ``value``, cast to ``dtype`` when given."""
        if value not in self.names:
            raise self.refuse("an operand defined where ONNX cannot see it")
        name = self.names[value]
        return name if dtype is None else self.cast(name, value.type.dtype, np.dtype(dtype))

    def constant(self, array: Any, dtype: np.dtype | None = None) -> str:
        """An initializer holding ``array`` (in ``dtype`` when given)."""
        data = np.asarray(array, dtype=dtype)
        name = self.fresh("initializer")
        self.initializers.append(self.onnx.numpy_helper.from_array(data, name))
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> list[str]:
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(self.onnx.helper.make_node(op_type, list(inputs), names, **attrs))
        return names

    def cast(self, name: str, source: np.dtype, target: np.dtype) -> str:
        if np.dtype(source) == np.dtype(target):
            return name
        return self.node("Cast", [name], to=elem_type(self.onnx, target))[0]

    def refuse(self, why: str) -> OnnxExportError:
        op = self.op
        text = f"{op.name}: {why}" if op is not None else why
        return OnnxExportError(f"cannot export {text} to ONNX", op.loc if op is not None else None)

    # --- blocks ---------------------------------------------------------------------------------
    def block(self, block: Block) -> None:
        for op in block.ops[:-1]:
            self.write(op)

    def write(self, op: Op) -> None:
        self.op = op
        if op.name == CONST:
            value = op.attrs["value"]
            self.names[op.result] = self.constant(value, op.result.type.dtype)
            return
        if op.name == COND:
            self.cond(op)
            return
        if op.name == WHILE_LOOP:
            self.loop(op)
            return
        rule = get_op(op.name).onnx
        if rule is None:
            raise self.refuse("this op has no ONNX form (docs/onnx.md lists the ops that export)")
        outputs = rule(self, op)
        for result, name in zip(op.results, outputs):
            self.names[result] = name

    def subgraph(
        self, block: Block, inputs: list[tuple[str, Value]], outputs: list[tuple[Value, np.dtype]], name: str
    ) -> Any:
        """An ONNX graph for ``block`` (a region): ``inputs`` are its formal inputs (the names the
        block's arguments take), ``outputs`` the values it yields, cast to their dtypes."""
        inner = OnnxWriter(self.onnx, self.names, self.initializers, self.counter)
        for formal, value in inputs:
            inner.names[value] = formal
        inner.block(block)
        inner.op = self.op
        results = []
        for value, dtype in outputs:
            source = inner.input(value, dtype)
            out = inner.node("Identity", [source])[0]  # an output must be produced in the subgraph
            results.append(value_info(self.onnx, out, dtype, None))
        formal_infos = [value_info(self.onnx, formal, value.type.dtype, value.type.shape) for formal, value in inputs]
        return self.onnx.helper.make_graph(inner.nodes, name, formal_infos, results)

    def cond(self, op: Op) -> None:
        branches = []
        for k, region in enumerate(op.regions):
            yields = region.block.ops[-1].operands
            outputs = [(v, r.type.dtype) for v, r in zip(yields, op.results)]
            branches.append(self.subgraph(region.block, [], outputs, self.fresh(("then", "else")[k])))
        predicate = self.input(op.operands[0], np.dtype(bool))
        names = self.node("If", [predicate], len(op.results), then_branch=branches[0], else_branch=branches[1])
        self.names.update(zip(op.results, names))

    def loop(self, op: Op) -> None:
        """``while_loop``: ONNX's ``Loop`` tests its condition after each iteration, so the
        condition region runs once before the loop and again at the end of the body."""
        check, body = (region.block for region in op.regions)
        carried = [self.input(v, r.type.dtype) for v, r in zip(op.operands, op.results)]
        first = OnnxWriter(self.onnx, self.names, self.initializers, self.counter)
        first.op = op
        for arg, name in zip(check.args, carried):
            first.names[arg] = name
        first.block(check)
        first_condition = first.input(check.ops[-1].operands[0], np.dtype(bool))
        self.nodes.extend(first.nodes)
        iteration, condition_in = self.fresh("iteration"), self.fresh("condition")
        formal = [self.fresh("carried") for _ in op.results]
        inner = OnnxWriter(self.onnx, self.names, self.initializers, self.counter)
        inner.op = op
        for arg, name in zip(body.args, formal):
            inner.names[arg] = name
        inner.block(body)
        ends = [inner.input(v, r.type.dtype) for v, r in zip(body.ops[-1].operands, op.results)]
        for arg, name in zip(check.args, ends):
            inner.names[arg] = name
        inner.block(check)
        condition_out = inner.input(check.ops[-1].operands[0], np.dtype(bool))
        outputs = [inner.node("Identity", [condition_out])[0], *(inner.node("Identity", [e])[0] for e in ends)]
        graph = self.onnx.helper.make_graph(
            inner.nodes,
            self.fresh("body"),
            [
                value_info(self.onnx, iteration, np.dtype(np.int64), ()),
                value_info(self.onnx, condition_in, np.dtype(bool), ()),
                *(value_info(self.onnx, f, r.type.dtype, r.type.shape) for f, r in zip(formal, op.results)),
            ],
            [
                value_info(self.onnx, outputs[0], np.dtype(bool), ()),
                *(value_info(self.onnx, o, r.type.dtype, r.type.shape) for o, r in zip(outputs[1:], op.results)),
            ],
        )
        names = self.node("Loop", ["", first_condition, *carried], len(op.results), body=graph)
        self.names.update(zip(op.results, names))


def elem_type(onnx: Any, dtype: np.dtype) -> int:
    try:
        return int(onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    except (KeyError, TypeError, ValueError):
        raise OnnxExportError(f"ONNX has no tensors of dtype {dtype}") from None


def value_info(onnx: Any, name: str, dtype: np.dtype, shape: Sequence[Any] | None) -> Any:
    dims = None if shape is None else [d if isinstance(d, int) else _dim_name(d) for d in shape]
    return onnx.helper.make_tensor_value_info(name, elem_type(onnx, dtype), dims)


def _dim_name(size: Any) -> str:
    return str(size) if isinstance(size, SymExpr) else "n"


def build_model(program: Program, graph: Graph) -> Any:
    """The ONNX model of a staged program's graph (after the cleanup passes)."""
    onnx = onnx_module()
    if program.writebacks:
        raise OnnxExportError(
            f"{graph.name} updates its arguments in place, which an ONNX model cannot do",
            note="return the updated arrays instead",
        )
    names: dict[Value, str] = {}
    initializers: list[Any] = []
    writer = OnnxWriter(onnx, names, initializers, [0])
    inputs = []
    for value in graph.inputs:
        name = _unique(value.name_hint or "input", names)
        names[value] = name
        inputs.append(value_info(onnx, name, value.type.dtype, value.type.shape))
    for value, source in zip(graph.captures, program.capture_sources):
        name = _unique(value.name_hint or "capture", names)
        names[value] = name
        initializers.append(onnx.numpy_helper.from_array(np.asarray(source.read()), name))
    writer.block(graph.body)
    writer.op = None
    results = graph.body.ops[-1].operands[: program.num_results]
    outputs = []
    for value in results:
        name = writer.node("Identity", [writer.input(value)])[0]
        outputs.append(value_info(onnx, name, value.type.dtype, value.type.shape))
    model_graph = onnx.helper.make_graph(writer.nodes, graph.name, inputs, outputs, initializers)
    model = onnx.helper.make_model(
        model_graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="dy2st"
    )
    model.ir_version = min(model.ir_version, 9)  # what onnxruntime releases of 2024 and later read
    onnx.checker.check_model(model)
    return model


def _unique(hint: str, names: dict[Value, str]) -> str:
    taken = set(names.values())
    name, k = hint, 1
    while name in taken:
        k += 1
        name = f"{hint}_{k}"
    return name


def write_onnx(path: Any, program: Program, graph: Graph) -> None:
    """Export a staged program's graph (after the cleanup passes) to an ONNX file."""
    onnx = onnx_module()
    onnx.save(build_model(program, graph), path)
