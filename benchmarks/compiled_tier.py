"""The compiled tier against eager NumPy, dy2st's NumPy tier and ``numba.njit``, in one run.

    python benchmarks/compiled_tier.py                 # the element-loop kernels ("small" sizes)
    python benchmarks/compiled_tier.py --preset medium # the same at sizes where the loops set the time
    python benchmarks/compiled_tier.py --suite         # every kernel of benchmarks/kernels
    python benchmarks/compiled_tier.py --only crc32_elements,lu_elements --json out.json

Each kernel is one plain NumPy function: it runs eagerly, converted with ``backend="numpy"`` and
``backend="compiled"``, and under ``numba.njit`` applied to the same unmodified function (what a
user writing the kernel for Numba writes). Columns: the eager median (ms), each variant's median
as a ratio to eager (lower is faster), compiled dy2st over Numba, and the first call of the
compiled tier (convert + build + compile, with an empty cache folder) and of Numba (compile), in
seconds. The variants take turns of about 2 ms of calls on fresh copies of the arguments, each
round starting from the next variant, so all ratios are measured under the same load; a turn has
three calls at least. A turn's first call runs in the caches the variant before left (after the
eager one, milliseconds of interpreter work); the medians leave those calls out, and the "cold
c/nb" column is compiled over Numba on them alone. A variant that fails prints its error class;
one whose result differs from eager prints MISMATCH. The last lines are the geometric means over the kernels every
variant ran.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# The compiled tier's first call is measured with an empty cache: set before dy2st compiles anything.
os.environ["DY2ST_CACHE_DIR"] = tempfile.mkdtemp(prefix="dy2st-bench-cache-")

from kernels import BY_NAME, KERNELS, Kernel, copy_arguments, difference  # noqa: E402

import dy2st  # noqa: E402

SECONDS_PER_KERNEL = 2.0
TURN_SECONDS = 0.002
MOST_REPEATS = 500
# A turn has at least this many calls, so every variant has warm calls to take the median of:
# with one call a turn (calls of a millisecond and more, the "medium" preset), every call of the
# compiled variant ran right after the NumPy tier's and found its caches, trisolv 1.17x Numba's
# time where back-to-back calls on fresh copies gave 1.00x.
LEAST_CALLS_PER_TURN = 3
VARIANTS = ("eager", "numpy", "compiled", "numba")


def _numba_jit(function: Callable[..., Any]) -> Callable[..., Any] | None:
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(function)


def _first_call(make: Callable[[], Callable[..., Any]], args: tuple[Any, ...]) -> tuple[float, Callable[..., Any], Any]:
    fn = make()
    start = time.perf_counter()
    result = fn(*copy_arguments(args))
    return time.perf_counter() - start, fn, result


def measure(kernel: Kernel, preset: str) -> dict[str, Any]:
    """The row of one kernel: medians per variant, first calls, and failures."""
    args = kernel.make(preset)
    row: dict[str, Any] = {"name": kernel.name, "family": kernel.family, "status": {}}
    makers: dict[str, Callable[[], Callable[..., Any]]] = {
        "eager": lambda: kernel.function,
        "numpy": lambda: dy2st.to_static(kernel.function, backend="numpy"),
        "compiled": lambda: dy2st.to_static(kernel.function, backend="compiled"),
    }
    numba_jit = _numba_jit(kernel.function)
    if numba_jit is not None:
        makers["numba"] = lambda: numba_jit
    expected = kernel.function(*copy_arguments(args))
    functions: dict[str, Callable[..., Any]] = {}
    for name, make in makers.items():
        try:
            seconds, fn, result = _first_call(make, args)
        except Exception as error:  # a variant that cannot run the kernel is reported, not fatal
            row["status"][name] = f"FAILED: {type(error).__name__}"
            continue
        found = None if name == "numba" else difference(result, expected)
        if name == "numba" and difference(result, expected) is not None:
            # Numba returns Python numbers and tuples where eager code returns NumPy scalars:
            # compare values only.
            found = _value_difference(result, expected)
        if found is not None:
            row["status"][name] = "MISMATCH"
            continue
        row[f"first_{name}_s"] = seconds
        functions[name] = fn
    row.update(_medians(functions, args))
    return row


def _value_difference(actual: Any, expected: Any) -> str | None:
    import numpy as np

    try:
        same = all(
            np.allclose(np.asarray(a, dtype=float), np.asarray(e, dtype=float), rtol=1e-9, equal_nan=True)
            for a, e in zip(
                actual if isinstance(actual, tuple) else (actual,),
                expected if isinstance(expected, tuple) else (expected,),
            )
        )
    except (TypeError, ValueError):
        return "values differ"
    return None if same else "values differ"


def _medians(functions: dict[str, Callable[..., Any]], args: tuple[Any, ...]) -> dict[str, float]:
    """Median milliseconds per variant. The variants take turns, each round starting from the next
    one; in its turn a variant runs calls on fresh copies for about ``TURN_SECONDS``
    (``LEAST_CALLS_PER_TURN`` calls at least). A turn's first call finds the caches and branch
    predictors the previous variant left (after the eager variant, milliseconds of interpreter
    work): its times are the ``_cold_ms`` medians. The others, as ``timeit`` measures, are the
    ``_ms`` medians."""
    if not functions:
        return {}
    one_call = {}
    for name, fn in functions.items():
        copies = copy_arguments(args)
        begin = time.perf_counter()
        fn(*copies)
        one_call[name] = time.perf_counter() - begin
    calls = {
        name: max(LEAST_CALLS_PER_TURN, min(MOST_REPEATS, int(TURN_SECONDS / max(t, 1e-9))))
        for name, t in one_call.items()
    }
    one_round = sum(calls[name] * one_call[name] for name in functions)
    rounds = max(3, min(MOST_REPEATS, int(SECONDS_PER_KERNEL / max(one_round, 1e-9))))
    warm: dict[str, list[float]] = {name: [] for name in functions}
    cold: dict[str, list[float]] = {name: [] for name in functions}
    names = list(functions)
    for round_ in range(rounds):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            fn = functions[name]
            for call in range(calls[name]):
                copies = copy_arguments(args)
                begin = time.perf_counter()
                fn(*copies)
                (warm if call else cold)[name].append(time.perf_counter() - begin)
    medians = {}
    for name in functions:
        medians[f"{name}_ms"] = statistics.median(warm[name]) * 1e3
        medians[f"{name}_cold_ms"] = statistics.median(cold[name]) * 1e3
    return medians


def _ratio(row: dict[str, Any], name: str, base: str = "eager") -> float | None:
    a, b = row.get(f"{name}_ms"), row.get(f"{base}_ms")
    return a / b if a is not None and b else None


def _cell(value: float | None, width: int = 9, digits: int = 3) -> str:
    return f"{value:{width}.{digits}f}" if value is not None else " " * (width - 1) + "-"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'kernel':26} {'eager ms':>9} {'numpy':>9} {'compiled':>9} {'numba':>9} {'comp/nb':>9}"
        f" {'cold c/nb':>9} {'1st comp':>9} {'1st nb':>9}  notes"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        notes = ", ".join(f"{k}: {v}" for k, v in row["status"].items())
        print(
            f"{row['name']:26} {_cell(row.get('eager_ms'), 9, 2)} {_cell(_ratio(row, 'numpy'))}"
            f" {_cell(_ratio(row, 'compiled'))} {_cell(_ratio(row, 'numba'))} {_cell(_ratio(row, 'compiled', 'numba'))}"
            f" {_cell(_ratio(row, 'compiled_cold', 'numba_cold'))}"
            f" {_cell(row.get('first_compiled_s'), 9, 2)} {_cell(row.get('first_numba_s'), 9, 2)}  {notes}"
        )
    print("-" * len(header))
    for name in ("numpy", "compiled", "numba"):
        ratios = [r for r in (_ratio(row, name) for row in rows) if r]
        if ratios:
            print(f"geometric mean of {name}/eager over {len(ratios)} kernels: {_geomean(ratios):.3f}")
    both = [row for row in rows if _ratio(row, "compiled") and _ratio(row, "numba")]
    if both:
        compiled = _geomean([_ratio(row, "compiled") or 1.0 for row in both])
        numba = _geomean([_ratio(row, "numba") or 1.0 for row in both])
        cold = _geomean([_ratio(row, "compiled_cold", "numba_cold") or 1.0 for row in both])
        print(
            f"over the {len(both)} kernels both ran: compiled/eager {compiled:.4f}, numba/eager {numba:.4f},"
            f" compiled/numba {compiled / numba:.3f} (first calls of a turn: {cold:.3f})"
        )


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--suite", action="store_true", help="every kernel of benchmarks/kernels, not only element loops"
    )
    parser.add_argument("--only", help="comma-separated kernel names")
    parser.add_argument(
        "--preset",
        default="small",
        help="argument sizes: test, small (default) or medium (element-loop kernels only: calls of 0.1-3 ms,"
        " where the loops' machine code sets the time, not the microsecond of Python around a call)",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    options = parser.parse_args(argv)
    if options.only:
        kernels = [BY_NAME[name] for name in options.only.split(",")]
    elif options.suite:
        kernels = list(KERNELS)
    else:
        kernels = [k for k in KERNELS if k.family == "element_loops"]
    rows = [measure(kernel, options.preset) for kernel in kernels if options.preset in kernel.sizes]
    print_table(rows)
    if options.json:
        with open(options.json, "w") as file:
            json.dump(rows, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
