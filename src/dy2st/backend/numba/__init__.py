"""The compiled tier: loops over elements and scalars compiled to machine code with Numba.

Numba is an optional dependency (``pip install dy2st[jit]``). Nothing here imports it until a graph
is compiled, so the package imports on a machine without it; ``numba_available`` says whether it
can run. ``docs/compiled-tier.md`` describes what is compiled and the guarantees kept.
"""

from __future__ import annotations

import importlib.util


def numba_available() -> bool:
    """Can the compiled tier run here (is Numba installed)? Looks for the package without
    importing it, which takes a tenth of a second."""
    return importlib.util.find_spec("numba") is not None


__all__ = ["numba_available"]
