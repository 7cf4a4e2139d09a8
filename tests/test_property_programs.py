"""Differential test: random control-flow programs give the same results converted and eager.

Each program is generated from a seed: nested ``if``/``while``/``for`` with ``break``, ``continue``
and ``return``, conditions on tensors and on Python values joined by ``and``/``or``/``not``, chained
comparisons and ternaries, over a 0-d float (``s``), 1-d floats (``v`` rebound, ``u`` updated in
place: a tensor loop carries an array one way or the other, not both) and a 0-d int (``c``). Loops are bounded (``range(3)``, a tensor ``range(k)`` with ``k <= 3``, and ``while``
loops that count their iterations), so every program terminates. The program is written to a real
module file (dy2st reads the source), then run eagerly and converted on several inputs; results
must agree in value, shape and dtype, or both runs must raise the same exception type.

Run a bigger batch as a script::

    python tests/test_property_programs.py --programs 2000 --first-seed 1000
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import dy2st
from dy2st.frontend.transformers import PIPELINE

NUM_PROGRAMS = 150
INPUTS_PER_PROGRAM = 3
VECTOR_LENGTH = 4


# --- the program generator ------------------------------------------------------------------------
@dataclass
class _Scope:
    """What the statement being generated may use."""

    depth: int = 0
    in_loop: bool = False
    python_index: str | None = None  # a Python int loop variable in range(3)
    tensor_index: str | None = None  # a 0-d int tensor loop variable in range(k)


@dataclass
class ProgramGenerator:
    """Generates the source of one random program from a seed (deterministic)."""

    seed: int
    tensor_conditions: bool = True  # False: only Python conditions (tests the lowering alone)
    max_depth: int = 3
    max_block: int = 3
    rng: random.Random = field(init=False)
    counter: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def source(self) -> str:
        body = self._block(_Scope(), self.rng.randint(2, 4))
        lines = [
            "import numpy as np",
            "",
            "",
            "def program(x, y, k, p):",
            "    s = y * 1.0",
            "    v = x * 1.0",
            "    u = x * 2.0",
            "    c = k * 1",
            *body,
            f"    return {self._return_value(_Scope())}",
            "",
        ]
        return "\n".join(lines)

    # statements -----------------------------------------------------------------------------
    def _block(self, scope: _Scope, size: int) -> list[str]:
        lines: list[str] = []
        for _ in range(size):
            lines.extend(self._statement(scope))
        return lines

    def _statement(self, scope: _Scope) -> list[str]:
        choices = ["assign", "assign", "assign", "return"]
        if scope.depth < self.max_depth:
            choices += ["if", "if", "for", "while"] + (["tensor_for"] if self.tensor_conditions else [])
        if scope.in_loop:
            choices += ["exit", "exit"]
        kind = self.rng.choice(choices)
        indent = "    " * (scope.depth + 1)
        if kind == "assign":
            return [indent + self._assignment(scope)]
        if kind == "return":
            # A bare return would make the rest of the block unreachable; guard it.
            return [f"{indent}if {self._predicate(scope)}:", f"{indent}    return {self._return_value(scope)}"]
        if kind == "exit":
            exit_kind = self.rng.choice(["break", "continue"])
            return [f"{indent}if {self._predicate(scope)}:", f"{indent}    {exit_kind}"]
        if kind == "if":
            return self._if(scope, indent)
        return getattr(self, f"_{kind}")(scope, indent)

    def _nested(self, scope: _Scope, **changes) -> _Scope:
        values = dict(scope.__dict__, depth=scope.depth + 1)
        values.update(changes)
        return _Scope(**values)

    def _if(self, scope: _Scope, indent: str) -> list[str]:
        inner = self._nested(scope)
        lines = [f"{indent}if {self._predicate(scope)}:", *self._block(inner, self.rng.randint(1, self.max_block))]
        if self.rng.random() < 0.5:
            lines += [f"{indent}else:", *self._block(inner, self.rng.randint(1, self.max_block))]
        return lines

    def _for(self, scope: _Scope, indent: str) -> list[str]:
        name = self._fresh("i")
        inner = self._nested(scope, in_loop=True, python_index=name)
        lines = [f"{indent}for {name} in range(3):", *self._block(inner, self.rng.randint(1, self.max_block))]
        if self.rng.random() < 0.5:
            # The loop variable after the loop holds the element of a break. It is bound before the
            # loop too: the static analysis cannot know range(3) is never empty, and a variable
            # read after a tensor 'if' must be defined on both of its paths.
            lines = [f"{indent}{name} = 0", *lines, f"{indent}s = s + {name} * 0.5"]
        return lines

    def _tensor_for(self, scope: _Scope, indent: str) -> list[str]:
        name = self._fresh("j")
        inner = self._nested(scope, in_loop=True, tensor_index=name)
        return [f"{indent}for {name} in range(k):", *self._block(inner, self.rng.randint(1, self.max_block))]

    def _while(self, scope: _Scope, indent: str) -> list[str]:
        counter = self._fresh("w")
        inner = self._nested(scope, in_loop=True)
        # The counter is updated first, so no `continue` can skip it: every loop terminates.
        return [
            f"{indent}{counter} = 0",
            f"{indent}while {counter} < 3 and ({self._predicate(scope)}):",
            f"{indent}    {counter} = {counter} + 1",
            *self._block(inner, self.rng.randint(1, self.max_block)),
        ]

    def _fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    # expressions ----------------------------------------------------------------------------
    def _assignment(self, scope: _Scope) -> str:
        target = self.rng.choice(["s", "s", "v", "u_item", "c"])
        if target == "s":
            form = self.rng.choice(["s = s * 0.5 + {f}", "s = {f} - s", "s = s + ({f} if {p} else -1.0)"])
            return form.format(f=self._float(scope), p=self._predicate(scope))
        if target == "v":
            form = self.rng.choice(["v = v * 0.5 + {f}", "v = np.maximum(v, {f})", "v = v - x * 0.25"])
            return form.format(f=self._float(scope))
        if target == "u_item":
            return f"u[{self._index(scope)}] = {self._float(scope)}"
        return self.rng.choice(["c = c + 1", "c = c - 1", "c = c * 2 - 1"])

    def _index(self, scope: _Scope) -> str:
        options = ["0", "3"]
        if scope.python_index:
            options.append(scope.python_index)
        if scope.tensor_index:
            options.append(scope.tensor_index)
        return self.rng.choice(options)

    def _float(self, scope: _Scope) -> str:
        atoms = ["s", "y", "np.sum(v) * 0.25", "c * 0.5", "1.5", "-0.5", f"v[{self._index(scope)}]", "u[1]"]
        if scope.python_index:
            atoms.append(f"x[{scope.python_index}] * {scope.python_index}")
        return self.rng.choice(atoms)

    def _comparison(self, scope: _Scope) -> str:
        tensor = [
            f"s > {self.rng.choice(['0.0', '1.0', '-1.0'])}",
            f"np.sum(v) < {self.rng.choice(['0.0', '2.0'])}",
            f"v[{self._index(scope)}] > s",
            "c > 1",
            "c % 2 == 0",
            "y < s",
            "-1.0 < s < 2.0",
        ]
        python = ["p > 0", "p == 1"]
        if scope.python_index:
            python += [f"{scope.python_index} % 2 == 0", f"{scope.python_index} > p"]
            tensor.append(f"x[{scope.python_index}] > 0")
        if scope.tensor_index:
            tensor.append(f"{scope.tensor_index} > 1")
        use_tensor = self.tensor_conditions and self.rng.random() < 0.7
        return self.rng.choice(tensor if use_tensor else python)

    def _predicate(self, scope: _Scope, depth: int = 0) -> str:
        roll = self.rng.random()
        if depth >= 2 or roll < 0.55:
            return self._comparison(scope)
        if roll < 0.7:
            return f"not ({self._predicate(scope, depth + 1)})"
        joiner = self.rng.choice(["and", "or"])
        return f"({self._predicate(scope, depth + 1)}) {joiner} ({self._predicate(scope, depth + 1)})"

    def _return_value(self, scope: _Scope) -> str:
        return f"{self.rng.choice(['s', 's * 2.0', 's + c'])}, {self.rng.choice(['v', 'v - 1.0', 'v * s'])}, u"


# --- running a program both ways ------------------------------------------------------------------
def program_inputs(seed: int) -> list[tuple]:
    """``INPUTS_PER_PROGRAM`` argument tuples (x, y, k, p), with values on a coarse grid so that
    equality comparisons sometimes hold."""
    rng = np.random.default_rng(seed)
    inputs = []
    for _ in range(INPUTS_PER_PROGRAM):
        x = rng.integers(-4, 7, VECTOR_LENGTH).astype(np.float64) * 0.5
        y = np.array(rng.integers(-4, 7) * 0.5)
        k = np.array(rng.integers(0, 4), dtype=np.int64)
        p = int(rng.integers(0, 3))
        inputs.append((x, y, k, p))
    return inputs


def load_program(source: str, directory: Path, seed: int):
    path = directory / f"generated_program_{seed}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"generated_program_{seed}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


def _outcome(fn, args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 (the exception type is what is compared)
        return "raised", e


def _same_result(converted, eager) -> bool:
    if isinstance(eager, tuple):
        return (
            isinstance(converted, tuple)
            and len(converted) == len(eager)
            and all(_same_result(c, e) for c, e in zip(converted, eager))
        )
    c, e = np.asarray(converted), np.asarray(eager)
    return c.shape == e.shape and c.dtype == e.dtype and np.allclose(c, e, equal_nan=True)


def mismatch(seed: int, directory: Path, tensor_conditions: bool = True) -> str | None:
    """None if program ``seed`` agrees with eager NumPy on all its inputs, else a report."""
    source = ProgramGenerator(seed, tensor_conditions).source()
    eager_fn = load_program(source, directory, seed)
    static_fn = dy2st.to_static(eager_fn)
    for args in program_inputs(seed):
        copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        eager_kind, eager = _outcome(eager_fn, args)
        static_kind, converted = _outcome(static_fn, copies)
        if eager_kind == static_kind == "ok" and _same_result(converted, eager):
            continue
        if eager_kind == static_kind == "raised" and type(eager) is type(converted):
            continue
        detail = (
            "".join(traceback.format_exception_only(type(converted), converted))
            if static_kind == "raised"
            else repr(converted)
        )
        return f"seed {seed}, inputs {args!r}\n{source}\neager: {eager!r}\nconverted: {detail}"
    return None


@pytest.mark.skipif(
    not any(converter.__name__.endswith(".ifelse") for converter in PIPELINE),
    reason="tensor conditions need the if/while converters",
)
@pytest.mark.parametrize("seed", range(NUM_PROGRAMS))
def test_random_program_matches_eager(seed, tmp_path):
    report = mismatch(seed, tmp_path)
    assert report is None, report


@pytest.mark.parametrize("seed", range(0, NUM_PROGRAMS, 3))
def test_random_program_with_python_conditions_matches_eager(seed, tmp_path):
    report = mismatch(seed, tmp_path, tensor_conditions=False)
    assert report is None, report


def test_the_generator_covers_the_constructs():
    sources = "\n".join(ProgramGenerator(seed).source() for seed in range(NUM_PROGRAMS))
    for construct in (
        "break",
        "continue",
        "return",
        " and ",
        " or ",
        "not (",
        "while ",
        "in range(k)",
        "in range(3)",
        " if ",
        "else:",
        "-1.0 < s < 2.0",
        "u[",
    ):
        assert construct in sources, construct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=2000, help="how many programs to run")
    parser.add_argument("--first-seed", type=int, default=0, help="the seed of the first program")
    parser.add_argument("--show", type=int, default=3, help="print at most this many mismatches")
    parser.add_argument("--python-conditions", action="store_true", help="only Python-valued conditions")
    args = parser.parse_args(argv)
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        for seed in range(args.first_seed, args.first_seed + args.programs):
            report = mismatch(seed, Path(directory), tensor_conditions=not args.python_conditions)
            if report is not None:
                failures.append(report)
            done = seed - args.first_seed + 1
            if done % 100 == 0:
                print(f"{done} programs run, {len(failures)} mismatches so far", flush=True)
    for report in failures[: args.show]:
        print(report, end="\n\n")
    print(f"{args.programs} programs x {INPUTS_PER_PROGRAM} inputs: {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
