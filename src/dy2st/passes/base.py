"""The pass interface and the pass manager.

A pass is a small class with a ``name`` (its CLI spelling, e.g. ``dce``) and ``run(graph) -> bool``
that rewrites the graph in place and says whether it changed anything. Contract: valid IR in, valid
IR out; passes recurse into ``cond``/``while_loop`` regions themselves. The algorithm lives in plain
functions of the pass's module; the class is a thin wrapper.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import ClassVar

from dy2st.ir.core import Graph
from dy2st.ir.verifier import VerificationError, verify


class Pass(abc.ABC):
    """Base class of every pass. Subclasses set ``name`` and implement ``run``."""

    name: ClassVar[str] = ""

    @abc.abstractmethod
    def run(self, graph: Graph) -> bool:
        """Rewrite ``graph`` in place; return whether anything changed."""

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class PassError(Exception):
    """A pass broke the IR (a dy2st bug); the message names the pass."""


class PassManager:
    """Runs passes in order.

    Args:
        passes: the pipeline.
        verify: run the IR verifier after every pass (tests turn this on).
        after_each: called as ``after_each(pass_name, graph, changed)`` after every pass (the CLI
            uses it to print the IR between passes).
    """

    def __init__(
        self, passes: Sequence[Pass], verify: bool = False, after_each: Callable[[str, Graph, bool], None] | None = None
    ):
        self.passes = list(passes)
        self.verify = verify
        self.after_each = after_each

    def run(self, graph: Graph) -> Graph:
        for p in self.passes:
            changed = p.run(graph)
            if not isinstance(changed, bool):
                raise PassError(f"pass {p.name!r} returned {changed!r}, not a bool")
            if self.verify:
                try:
                    verify(graph)
                except VerificationError as e:
                    raise PassError(f"after pass {p.name!r}: {e}") from e
            if self.after_each is not None:
                self.after_each(p.name, graph, changed)
        return graph
