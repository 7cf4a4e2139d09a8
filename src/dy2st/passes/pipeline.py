"""The default pass pipeline, in order, with the reason for each position."""

from __future__ import annotations

import os

from dy2st.ir.core import Graph
from dy2st.passes.base import Pass, PassManager


def default_passes() -> list[Pass]:
    """A fresh list of the default pipeline's passes."""
    return []


# Tests set DY2ST_VERIFY=1 so the verifier runs after every pass of every graph they build.
VERIFY_EVERY_PASS = os.environ.get("DY2ST_VERIFY", "") == "1"


def optimize(graph: Graph, passes: list[Pass] | None = None, after_each=None) -> Graph:
    """Run ``passes`` (the default pipeline when None) on ``graph`` in place and return it."""
    manager = PassManager(default_passes() if passes is None else passes, verify=VERIFY_EVERY_PASS,
                          after_each=after_each)
    return manager.run(graph)
