"""The default pass pipeline."""

from __future__ import annotations

from dy2st.ir.core import Graph

PIPELINE: tuple = ()


def optimize(graph: Graph) -> Graph:
    """Run the default pipeline on ``graph`` in place and return it."""
    for p in PIPELINE:
        p.run(graph)
    return graph
