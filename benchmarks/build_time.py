"""Build time of long straight-line functions: does the first call grow linearly with length?

    python benchmarks/build_time.py                   # N = 500, 2000, 4000; 3 fresh processes each
    python benchmarks/build_time.py --quick           # N = 50, 200: a smoke run
    python benchmarks/build_time.py --sizes 500,1000 --repeats 5 --kind straight-line
    python benchmarks/build_time.py --profile 2000    # where the time goes (cProfile, top entries)
    python benchmarks/build_time.py --profile 1000 --kind "one fused group"

Each function is generated as Python source of N statements over a few arrays and written to a
temporary module, so that dy2st finds its source as it finds a user's. Three functions:
"straight-line" mixes arithmetic, ufuncs, slices, reductions and ``np.where``; "under tensor if"
is the same body inside one tensor ``if`` (the condition is a 0-d argument); "one fused group" has
elementwise ufuncs only, so the whole body is one fusion group; "running sum" is a fused chain
whose reductions are added up statement after statement. Each measurement runs in a fresh
process (a garbage collection costs in proportion to everything alive in the process, so earlier
measurements would slow later ones): it imports the module, converts ``f`` with ``dy2st.to_static``
and calls it once. "first call" is that decorate + convert + stage + optimize + generate + run,
the median over the processes; the result is checked against the eager function. "ops" counts the
optimized graph's ops (``g.walk()``). The last column is the time per statement relative to the
smallest size: a build cost linear in the function's length keeps it near 1.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import itertools
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import dy2st

# One statement per line; every array stays of shape (SIZE,) and of moderate magnitude.
MIXED = (
    "y = x * 1.5 + z",
    "z = np.tanh(y) - x[::2].sum() * 0.01",
    "w = np.maximum(w, z) * 0.5",
    "s = (x * z).mean()",
    "x = np.sqrt(np.abs(w) + 1.0) - y * 0.1",
    "y = np.where(y > s, y, z) + w[::-1]",
    "z = np.sin(x) * np.cos(w) + s",
    "w = np.clip(w + y * 0.25, -4.0, 4.0)",
)
# Only elementwise ufuncs: the whole body is one fusion group.
ELEMENTWISE = (
    "y = x * 1.5 + z",
    "z = np.tanh(y) - x * 0.01",
    "w = np.maximum(w, z) * 0.5",
    "x = np.sqrt(np.abs(w) + 1.0) - y * 0.1",
    "z = np.sin(x) * np.cos(w) + y",
    "w = np.minimum(w + y * 0.25, 4.0)",
)
# A fused chain whose reductions feed a running sum: every group has a long chain of users.
RUNNING_SUM = (
    "y = np.tanh(y) * 0.5 + x",
    "s = s + y.sum()",
    "z = z * 0.5 + y",
    "s = s - z.max()",
)
# The rows of the table: the statements cycled through, and whether they sit in a tensor `if`.
KINDS = {
    "straight-line": (MIXED, False),
    "under tensor if": (MIXED, True),
    "one fused group": (ELEMENTWISE, False),
    "running sum": (RUNNING_SUM, False),
}
SIZE = 64


def straight_line_source(n: int, statements: tuple[str, ...] = MIXED, under_tensor_if: bool = False) -> str:
    """A function of ``n`` statements over the arrays x, z, w (and a 0-d ``flag``)."""
    body = [line for line, _ in zip(itertools.cycle(statements), range(n))]
    indent = "        " if under_tensor_if else "    "
    lines = ["import numpy as np", "", "", "def f(x, z, w, flag):", "    y = x", "    s = x.sum()"]
    if under_tensor_if:
        lines.append("    if flag > 0:")
    lines += [indent + line for line in body]
    if under_tensor_if:
        lines += ["    else:", "        x = x + 1.0"]
    lines.append("    return x + y + z + w + s")
    return "\n".join(lines) + "\n"


def arguments() -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x, z, w = (rng.standard_normal(SIZE) for _ in range(3))
    return x, z, w, np.array(1.0)


def write_function(directory: str, kind: str, n: int) -> str:
    """The file of the ``kind`` function with ``n`` statements; returns its path."""
    statements, under_if = KINDS[kind]
    path = os.path.join(directory, f"{kind.replace(' ', '_').replace('-', '_')}_{n}.py")
    with open(path, "w") as f:
        f.write(straight_line_source(n, statements, under_if))
    return path


def load_function(path: str) -> Callable[..., Any]:
    """``f`` from the module at ``path``, imported as a user's module is (its source is found)."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def first_call(path: str) -> dict[str, float]:
    """Time one first call of the function at ``path`` in this process, check its result, count
    the ops of its optimized graph."""
    fn, args = load_function(path), arguments()
    start = time.perf_counter()
    converted = dy2st.to_static(fn)
    result = converted(*args)
    seconds = time.perf_counter() - start
    np.testing.assert_allclose(result, fn(*args), rtol=1e-9, atol=1e-9)
    return {"seconds": seconds, "ops": sum(1 for _ in converted.graph(*args).walk())}


def first_call_in_fresh_process(path: str) -> dict[str, float]:
    """``first_call`` in a new interpreter: a build's garbage collections cost in proportion to
    every object alive in the process, so each measurement starts from the same heap."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--first-call", path], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the first call of {path} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


@dataclass
class Row:
    kind: str
    statements: int
    seconds: float
    ops: int

    @property
    def ms_per_statement(self) -> float:
        return 1e3 * self.seconds / self.statements


def measure(directory: str, kind: str, n: int, repeats: int) -> Row:
    path = write_function(directory, kind, n)
    calls = [first_call_in_fresh_process(path) for _ in range(repeats)]
    return Row(kind, n, statistics.median(call["seconds"] for call in calls), int(calls[0]["ops"]))


def print_table(rows: list[Row]) -> None:
    print(f"{'function':<16} {'N':>6} {'first call (s)':>15} {'ops':>7} {'ms/stmt':>8} {'vs smallest':>12}")
    for kind in dict.fromkeys(row.kind for row in rows):
        mine = [row for row in rows if row.kind == kind]
        base = mine[0].ms_per_statement
        for row in mine:
            ratio = row.ms_per_statement / base
            print(
                f"{row.kind:<16} {row.statements:>6} {row.seconds:>15.3f} {row.ops:>7} "
                f"{row.ms_per_statement:>8.3f} {ratio:>11.2f}x"
            )


def profile(directory: str, kind: str, n: int, top: int) -> None:
    """cProfile of one first call of the function of ``kind`` with ``n`` statements."""
    fn, args = load_function(write_function(directory, kind, n)), arguments()
    profiler = cProfile.Profile()
    profiler.enable()
    dy2st.to_static(fn)(*args)
    profiler.disable()
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(top)
        print(out.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="N = 50, 200 with one conversion each")
    parser.add_argument("--sizes", help="comma-separated statement counts (default 500,2000,4000)")
    parser.add_argument("--repeats", type=int, help="fresh processes per size (default 3)")
    parser.add_argument("--kind", choices=list(KINDS), help="only this function (profiled: 'under tensor if')")
    parser.add_argument("--profile", type=int, metavar="N", help="profile one first call of N statements")
    parser.add_argument("--top", type=int, default=40, help="profile entries to print")
    parser.add_argument("--first-call", metavar="PATH", help=argparse.SUPPRESS)  # one measurement, as JSON
    options = parser.parse_args(argv)
    if options.first_call:
        print(json.dumps(first_call(options.first_call)))
        return
    with tempfile.TemporaryDirectory() as directory:
        if options.profile:
            profile(directory, options.kind or "under tensor if", options.profile, options.top)
            return
        default_sizes, default_repeats = ("50,200", 1) if options.quick else ("500,2000,4000", 3)
        sizes = [int(n) for n in (options.sizes or default_sizes).split(",")]
        repeats = options.repeats or default_repeats
        kinds = [options.kind] if options.kind else list(KINDS)
        rows = [measure(directory, kind, n, repeats) for kind in kinds for n in sizes]
        print_table(rows)
        for kind in kinds:
            mine = [row for row in rows if row.kind == kind]
            ratio = mine[-1].ms_per_statement / mine[0].ms_per_statement
            print(f"{kind}: per-statement cost at N={mine[-1].statements} vs N={mine[0].statements}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
