"""The pattern families, by name: each is a class of bugs users hit (see each module's docstring)."""

from __future__ import annotations

from .base import Family
from .control_flow import ControlFlow

FAMILIES: dict[str, type[Family]] = {family.name: family for family in (ControlFlow,)}

__all__ = ["FAMILIES", "Family"]
