"""A generated program: its source and the calls it is run with, both given by (family, seed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    """One call of the program's function: positional and keyword arguments."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    # How to write an argument whose repr is not code (a Generator), by position.
    spelled: dict[int, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        positional = [self.spelled.get(i, repr(a)) for i, a in enumerate(self.args)]
        keywords = [f"{name}={value!r}" for name, value in self.kwargs.items()]
        return f"program({', '.join(positional + keywords)})"


@dataclass(frozen=True)
class Program:
    family: str
    seed: int
    source: str
    calls: tuple[Call, ...]
    # The arrays of each call are longer than the last call's (``Knobs.changing_sizes``).
    changing_sizes: bool = False
