"""The kernel suite (benchmarks/kernels): eager NumPy against dy2st on PolyBench- and npbench-style
kernels written with Python loops, one row per kernel.

    python benchmarks/kernel_suite.py                      # the "small" preset, about a second a kernel
    python benchmarks/kernel_suite.py --quick              # the "test" preset, one repeat: a smoke run
    python benchmarks/kernel_suite.py --only lu,adi --json suite.json
    python benchmarks/kernel_suite.py --backend compiled   # the compiled tier (default: numpy)

Columns: the first call (a fresh ``dy2st.to_static`` called once on fresh copies of the arguments:
convert + build + optimize + run; median over 3 fresh objects), the op count of the optimized graph
(every op, recursively into regions), how many loops over a Python ``range`` were rolled into a
``while_loop`` and how many unrolled (the graph's notes, as ``dy2st dump --ir`` prints them), the
steady call of eager NumPy and of dy2st (medians; eager and converted calls alternate on fresh
copies of the arguments, so the ratio is measured under one load; repeats chosen so a kernel takes
about a second), their ratio, and whether the converted call gives eager's result and leaves the
arguments as eager does (values within rtol 1e-9 for double and 1e-4 for single precision, same
types, shapes and dtypes). A kernel that raises prints ``FAILED: <class>: <message>``, one whose
result differs ``MISMATCH``, and the table goes on.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from kernels import BY_NAME, KERNELS, Kernel, copy_arguments, difference  # noqa: E402

import dy2st  # noqa: E402

SECONDS_PER_KERNEL = 1.0
MOST_REPEATS = 2000


@dataclass
class Row:
    """What the table prints for one kernel; the fields that did not get measured stay None."""

    name: str
    family: str
    status: str = "ok"
    detail: str = ""
    first_call_ms: float | None = None
    ops: int | None = None
    rolled: int | None = None
    unrolled: int | None = None
    eager_ms: float | None = None
    dy2st_ms: float | None = None
    ratio: float | None = None


def _timed(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


# The tier the suite measures (``--backend``): the NumPy tier by default, so that no background
# compilation changes the figures halfway through (benchmarks/compiled_tier.py measures that tier).
BACKEND = {"name": "numpy"}


def convert(fn: Callable[..., Any]) -> dy2st.StaticFunction:
    """A fresh ``dy2st.to_static(fn)`` on the chosen backend."""
    static = dy2st.to_static(fn, backend=BACKEND["name"])
    assert isinstance(static, dy2st.StaticFunction)
    return static


def first_call(kernel: Kernel, args: tuple[Any, ...], repeats: int) -> tuple[float, dy2st.StaticFunction, Any, tuple]:
    """The median first call over ``repeats`` fresh ``to_static`` objects, the last object, its
    result and the arguments it was called with."""
    times = []
    for _ in range(repeats):
        static = convert(kernel.function)
        call_args = copy_arguments(args)
        elapsed, result = _timed(static, call_args)
        times.append(elapsed)
    return statistics.median(times), static, result, call_args


def steady_times(
    kernel: Kernel, static: dy2st.StaticFunction, args: tuple[Any, ...], repeats: int
) -> tuple[float, float]:
    """Median eager and converted call times, the two alternating on fresh argument copies."""
    eager_times, converted_times = [], []
    for _ in range(repeats):
        eager_times.append(_timed(kernel.function, copy_arguments(args))[0])
        converted_times.append(_timed(static, copy_arguments(args))[0])
    return statistics.median(eager_times), statistics.median(converted_times)


def count_loops(notes: list[str]) -> tuple[int, int]:
    """How many loops the graph's notes say were rolled and how many unrolled."""
    return sum("rolled into" in note for note in notes), sum("unrolled" in note for note in notes)


def measure(kernel: Kernel, preset: str, quick: bool) -> Row:
    """One row: first call, graph, correctness against eager, then the steady-state times."""
    row = Row(kernel.name, kernel.family)
    args = kernel.make(preset)
    try:
        first, static, result, converted_args = first_call(kernel, args, 1 if quick else 3)
        row.first_call_ms = first * 1e3
        eager_args = copy_arguments(args)
        eager_time, expected = _timed(kernel.function, eager_args)
        found = difference(result, expected) or difference(converted_args, eager_args, "arguments")
        if found is not None:
            row.status, row.detail = "MISMATCH", found
        graph = static.graph(*copy_arguments(args))
        row.ops = sum(1 for _ in graph.walk())
        row.rolled, row.unrolled = count_loops(list(graph.notes))
        steady_call, _ = _timed(static, copy_arguments(args))
        pair = max(eager_time + steady_call, 1e-6)
        repeats = 1 if quick else min(MOST_REPEATS, max(3, round(SECONDS_PER_KERNEL / pair)))
        eager, converted = steady_times(kernel, static, args, repeats)
    except Exception as error:  # a failing kernel is a row of the table
        message = str(error).splitlines()[0] if str(error) else ""
        row.status, row.detail = "FAILED", f"{type(error).__name__}: {message}"
        return row
    row.eager_ms, row.dy2st_ms, row.ratio = eager * 1e3, converted * 1e3, converted / eager
    return row


HEADER = (
    f"{'kernel':<15} {'family':<20} {'first call':>11} {'ops':>6} {'rolled':>6} {'unrolled':>8} "
    f"{'eager':>10} {'dy2st':>10} {'ratio':>6}  equal"
)


def format_row(row: Row) -> str:
    start = f"{row.name:<15} {row.family:<20} "
    if row.status == "FAILED":
        return start + f"FAILED: {row.detail}"
    equal = "yes" if row.status == "ok" else f"MISMATCH ({row.detail})"
    return (
        start + f"{row.first_call_ms:>9.1f}ms {row.ops:>6} {row.rolled:>6} {row.unrolled:>8} "
        f"{row.eager_ms:>8.2f}ms {row.dy2st_ms:>8.2f}ms {row.ratio:>6.2f}  {equal}"
    )


def summary(rows: list[Row]) -> list[str]:
    matched = [row for row in rows if row.status == "ok" and row.ratio is not None]
    failed = [row.name for row in rows if row.status == "FAILED"]
    mismatched = [row.name for row in rows if row.status == "MISMATCH"]
    lines = []
    if matched:
        geomean = math.exp(statistics.fmean(math.log(row.ratio) for row in matched if row.ratio))
        lines.append(f"geometric mean dy2st/eager over the {len(matched)} kernels that ran and matched: {geomean:.2f}")
    lines.append(f"failed: {len(failed)}" + (f" ({', '.join(failed)})" if failed else ""))
    lines.append(f"mismatched: {len(mismatched)}" + (f" ({', '.join(mismatched)})" if mismatched else ""))
    timed = [row for row in rows if row.first_call_ms is not None]
    if timed:
        slowest = max(timed, key=lambda row: row.first_call_ms or 0.0)
        lines.append(f"largest first call: {slowest.name} {slowest.first_call_ms:.1f}ms")
    return lines


def selected_kernels(only: str | None) -> list[Kernel]:
    if not only:
        return KERNELS
    names = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown kernel(s): {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    return [BY_NAME[name] for name in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help='the "test" preset and one repeat')
    parser.add_argument("--only", metavar="NAME,NAME", help="only these kernels")
    parser.add_argument("--json", metavar="FILE", help="also write the rows and the summary to FILE")
    parser.add_argument(
        "--backend",
        default="numpy",
        choices=("numpy", "compiled", "auto"),
        help="the tier to measure (default numpy; compiled: loops compiled before the first call returns)",
    )
    options = parser.parse_args()
    BACKEND["name"] = options.backend
    preset = "test" if options.quick else "small"
    kernels = selected_kernels(options.only)
    started = time.perf_counter()
    print(HEADER)
    rows = []
    for kernel in kernels:
        row = measure(kernel, preset, options.quick)
        rows.append(row)
        print(format_row(row), flush=True)
    lines = summary(rows)
    print()
    print("\n".join(lines))
    print(f"total: {time.perf_counter() - started:.1f}s")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"preset": preset, "rows": [asdict(row) for row in rows], "summary": lines}, out, indent=2)


if __name__ == "__main__":
    main()
