"""Benchmark runner: eager NumPy vs dy2st on the design's workloads, printed as one table.

"dy2st" is the NumPy tier (``backend="numpy"``); with Numba installed, "compiled" is the compiled
tier (``backend="compiled"``, compiled before its first call returns; "1st comp" is that first
call) and "numba" is ``numba.njit`` applied to the eager function, where Numba compiles it;
"hand numba" is the workload rewritten by hand with loops for ``@numba.njit``
(``numba_references.py``). With JAX installed, "jax.jit" is the workload written for JAX
(``jax_references.py``: ``lax.scan`` for the RNN, ``lax.while_loop`` for Newton, float64 kept).

    python benchmarks/run.py                # full sizes (a few minutes on 2 cores)
    python benchmarks/run.py --quick        # small sizes, few repeats: a smoke run
    python benchmarks/run.py --json out.json --only W1,W5
    python benchmarks/run.py --dynamic      # every argument size symbolic (to_static(dynamic=True))

Times are medians over repeats after a warm-up; eager and converted repeats alternate, so a ratio is
measured in one run under the same load. Peak memory is what ``tracemalloc`` sees NumPy allocate
during one steady-state call; for dy2st it adds the buffers the memory plan keeps across calls.
"lower bound" is the largest set of simultaneously live values of the optimized graph; "first call"
is what a fresh ``to_static`` spends before it can run (convert + build + optimize + generate); the
W4 rows give a first call of the seed model minus the steady call after it (medians over fresh
processes, and over conversions of a second function in this warm one), with the import apart. A
workload that fails to convert prints ``skipped: <reason>`` and the table still prints.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import asdict, dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax_references  # noqa: E402
import numba_references  # noqa: E402
import workloads  # noqa: E402

import dy2st  # noqa: E402
from dy2st.backend.numpy.target import NUMPY_TARGET  # noqa: E402
from dy2st.passes.memory_plan import memory_report  # noqa: E402

try:  # a reference column for the elementwise chain, never a dependency
    import numexpr
except ImportError:
    numexpr = None

try:  # the compiled tier's dependency, and the reference column of numba.njit on the eager code
    import numba
except ImportError:
    numba = None

MIB = 1 << 20


@dataclass
class Row:
    """The figures of one workload (times in seconds, memory in bytes)."""

    name: str
    eager_time: float | None = None
    converted_time: float | None = None
    ratio: float | None = None
    eager_peak: int | None = None
    converted_peak: int | None = None
    lower_bound: int | None = None
    planned_peak: int | None = None
    first_call: float | None = None
    numexpr_time: float | None = None
    compiled_time: float | None = None
    compiled_ratio: float | None = None
    compiled_first_call: float | None = None
    numba_time: float | None = None
    hand_numba_time: float | None = None
    jax_time: float | None = None
    target: str = ""
    skipped: str | None = None


# --- measuring ---------------------------------------------------------------------------------------
def _loop_time(fn, args, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number


def _calls_per_repeat(fns, args, min_seconds: float) -> int:
    """Enough calls that one repeat of the slowest function lasts ``min_seconds``."""
    slowest = max(_loop_time(fn, args, 1) for fn in fns)
    return max(1, int(min_seconds / max(slowest, 1e-7)))


def interleaved_medians(fns, args, repeats: int, min_seconds: float) -> list[float]:
    """Median per-call time of each function, their repeats alternating."""
    for fn in fns:
        fn(*args)  # warm-up
    number = _calls_per_repeat(fns, args, min_seconds)
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, samples):
            times.append(_loop_time(fn, args, number))
    return [statistics.median(times) for times in samples]


def traced_peak(fn, args) -> int:
    """Bytes NumPy allocates at the peak of one call, above what was allocated before it."""
    fn(*args)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def _check_equal(converted, eager, name: str) -> None:
    for got, want in zip(_leaves(converted), _leaves(eager)):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or got.dtype != want.dtype or not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: converted result differs from eager NumPy")


def _leaves(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def measure(workload: workloads.Workload, quick: bool, dynamic: bool | None = None) -> Row:
    """One table row; a workload that fails to convert comes back with ``skipped`` set.
    ``dynamic=True`` measures the graph with every argument size symbolic."""
    row = Row(workload.name, target=workload.target)
    workload.setup(quick)
    args = workload.make_args(quick)
    # "dy2st" is the NumPy tier; the compiled tier has a column of its own.
    static = dy2st.to_static(workload.converted, dynamic=dynamic, backend="numpy")
    try:
        start = time.perf_counter()
        graph = static.graph(*args)  # convert + build + optimize + generate, without running
        row.first_call = time.perf_counter() - start
        _check_equal(static(*args), workload.eager(*args), workload.name)
    except Exception as e:  # the table always prints: say why this row could not run
        row.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        return row
    repeats, min_seconds = (3, 0.002) if quick else (7, 0.05)
    row.eager_time, row.converted_time = interleaved_medians([workload.eager, static], args, repeats, min_seconds)
    row.ratio = row.converted_time / row.eager_time
    report = memory_report(graph, NUMPY_TARGET)
    row.eager_peak = traced_peak(workload.eager, args)
    row.converted_peak = traced_peak(static, args) + report.persistent
    row.lower_bound = report.lower_bound
    row.planned_peak = report.planned_peak
    if numba is not None:
        _measure_compiled(row, workload, args, dynamic, repeats, min_seconds)
    _measure_references(row, workload, args, repeats, min_seconds)
    if numexpr is not None and workload.converted is workloads.gelu_chain:
        expression = "(0.5*x*(1.0+tanh(0.7978845608*(x+0.044715*x**3))))*1.702+0.25"
        evaluate = lambda x: numexpr.evaluate(expression, local_dict={"x": x})  # noqa: E731
        row.numexpr_time = interleaved_medians([evaluate], args, repeats, min_seconds)[0]
    return row


def _measure_compiled(row: Row, workload, args, dynamic, repeats: int, min_seconds: float) -> None:
    """The compiled tier (compiled before its first call returns) and ``numba.njit`` applied to
    the eager function, each timed alternating with eager NumPy."""
    compiled = dy2st.to_static(workload.converted, dynamic=dynamic, backend="compiled")
    start = time.perf_counter()
    _check_equal(compiled(*args), workload.eager(*args), workload.name)
    row.compiled_first_call = time.perf_counter() - start
    fns = [workload.eager, compiled]
    jitted = numba.njit(workload.eager)
    try:
        _check_equal(jitted(*args), workload.eager(*args), workload.name)
        fns.append(jitted)
    except Exception:  # what Numba cannot compile (a matmul without SciPy, ...) has no column
        pass
    times = interleaved_medians(fns, args, repeats, min_seconds)
    row.compiled_time, row.compiled_ratio = times[1], times[1] / times[0]
    row.numba_time = times[2] if len(times) > 2 else None


def _measure_references(row: Row, workload, args, repeats: int, min_seconds: float) -> None:
    """The reference versions of the workload, where their library is installed: ``jax.jit`` of
    it written for JAX (``jax_references``) and ``@numba.njit`` of it written by hand with loops
    (``numba_references``). Each result is checked against eager NumPy (within float tolerance:
    they sum in other orders), then timed alternating with eager NumPy after a compiling call."""
    for module, field_name in ((jax_references, "jax_time"), (numba_references, "hand_numba_time")):
        make = module.reference(workload.name)
        if make is None:
            continue
        call = make(args)
        expected = [np.asarray(leaf) for leaf in _leaves(workload.eager(*args))]
        got = [np.asarray(leaf) for leaf in _leaves(call())]
        if not all(_close(g, e) for g, e in zip(got, expected)):
            print(f"{workload.name}: the {field_name} reference differs from eager NumPy", file=sys.stderr)
            continue
        timed = [workload.eager, lambda *_, call=call: call()]
        eager_time, time_taken = interleaved_medians(timed, args, repeats, min_seconds)
        setattr(row, field_name, time_taken * row.eager_time / eager_time)  # on the row's eager scale


def _close(got: np.ndarray, expected: np.ndarray) -> bool:
    """Equal within what another summation order gives in the result's precision."""
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    tolerance = 1e-3 if expected.dtype == np.float32 else 1e-9
    return got.shape == expected.shape and float(np.max(np.abs(got - expected), initial=0.0)) <= tolerance * scale


# --- W4: the first call, in a fresh and in a warm process -------------------------------------------
# W4 counts what a first call costs beyond an ordinary one: the first call (decorate + convert +
# build + optimize + generate + run) minus the steady call that follows it. `import dy2st` is timed
# apart (it is paid once, whether or not anything is converted).
_FRESH_PROCESS = r"""
import sys, time
sys.path.insert(0, {here!r})
import numpy as np
start = time.perf_counter()
import dy2st
imported = time.perf_counter() - start
import workloads
workloads._setup_seed({quick!r})
args = workloads._seed_args({quick!r})
start = time.perf_counter()
static = dy2st.to_static(workloads.seed_model)
static(*args)
first = time.perf_counter() - start
start = time.perf_counter()
static(*args)
steady = time.perf_counter() - start
print(first, steady, imported)
"""


def _fresh_first_call(quick: bool, runs: int) -> tuple[float, float, float]:
    """Median (first call - steady call, first call, import time) over ``runs`` fresh processes.

    The processes use a bytecode cache of their own, filled by one uncounted run, as an installed
    package would: with ``PYTHONDONTWRITEBYTECODE`` set, every import (and every module the first
    call imports) would be compiled from source again, which no user's process does.
    """
    script = _FRESH_PROCESS.format(here=HERE, quick=quick)
    samples = []
    with tempfile.TemporaryDirectory(prefix="dy2st-bytecode-") as bytecode:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = bytecode
        for run in range(runs + 1):
            done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
            if done.returncode != 0:
                raise RuntimeError((done.stderr.strip().splitlines() or ["no output"])[-1])
            first, steady, imported = (float(v) for v in done.stdout.split())
            if run:  # the first run compiles the bytecode cache
                samples.append((first - steady, first, imported))
    return tuple(statistics.median(column) for column in zip(*samples))


def _warm_first_call(quick: bool, runs: int) -> tuple[float, float]:
    """Median (first call - steady call, first call) of a function converted in a warm process.

    The process has converted and run the seed model; each run converts ``seed_model_again``
    afresh (the conversion caches are emptied), as a second function of the program would be.
    """
    from dy2st.frontend import convert
    from dy2st.runtime import functions

    workloads._setup_seed(quick)
    args = workloads._seed_args(quick)
    dy2st.to_static(workloads.seed_model)(*args)
    samples = []
    for _ in range(runs):
        convert._CODE_CACHE.pop(convert._cache_key(workloads.seed_model_again), None)
        functions._FUNCTION_CACHE.pop(workloads.seed_model_again, None)
        start = time.perf_counter()
        static = dy2st.to_static(workloads.seed_model_again)
        static(*args)
        first = time.perf_counter() - start
        start = time.perf_counter()
        static(*args)
        steady = time.perf_counter() - start
        samples.append((first - steady, first))
    return tuple(statistics.median(column) for column in zip(*samples))


def first_call_rows(quick: bool) -> list[Row]:
    """W4: first call minus a steady call of the seed model, in fresh processes and in this one."""
    runs = 3 if quick else 9
    fresh = Row("W4 first call, fresh process", target="<= 15 ms (first - steady)")
    try:
        fresh.first_call, first, imported = _fresh_first_call(quick, runs)
        fresh.target += f" (whole first call {first * 1e3:.1f} ms; import dy2st {imported * 1e3:.0f} ms)"
    except Exception as e:
        fresh.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    warm = Row("W4 first call, warm process", target="<= 3 ms (first - steady)")
    try:
        warm.first_call, first = _warm_first_call(quick, 5 if quick else 21)
        warm.target += f" (whole first call {first * 1e3:.2f} ms)"
    except Exception as e:
        warm.skipped = f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return [fresh, warm]


# --- the table ---------------------------------------------------------------------------------------
_COLUMNS = (
    "workload",
    "eager ms",
    "dy2st ms",
    "ratio",
    "eager MiB",
    "dy2st MiB",
    "bound MiB",
    "first ms",
    "numexpr ms",
    "compiled ms",
    "ratio",
    "1st comp ms",
    "numba ms",
    "hand numba ms",
    "jax.jit ms",
    "target",
)


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def _mib(nbytes: int | None) -> str:
    return "" if nbytes is None else f"{nbytes / MIB:.2f}"


def format_row(row: Row) -> list[str]:
    if row.skipped:
        return [row.name, f"skipped: {row.skipped}"]
    return [
        row.name,
        _ms(row.eager_time),
        _ms(row.converted_time),
        "" if row.ratio is None else f"{row.ratio:.3f}",
        _mib(row.eager_peak),
        _mib(row.converted_peak),
        _mib(row.lower_bound),
        _ms(row.first_call),
        _ms(row.numexpr_time),
        _ms(row.compiled_time),
        "" if row.compiled_ratio is None else f"{row.compiled_ratio:.3f}",
        _ms(row.compiled_first_call),
        _ms(row.numba_time),
        _ms(row.hand_numba_time),
        _ms(row.jax_time),
        row.target,
    ]


def print_table(rows: list[Row], out=sys.stdout) -> None:
    cells = [list(_COLUMNS)] + [format_row(r) for r in rows]
    widths = [max(len(c[i]) for c in cells if len(c) > i and len(c) == len(_COLUMNS)) for i in range(len(_COLUMNS))]
    for line in cells:
        if len(line) < len(_COLUMNS):  # a skipped row: name, then the reason
            print(f"{line[0]:<{widths[0]}}  {line[1]}", file=out)
            continue
        print(
            "  ".join(
                c.ljust(w) if i in (0, len(line) - 1) else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))
            ).rstrip(),
            file=out,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Eager NumPy vs dy2st on the design's workloads.")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke run)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--only", metavar="NAMES", help="comma-separated prefixes of workload names, e.g. W1,W5")
    parser.add_argument(
        "--dynamic", action="store_true", help="graphs with every argument size symbolic (to_static(dynamic=True))"
    )
    options = parser.parse_args(argv)
    prefixes = options.only.split(",") if options.only else None

    def wanted(name: str) -> bool:
        return prefixes is None or any(name.startswith(p) for p in prefixes)

    dynamic = True if options.dynamic else None
    rows = [measure(w, options.quick, dynamic) for w in workloads.WORKLOADS if wanted(w.name)]
    if wanted("W4"):
        rows += first_call_rows(options.quick)
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"dy2st benchmarks ({'quick sizes' if options.quick else 'full sizes'}; "
        f"{'symbolic sizes; ' if options.dynamic else ''}numpy {np.__version__}; "
        f"{os.cpu_count()} cpus; OPENBLAS_NUM_THREADS={blas_threads})"
        f"{'' if numexpr else '; numexpr not installed'}{'' if numba else '; numba not installed'}"
        f"{'' if jax_references.jax else '; jax not installed'}"
    )
    print_table(rows)
    if options.json:
        with open(options.json, "w") as f:
            json.dump({"quick": options.quick, "rows": [asdict(r) for r in rows]}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
