"""Run a graph through its generated Python function, naming the user's op and line on failure."""

from __future__ import annotations

from typing import Any

from dy2st.backend.numpy.codegen import GeneratedCode, generate
from dy2st.errors import Dy2stError, Dy2stRuntimeError
from dy2st.ir.core import Graph, Op


def describe_op(op: Op) -> str:
    """``matmul(f32[512,512], f32[256])`` for error messages."""
    return f"{op.name}({', '.join(str(v.type) for v in op.operands)})"


class Executor:
    """A compiled graph. Call it with the inputs then the captures, in graph order.

    Args:
        graph: the (optimized) graph to run.
        writebacks: output index -> argument index, for arrays the function updates in place:
            the generated code copies the final value into the caller's array.
    """

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None, code: GeneratedCode | None = None):
        self.graph = graph
        self.code = code or generate(graph, writebacks)
        self.function = self.code.function

    @property
    def source(self) -> str:
        return self.code.source

    def __call__(self, *args: Any) -> tuple:
        try:
            return self.function(*args)
        except Dy2stError:
            raise
        except Exception as e:
            op = self.failing_op(e)
            if op is None:
                raise
            raise Dy2stRuntimeError(
                f"while executing {describe_op(op)}"
                + (f" ({op.loc.short})" if op.loc else "")
                + f": {type(e).__name__}: {e}",
                op.loc,
            ) from e

    def failing_op(self, error: BaseException) -> Op | None:
        tb = error.__traceback__
        lineno = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.code.filename:
                lineno = tb.tb_lineno
            tb = tb.tb_next
        return self.code.line_ops.get(lineno) if lineno is not None else None
