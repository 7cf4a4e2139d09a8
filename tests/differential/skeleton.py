"""The control-flow skeleton every generated program shares, filled with a family's statements.

The skeleton nests ``if``/``else``, ``for`` over ``range(3)`` (Python), ``for`` over ``range(k)``
(``k`` a 0-d int tensor, so a ``while_loop``), counted ``while`` loops, guarded ``break``,
``continue`` and ``return``, and conditions joined by ``and``/``or``/``not``. Its leaves are the
family's: simple statements, multi-line idioms (an insertion sort, a ``for ... else`` search),
tensor comparisons and the return value. Loops are bounded, so every program terminates.

Lines are generated without indentation and indented by the compound statement that holds them,
so a family idiom can nest skeleton blocks inside its own loops.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .program import Call, Program

if TYPE_CHECKING:  # the families import this module
    from .families.base import Family

TRIP_COUNT = "k"  # every family's 0-d int tensor parameter in 0..3: the tensor loops' bound
PYTHON_INT = "p"  # every family's Python int parameter in 0..2: Python conditions test it


@dataclass(frozen=True)
class Knobs:
    """What a run generates, besides the families it includes."""

    max_depth: int = 3  # nesting of if/for/while (family idioms count as one level)
    max_block: int = 3  # statements per block
    tensor_conditions: bool = True  # False: Python conditions and loops, no idioms (the lowering alone)
    calls: int = 3  # calls per program, on one side after the other (state carries over)
    changing_sizes: bool = False  # each call's arrays longer than the last's (graphs with symbolic sizes)


DEFAULT_KNOBS = Knobs()


@dataclass(frozen=True)
class Scope:
    """What the statement being generated may use."""

    depth: int = 0
    in_loop: bool = False
    python_index: str | None = None  # a Python int loop variable in range(3)
    tensor_index: str | None = None  # a 0-d int tensor loop variable in range(k), k <= 3

    def nested(self, **changes) -> Scope:
        return replace(self, depth=self.depth + 1, **changes)

    def indices(self) -> list[str]:
        """Loop variables usable as indices: all in 0..2."""
        return [name for name in (self.python_index, self.tensor_index) if name]


def indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


class ProgramGenerator:
    """Generates one program of ``family`` from ``seed`` (deterministically)."""

    def __init__(self, family: type[Family], seed: int, knobs: Knobs = DEFAULT_KNOBS):
        self.knobs = knobs
        self.rng = random.Random(f"{family.name}:{seed}")
        self._counter = 0
        self.family = family(self)

    def program(self, seed: int) -> Program:
        source = self.source()
        calls = self.family.calls(np.random.default_rng(seed), self.knobs.calls)
        if self.knobs.changing_sizes:
            calls = [with_longer_arrays(call, growth) for call, growth in zip(calls, SIZE_GROWTH * len(calls))]
        return Program(self.family.name, seed, source, tuple(calls), self.knobs.changing_sizes)

    def source(self) -> str:
        family = self.family
        body = family.setup() + self.block(Scope(), self.rng.randint(2, 4)) + family.epilogue()
        prelude = family.prelude()
        header = ["import numpy as np", *([""] + prelude if prelude else [])]
        return "\n".join(
            [
                *header,
                "",
                "",
                f"def program({family.parameters}):",
                *indent([*body, f"return {family.return_value(Scope())}"]),
                "",
            ]
        )

    # statements -----------------------------------------------------------------------------
    def block(self, scope: Scope, size: int | None = None) -> list[str]:
        size = size if size is not None else self.rng.randint(1, self.knobs.max_block)
        return [line for _ in range(size) for line in self.statement(scope)]

    def statement(self, scope: Scope) -> list[str]:
        choices = ["leaf", "leaf", "leaf", "return"]
        if scope.depth < self.knobs.max_depth:
            choices += ["if", "if", "for", "while", "idiom"]
            if self.knobs.tensor_conditions:
                choices.append("tensor_for")
        if scope.in_loop:
            choices += ["exit", "exit"]
        kind = self.rng.choice(choices)
        if kind == "idiom":
            # Idioms loop and branch on tensors: a run of Python conditions leaves them out.
            idiom = self.family.idiom(scope) if self.knobs.tensor_conditions else []
            return idiom or self.family.statement(scope)
        if kind == "leaf":
            return self.family.statement(scope)
        if kind == "return":
            # A bare return would make the rest of the block unreachable; guard it.
            return [f"if {self.predicate(scope)}:", f"    return {self.family.return_value(scope)}"]
        if kind == "exit":
            return [f"if {self.predicate(scope)}:", f"    {self.rng.choice(['break', 'continue'])}"]
        return getattr(self, f"_{kind}")(scope)

    def _if(self, scope: Scope) -> list[str]:
        inner = scope.nested()
        lines = [f"if {self.predicate(scope)}:", *indent(self.block(inner))]
        if self.rng.random() < 0.5:
            lines += ["else:", *indent(self.block(inner))]
        return lines

    def _for(self, scope: Scope) -> list[str]:
        name = self.fresh("i")
        inner = scope.nested(in_loop=True, python_index=name)
        lines = [f"for {name} in range(3):", *indent(self.block(inner))]
        if self.rng.random() < 0.5:
            # The loop variable after the loop holds the element of a break. It is bound before the
            # loop too: the static analysis cannot know range(3) is never empty, and a variable
            # read after a tensor 'if' must be defined on both of its paths.
            lines = [f"{name} = 0", *lines, *self.family.use_python_int(name)]
        return lines

    def _tensor_for(self, scope: Scope) -> list[str]:
        name = self.fresh("j")
        inner = scope.nested(in_loop=True, tensor_index=name)
        return [f"for {name} in range({TRIP_COUNT}):", *indent(self.block(inner))]

    def _while(self, scope: Scope) -> list[str]:
        counter = self.fresh("w")
        inner = scope.nested(in_loop=True)
        # The counter is updated first, so no `continue` can skip it: every loop terminates.
        return [
            f"{counter} = 0",
            f"while {counter} < 3 and ({self.predicate(scope)}):",
            f"    {counter} = {counter} + 1",
            *indent(self.block(inner)),
        ]

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}{self._counter}"

    # conditions -----------------------------------------------------------------------------
    def comparison(self, scope: Scope) -> str:
        """One comparison: a tensor one (the family's) or a Python one."""
        if self.knobs.tensor_conditions and self.rng.random() < 0.7:
            if scope.tensor_index and self.rng.random() < 0.2:
                return f"{scope.tensor_index} > 1"
            return self.family.tensor_comparison(scope)
        python = [f"{PYTHON_INT} > 0", f"{PYTHON_INT} == 1"]
        if scope.python_index:
            python += [f"{scope.python_index} % 2 == 0", f"{scope.python_index} > {PYTHON_INT}"]
        return self.rng.choice(python)

    def predicate(self, scope: Scope, depth: int = 0) -> str:
        roll = self.rng.random()
        if depth >= 2 or roll < 0.55:
            return self.comparison(scope)
        if roll < 0.7:
            return f"not ({self.predicate(scope, depth + 1)})"
        joiner = self.rng.choice(["and", "or"])
        return f"({self.predicate(scope, depth + 1)}) {joiner} ({self.predicate(scope, depth + 1)})"


SIZE_GROWTH = (0, 3, 1, 6, 2)
"""How much longer every axis of the arrays of successive calls is (``Knobs.changing_sizes``):
the second call builds a graph with symbolic sizes, the later ones run it."""


def with_longer_arrays(call: Call, growth: int) -> Call:
    """``call`` with every axis of its array arguments ``growth`` longer (values repeated), so that
    axes of equal length stay equal."""

    def grown(value):
        if isinstance(value, np.ndarray) and value.ndim and value.size:
            return np.resize(value, tuple(n + growth for n in value.shape)).astype(value.dtype)
        return value

    return replace(call, args=tuple(grown(a) for a in call.args), kwargs={k: grown(v) for k, v in call.kwargs.items()})


def generate(family: type[Family], seed: int, knobs: Knobs = DEFAULT_KNOBS) -> Program:
    return ProgramGenerator(family, seed, knobs).program(seed)
