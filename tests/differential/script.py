"""Script mode: run many programs, tally them per family, and print each distinct failure class
with its seeds and a reduced reproducer."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .families import FAMILIES
from .program import Program
from .reduce import reduce_program
from .running import Category, Failure, run_program
from .skeleton import DEFAULT_KNOBS, Knobs, generate

SEEDS_SHOWN = 8


@dataclass
class Outcome:
    program: Program
    failure: Failure | None

    @property
    def category(self) -> Category:
        return self.failure.category if self.failure else Category.PASSED


@dataclass
class FailureClass:
    """Programs of one family that fail the same way."""

    family: str
    category: Category
    signature: str
    outcomes: list[Outcome] = field(default_factory=list)
    reduced: Outcome | None = None  # the first program, reduced

    @property
    def first(self) -> Outcome:
        return self.outcomes[0]


def run_programs(
    families: Iterable[str],
    seeds: Iterable[int],
    directory: Path,
    knobs: Knobs = DEFAULT_KNOBS,
    progress: Callable[[int], None] = lambda done: None,
) -> list[Outcome]:
    """Every (seed, family) program, seed by seed, so that a partial run covers every family."""
    outcomes = []
    for seed in seeds:
        for family in families:
            program = generate(FAMILIES[family], seed, knobs)
            outcomes.append(Outcome(program, run_program(program, directory)))
            progress(len(outcomes))
    return outcomes


def tally(outcomes: Iterable[Outcome]) -> dict[str, dict[Category, int]]:
    counts: dict[str, dict[Category, int]] = {}
    for outcome in outcomes:
        family = counts.setdefault(outcome.program.family, dict.fromkeys(Category, 0))
        family[outcome.category] += 1
    return counts


def failure_classes(outcomes: Iterable[Outcome]) -> list[FailureClass]:
    """Worst category first, then most frequent."""
    classes: dict[tuple[str, Category, str], FailureClass] = {}
    for outcome in outcomes:
        failure = outcome.failure
        if failure is None:
            continue
        key = (outcome.program.family, failure.category, failure.signature)
        classes.setdefault(key, FailureClass(*key)).outcomes.append(outcome)
    return sorted(classes.values(), key=lambda c: (-c.category, -len(c.outcomes), c.family))


def reduce_classes(classes: list[FailureClass], directory: Path, per_class: float, total: float) -> None:
    """Reduce the first program of each class, worst classes first, within the time budgets."""
    deadline = time.monotonic() + total
    for failure_class in classes:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        first = failure_class.first
        assert first.failure is not None
        failure_class.reduced = Outcome(*reduce_program(first.program, first.failure, directory, min(per_class, left)))


# --- printing ----------------------------------------------------------------------------------
def table(counts: dict[str, dict[Category, int]]) -> str:
    header = f"{'family':<20}{'programs':>9}{'passed':>8}{'mismatches':>12}{'crashes':>9}{'refusals':>10}"
    rows = [header, "-" * len(header)]
    totals = dict.fromkeys(Category, 0)
    for family, by_category in counts.items():
        rows.append(_row(family, by_category))
        for category, count in by_category.items():
            totals[category] += count
    rows += ["-" * len(header), _row("all", totals)]
    return "\n".join(rows)


def _row(label: str, by_category: dict[Category, int]) -> str:
    c = by_category
    return (
        f"{label:<20}{sum(c.values()):>9}{c[Category.PASSED]:>8}{c[Category.MISMATCH]:>12}"
        f"{c[Category.CRASH]:>9}{c[Category.REFUSAL]:>10}"
    )


def describe(failure_class: FailureClass, knobs_flags: str = "") -> str:
    shown = failure_class.reduced or failure_class.first
    assert shown.failure is not None
    seeds = [o.program.seed for o in failure_class.outcomes]
    listed = ", ".join(map(str, seeds[:SEEDS_SHOWN])) + (", ..." if len(seeds) > SEEDS_SHOWN else "")
    rerun = f"--families {failure_class.family} --first-seed {seeds[0]} --programs 1{knobs_flags}"
    label = "reduced reproducer" if failure_class.reduced else "program (not reduced)"
    return "\n".join(
        [
            f"[{failure_class.category.name}] {failure_class.family}: {failure_class.signature}",
            f"  {len(seeds)} programs; seeds {listed}; rerun with {rerun}",
            f"  {label}:",
            *("    " + line for line in shown.program.source.rstrip().splitlines()),
            *("  " + line for line in shown.failure.detail.splitlines()),
        ]
    )


def write_json(path: Path, outcomes: list[Outcome], classes: list[FailureClass]) -> None:
    records = [
        {
            "family": o.program.family,
            "seed": o.program.seed,
            "category": o.category.name,
            "signature": o.failure.signature if o.failure else None,
        }
        for o in outcomes
    ]
    reduced = [
        {
            "family": c.family,
            "category": c.category.name,
            "signature": c.signature,
            "count": len(c.outcomes),
            "seeds": [o.program.seed for o in c.outcomes],
            "reproducer": describe(c),
        }
        for c in classes
    ]
    path.write_text(json.dumps({"programs": records, "classes": reduced}, indent=1))


# --- the command line ----------------------------------------------------------------------------
def parse_arguments(argv: list[str] | None, description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--families",
        default=",".join(FAMILIES),
        help="comma-separated pattern families to run (default: all; see --list-families)",
    )
    parser.add_argument("--list-families", action="store_true", help="list the families and exit")
    parser.add_argument("--programs", type=int, default=200, help="programs per family (default 200)")
    parser.add_argument("--first-seed", type=int, default=0, help="the seed of each family's first program")
    parser.add_argument(
        "--python-conditions",
        action="store_true",
        help="Python conditions and loops in the skeleton, no idioms (family statements may still test tensors)",
    )
    parser.add_argument("--max-depth", type=int, default=Knobs.max_depth, help="nesting of if/for/while")
    parser.add_argument("--calls", type=int, default=Knobs.calls, help="calls per program (state carries over)")
    parser.add_argument(
        "--changing-sizes",
        action="store_true",
        help="each call's arrays longer than the last's (the later calls run a graph with symbolic sizes)",
    )
    parser.add_argument(
        "--backend",
        choices=("auto", "numpy", "compiled"),
        help="the tier converted programs run on: sets DY2ST_BACKEND (default: as the environment says)",
    )
    parser.add_argument("--reduce-seconds", type=float, default=20, help="time to reduce each failure class")
    parser.add_argument("--reduce-budget", type=float, default=300, help="total time for reducing (0: none)")
    parser.add_argument("--json", type=Path, help="also write every program's outcome to this file")
    args = parser.parse_args(argv)
    args.families = [name.strip() for name in args.families.split(",") if name.strip()]
    unknown = sorted(set(args.families) - set(FAMILIES))
    if unknown:
        parser.error(f"unknown families {unknown}; choose from {sorted(FAMILIES)}")
    return args


def main(argv: list[str] | None = None, description: str = __doc__ or "") -> int:
    os.environ.setdefault("DY2ST_VERIFY", "1")  # also catch graphs that break the IR's invariants
    args = parse_arguments(argv, description)
    if args.list_families:
        for name, family in FAMILIES.items():
            print(f"{name:<20}{family.summary}")
        return 0
    if args.backend:
        os.environ["DY2ST_BACKEND"] = args.backend  # read by every to_static call, the reducer's too
    knobs = Knobs(
        max_depth=args.max_depth,
        tensor_conditions=not args.python_conditions,
        calls=args.calls,
        changing_sizes=args.changing_sizes,
    )
    flags = " --python-conditions" if args.python_conditions else ""
    flags += " --changing-sizes" if args.changing_sizes else ""
    flags += f" --backend {args.backend}" if args.backend else ""
    seeds = range(args.first_seed, args.first_seed + args.programs)
    total = len(seeds) * len(args.families)
    started = time.monotonic()

    def progress(done: int) -> None:
        if done % 200 == 0 or done == total:
            print(f"{done}/{total} programs run ({time.monotonic() - started:.0f} s)", flush=True)

    with tempfile.TemporaryDirectory() as directory:
        outcomes = run_programs(args.families, seeds, Path(directory), knobs, progress)
        classes = failure_classes(outcomes)
        reduce_classes(classes, Path(directory), args.reduce_seconds, args.reduce_budget)
    for failure_class in classes:
        print("\n" + describe(failure_class, flags))
    backend = os.environ.get("DY2ST_BACKEND") or "auto"
    print(f"\nseeds {seeds.start}..{seeds.stop - 1}, {knobs}, backend {backend}, {time.monotonic() - started:.0f} s\n")
    print(table(tally(outcomes)))
    if args.json:
        write_json(args.json, outcomes, classes)
    worst = max((o.category for o in outcomes), default=Category.PASSED)
    return 1 if worst >= Category.CRASH else 0
