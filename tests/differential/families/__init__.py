"""The pattern families, by name: each is a class of bugs users hit (see each module's docstring)."""

from __future__ import annotations

from .base import Family
from .broadcast_branches import BroadcastBranches
from .buffer_swaps import BufferSwaps
from .control_flow import ControlFlow
from .data_dependent import DataDependent
from .defaults_returns import DefaultsReturns
from .element_loops import ElementLoops
from .inplace_rebind import InplaceRebind
from .numpy_calls import NumpyCalls
from .python_numbers import PythonNumbers
from .random_draws import RandomDraws
from .rolled_loops import RolledLoops
from .search_logic import SearchLogic
from .select_chains import SelectChains
from .stale_reads import StaleReads
from .swaps import Swaps
from .views import Views

FAMILIES: dict[str, type[Family]] = {
    family.name: family
    for family in (
        ControlFlow,
        Views,
        InplaceRebind,
        BroadcastBranches,
        Swaps,
        RandomDraws,
        PythonNumbers,
        DefaultsReturns,
        SearchLogic,
        RolledLoops,
        StaleReads,
        DataDependent,
        NumpyCalls,
        ElementLoops,
        SelectChains,
        BufferSwaps,
    )
}

__all__ = ["FAMILIES", "Family"]
