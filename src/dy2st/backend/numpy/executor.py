"""Run a graph through its generated Python function, naming the user's op and line on failure."""

from __future__ import annotations

import threading
from typing import Any

from dy2st.backend.numpy.codegen import GeneratedCode, generate
from dy2st.errors import Dy2stError, Dy2stRuntimeError, runtime_error
from dy2st.ir.core import Graph, Op
from dy2st.ir.printer import describe_op


class Executor:
    """A compiled graph. Call it with the inputs then the captures, in graph order.

    A memory-planned graph writes into buffers kept across calls; a call that arrives while another
    thread is running them falls back to a second, unplanned function instead of waiting, so calls
    from threads are safe and never block each other.

    Args:
        graph: the (optimized) graph to run.
        writebacks: output index -> argument index, for arrays the function updates in place:
            the generated code copies the final value into the caller's array.
        code: already generated code for ``graph`` (generated here when None).

    Attributes:
        run: the fastest correct way to call the graph (``run(*inputs, *captures)``); the call
            path binds it once.
    """

    def __init__(self, graph: Graph, writebacks: dict[int, int] | None = None, code: GeneratedCode | None = None):
        self.graph = graph
        self.writebacks = writebacks
        self.code = code or generate(graph, writebacks)
        self.function = self.code.function
        self._codes = {self.code.filename: self.code}
        self._unplanned: GeneratedCode | None = None
        if self.code.persistent_bytes:
            self._lock = threading.Lock()
            self.run = self._run_exclusive
        else:
            self.run = self._run

    @property
    def callable_directly(self) -> bool:
        """Can a caller run ``function(*args)`` itself, calling ``recover`` when it raises, instead
        of ``run`` (no lock guards buffers kept across calls)? The fast call path does."""
        return self.run == self._run

    @property
    def source(self) -> str:
        return self.code.source

    def __call__(self, *args: Any) -> tuple:
        return self.run(*args)

    # Each call of a converted function goes through ``run``: one Python frame around the
    # generated function, whose ``try`` costs nothing until it raises (a small compiled loop takes
    # under a microsecond, so every frame on the way shows).
    def _run(self, *args: Any) -> tuple:
        try:
            return self.function(*args)
        except Exception as error:
            return self.recover(error, args)

    def _run_exclusive(self, *args: Any) -> tuple:
        if not self._lock.acquire(blocking=False):
            return self._run_unplanned(*args)
        try:
            return self.function(*args)
        except Exception as error:
            return self.recover(error, args)
        finally:
            self._lock.release()

    def _run_unplanned(self, *args: Any) -> tuple:
        code = self._unplanned
        if code is None:
            code = self._unplanned = generate(self.graph, self.writebacks, plan=False)
            self._codes[code.filename] = code
        try:
            return code.function(*args)
        except Exception as error:
            return self.recover(error, args)

    def recover(self, error: Exception, args: tuple) -> tuple:
        """After the generated code raised ``error``: raise the dy2st error naming the failing op
        and line (subclasses may instead run the call again: ``TieredExecutor``)."""
        if isinstance(error, Dy2stError):
            raise error
        mapped = self._runtime_error(error)
        if mapped is None:
            raise error
        raise mapped from error

    def _runtime_error(self, error: Exception) -> Dy2stRuntimeError | None:
        """The user-facing error naming the failing op and line (None if no op is known)."""
        op = self.failing_op(error)
        if op is None:
            return None
        message = f"while executing {describe_op(op)}" + (f" ({op.loc.short})" if op.loc else "")
        return runtime_error(error, f"{message}: {type(error).__name__}: {error}", op.loc)

    def failing_op(self, error: BaseException) -> Op | None:
        """The op whose generated line raised ``error`` (the innermost generated frame)."""
        tb = error.__traceback__
        found = None
        while tb is not None:
            code = self._codes.get(tb.tb_frame.f_code.co_filename)
            if code is not None:
                found = code.line_ops.get(tb.tb_lineno)
            tb = tb.tb_next
        return found
