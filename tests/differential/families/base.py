"""What a pattern family gives the skeleton: its variables, statements, idioms and inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..program import Call

if TYPE_CHECKING:
    from ..skeleton import ProgramGenerator, Scope

CONSTANTS = ["0.0", "1.0", "-1.0", "0.5", "2.0"]


class Family:
    """One pattern family. An instance generates the leaves of one program; subclasses override
    what their pattern needs. Every family's parameters include ``k`` (a 0-d int tensor in 0..3,
    the bound of tensor loops) and ``p`` (a Python int in 0..2)."""

    name: ClassVar[str]
    summary: ClassVar[str]
    parameters: ClassVar[str]

    def __init__(self, generator: ProgramGenerator):
        self.generator = generator
        self.rng = generator.rng

    # the program's frame --------------------------------------------------------------------
    def prelude(self) -> list[str]:
        """Module-level lines after ``import numpy as np`` (globals, generators)."""
        return []

    def setup(self) -> list[str]:
        """The first lines of the function body: every variable the statements use."""
        return []

    def epilogue(self) -> list[str]:
        """Lines after the generated body, before the final return."""
        return []

    # leaves -----------------------------------------------------------------------------------
    def statement(self, scope: Scope) -> list[str]:
        raise NotImplementedError

    def idiom(self, scope: Scope) -> list[str]:
        """A multi-line pattern as users write it (may nest skeleton blocks); [] if none."""
        return []

    def tensor_comparison(self, scope: Scope) -> str:
        raise NotImplementedError

    def return_value(self, scope: Scope) -> str:
        raise NotImplementedError

    def use_python_int(self, name: str) -> list[str]:
        """Lines reading a Python loop variable after its loop (it holds the element of a break)."""
        return []

    @classmethod
    def calls(cls, rng: np.random.Generator, count: int) -> list[Call]:
        raise NotImplementedError

    # helpers ----------------------------------------------------------------------------------
    def pick(self, options):
        return self.rng.choice(options)

    def index(self, scope: Scope, literals: int = 3) -> str:
        """An index expression in 0..max(2, literals - 1): a loop variable or a literal."""
        return self.pick(scope.indices() + [str(i) for i in range(literals)])

    def constant(self) -> str:
        return self.pick(CONSTANTS)

    def block(self, scope: Scope) -> list[str]:
        return self.generator.block(scope)

    def fresh(self, stem: str) -> str:
        return self.generator.fresh(stem)

    def predicate(self, scope: Scope) -> str:
        return self.generator.predicate(scope)


class VectorAndMatrix(Family):
    """A family over a vector ``x`` (``LENGTH``), a matrix ``A`` (``ROWS`` x ``COLUMNS``), ``k`` and
    ``p``, with a float ``s`` and an int ``c`` the statements accumulate into; subclasses pick
    ``self.returned``."""

    parameters = "x, A, k, p"
    LENGTH, ROWS, COLUMNS = 8, 6, 4
    returned = "s"

    def use_python_int(self, name: str) -> list[str]:
        return [f"c = c + {name}"]

    def return_value(self, scope: Scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng: np.random.Generator, count: int) -> list[Call]:
        return [
            Call((grid(rng, cls.LENGTH), grid(rng, (cls.ROWS, cls.COLUMNS)), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]


def grid(rng: np.random.Generator, shape, low: int = -4, high: int = 7) -> np.ndarray:
    """Floats on a coarse grid, so that equalities and ties sometimes hold; zeros are -0.0 at
    random (``x + 0.0`` is not ``x`` there)."""
    values = np.asarray(rng.integers(low, high, shape) * 0.5)
    signs = np.where(rng.random(values.shape) < 0.5, -1.0, 1.0)
    return np.where(values == 0.0, values * signs, values)


def trip_count(rng: np.random.Generator, high: int = 3) -> np.ndarray:
    return np.array(rng.integers(0, high + 1), dtype=np.int64)


def python_int(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 3))


def python_float(rng: np.random.Generator) -> float:
    """A Python float on a coarse grid, -0.0 among them."""
    return float(rng.choice([-0.0, 0.0, 0.5, -1.5, 2.5, 0.75]))
