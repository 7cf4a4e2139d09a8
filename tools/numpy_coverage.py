"""Measure which NumPy names convert; write docs/numpy-coverage.md and docs/numpy-support.md's coverage section.

    python tools/numpy_coverage.py                    # write both
    python tools/numpy_coverage.py --check            # exit 1 if either is out of date
    python tools/numpy_coverage.py --known-failures   # also write tests/numpy_surface/known_failures.txt

Every name of the table in tests/numpy_surface/calls.py (every public callable of ``numpy``,
``numpy.linalg``, ``numpy.fft``, every public ``ndarray`` method, and the ufunc methods programs
use) is either a name that takes no arrays, with its category, or a name with sample calls. Each
sample call is written into a module file of its own, converted with ``dy2st.to_static`` and run
on the fixed arguments of tests/numpy_surface/arguments.py, and compared with eager NumPy (result
types, structure, shapes, dtypes, values, and the arguments' contents after the call). A name's
layer sums up its samples': ``precise`` (no ``numpy_call`` op in any graph: hand-written rules),
``generic`` (``numpy_call`` ops: the generic layer calls NumPy when the graph runs), ``precise and
generic`` (some of each), ``literal only`` (called on literals alone, computed while the graph is
built), ``partial`` (some samples fail), or the way every sample fails (``refused``, ``run error``,
``mismatch``, ``crash``).

``--known-failures`` runs every sample over every argument variant (other dtypes, shapes, empty
and 0-d arrays) too and writes the cases that fail, which tests/test_numpy_surface.py marks as
expected failures (strict: a case that starts passing fails the test until the file is rewritten).
The output is deterministic: names sorted, no addresses, no timings, no temporary paths.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "tests"))
# The IR verifier runs after every pass, as in the tests (tests/conftest.py): an invalid graph is
# a crash in the table, and the table is the same whether pytest or a shell runs this script.
os.environ.setdefault("DY2ST_VERIFY", "1")

from numpy_surface.calls import CALLS, NOT_ARRAY, public_names  # noqa: E402  (the tests folder is put on the path above)
from numpy_surface.running import (  # noqa: E402
    CONVERTED,
    CRASH,
    GENERIC,
    LITERAL,
    MISMATCH,
    PRECISE,
    REFUSED,
    RUN_ERROR,
    Outcome,
    Sample,
    all_samples,
    run_sample,
    sample_function,
    variants_of,
)

DOCUMENT = REPOSITORY / "docs" / "numpy-coverage.md"
SUPPORT_PAGE = REPOSITORY / "docs" / "numpy-support.md"  # its coverage section, between marks
KNOWN_FAILURES = REPOSITORY / "tests" / "numpy_surface" / "known_failures.txt"
COMMAND = "python tools/numpy_coverage.py"

PRECISE_AND_GENERIC = "precise and generic"
PARTIAL = "partial"
CONVERTING_LAYERS = (PRECISE, GENERIC, PRECISE_AND_GENERIC, LITERAL)
FAILING_LAYERS = (PARTIAL, REFUSED, RUN_ERROR, MISMATCH, CRASH)
_FAILURE_PRIORITY = (CRASH, MISMATCH, RUN_ERROR, REFUSED)


# --- running -------------------------------------------------------------------------------------
@contextlib.contextmanager
def quiet_native_output() -> Iterator[None]:
    """LAPACK prints "On entry to DLASCL parameter number 4 had an illegal value" for NaN and
    infinite inputs straight to file descriptor 1; the runs send descriptors 1 and 2 to /dev/null
    (Python's own exceptions still reach the caller, after they are restored)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            for descriptor, copy in zip((1, 2), saved):
                os.dup2(copy, descriptor)
                os.close(copy)


def run_base(samples: list[Sample], directory: Path) -> dict[Sample, Outcome]:
    """Each sample on the base arguments."""
    with quiet_native_output():
        return {sample: run_sample(sample_function(sample, directory, k), sample) for k, sample in enumerate(samples)}


def run_every_variant(samples: list[Sample], directory: Path) -> dict[tuple[Sample, str], Outcome]:
    """Each sample on every variant of the arguments that changes one it reads."""
    outcomes = {}
    with quiet_native_output():
        for k, sample in enumerate(samples):
            function = sample_function(sample, directory, k)
            for variant in variants_of(sample):
                outcomes[(sample, variant.name)] = run_sample(function, sample, variant)
    return outcomes


# --- summing up a name ---------------------------------------------------------------------------
def layer_of(outcomes: list[Outcome]) -> str:
    """The name's layer from its samples' outcomes."""
    statuses = [o.status for o in outcomes]
    failed = [s for s in statuses if s not in CONVERTED]
    if failed:
        if len(failed) < len(statuses):
            return PARTIAL
        return next(s for s in _FAILURE_PRIORITY if s in failed)
    kinds = set(statuses) - {LITERAL}
    if not kinds:
        return LITERAL
    if kinds == {PRECISE, GENERIC}:
        return PRECISE_AND_GENERIC
    return kinds.pop()


def notes_of(name: str, samples: list[Sample], outcomes: list[Outcome]) -> str:
    """What the samples show beyond the layer: which ones the generic layer runs when the name is
    partly precise, NumPy functions it calls other than the name, data-dependent sizes."""
    notes = []
    statuses = {o.status for o in outcomes}
    if {PRECISE, GENERIC} <= statuses:
        generic = [s.source for s, o in zip(samples, outcomes) if o.status == GENERIC]
        notes.append("generic for " + ", ".join(code(s) for s in generic))
    functions = sorted({f for o in outcomes if o.status == GENERIC for f in o.detail.split(", ")})
    others = [f for f in functions if f != name]
    if others:
        notes.append("numpy_call of " + ", ".join(others))
    sized = [s.source for s, o in zip(samples, outcomes) if o.data_dependent]
    if sized and len(sized) == len(samples):
        notes.append("data-dependent result sizes")
    elif sized:
        notes.append("data-dependent result sizes for " + ", ".join(code(s) for s in sized))
    converted = sum(o.status in CONVERTED for o in outcomes)
    if 0 < converted < len(outcomes):
        notes.append(f"{converted} of {len(outcomes)} samples convert")
    return "; ".join(notes)


def errors_of(samples: list[Sample], outcomes: list[Outcome]) -> str:
    return "<br>".join(
        f"{code(s.source)}: {o.status}: {escape(o.detail)}"
        for s, o in zip(samples, outcomes)
        if o.status not in CONVERTED
    )


def code(source: str) -> str:
    return f"`{escape(source)}`"


def escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# --- the document --------------------------------------------------------------------------------
def document(outcomes: dict[Sample, Outcome]) -> str:
    by_name: dict[str, list[Sample]] = {}
    for sample in outcomes:
        by_name.setdefault(sample.name, []).append(sample)
    layers = {name: layer_of([outcomes[s] for s in samples]) for name, samples in by_name.items()}
    rows = []
    for name in sorted([*CALLS, *NOT_ARRAY]):
        if name in NOT_ARRAY:
            category, reason = NOT_ARRAY[name]
            rows.append(f"| `{name}` | no arrays: {category} | {escape(reason)} | |")
            continue
        samples = by_name[name]
        results = [outcomes[s] for s in samples]
        rows.append(
            f"| `{name}` | {layers[name]} | {notes_of(name, samples, results)} | {errors_of(samples, results)} |"
        )
    return "\n".join(
        [*_header(layers, outcomes), "| name | layer | notes | errors |", "| --- | --- | --- | --- |", *rows, ""]
    )


BEGIN_MARK = "<!-- coverage: written by tools/numpy_coverage.py, do not edit by hand -->"
END_MARK = "<!-- coverage: end -->"


def support_section(outcomes: dict[Sample, Outcome], page: str) -> str:
    """``page`` (docs/numpy-support.md) with its coverage section, between the marks, rewritten:
    the summary and every name that does not convert in every sample, with its errors."""
    by_name: dict[str, list[Sample]] = {}
    for sample in outcomes:
        by_name.setdefault(sample.name, []).append(sample)
    layers = {name: layer_of([outcomes[s] for s in samples]) for name, samples in by_name.items()}
    header = _header(layers, outcomes)
    summary = header[header.index("## Summary") + 2 : header.index("## Names")]
    failing = [
        f"| `{name}` | {layers[name]} | {errors_of(by_name[name], [outcomes[s] for s in by_name[name]])} |"
        for name in sorted(layers)
        if layers[name] not in CONVERTING_LAYERS
    ]
    section = [
        BEGIN_MARK,
        *summary,
        "The names that do not convert in every sample, and why:",
        "",
        "| name | layer | errors |",
        "| --- | --- | --- |",
        *failing,
        END_MARK,
    ]
    before, _, rest = page.partition(BEGIN_MARK)
    _, _, after = rest.partition(END_MARK)
    return before + "\n".join(section) + after


def _header(layers: dict[str, str], outcomes: dict[Sample, Outcome]) -> list[str]:
    counts = Counter(layers.values())
    array_names = len(layers)
    converting = sum(counts[layer] for layer in CONVERTING_LAYERS)
    public = set(public_names()) & set(layers)
    public_converting = sum(layers[name] in CONVERTING_LAYERS for name in public)
    categories = Counter(category for category, _ in NOT_ARRAY.values())
    sample_counts = Counter(o.status for o in outcomes.values())
    lines = [
        "# NumPy coverage",
        "",
        f"Generated by `{COMMAND}` with NumPy {np.__version__}; do not edit by hand. "
        f"`{COMMAND} --check` fails when this file is out of date (tests/test_numpy_surface.py runs it).",
        "",
        "Every public callable of `numpy`, `numpy.linalg` and `numpy.fft`, every public `ndarray` method, and the "
        "ufunc methods programs use (`np.add.reduce`, ...). Names that take arrays have sample calls "
        "(tests/numpy_surface/calls.py) over fixed arguments (tests/numpy_surface/arguments.py: `x` a float64 (3, 4) "
        "array, `v` a vector, `M` a square matrix, `i` indices, `m` a mask, `z` a complex array, ...); each is "
        "converted, run, and compared with eager NumPy: result types, structure, shapes, dtypes, values, and the "
        "arguments' contents after the call. The layer of a name:",
        "",
        "- **precise**: every sample converts with no `numpy_call` op in its graph (hand-written rules, or NumPy's "
        "own Python code staged op by op);",
        "- **generic**: every sample converts through the generic layer (`numpy_call` ops call NumPy when the graph "
        "runs, src/dy2st/ops/generic.py);",
        "- **precise and generic**: both, by sample (the notes say which samples are generic);",
        "- **literal only**: the samples take no arrays (`np.hanning(5)`); the result is computed while the graph is "
        "built;",
        "- **partial**: some samples convert, others fail (the errors column);",
        "- **refused** (dy2st raised its error while building), **run error** (the graph raised when it ran), "
        "**mismatch** (a result differs from eager's), **crash** (an exception that is not dy2st's): every sample "
        "fails so;",
        "- **no arrays**: the name takes and returns no arrays (configuration, printing, I/O, dtype classes, ...).",
        "",
        "tests/test_numpy_surface.py runs the samples that convert over other dtypes, shapes, empty and 0-d arrays.",
        "",
        "## Summary",
        "",
        f"{array_names} names take arrays; **{converting} of them ({100 * converting / array_names:.1f}%) convert** "
        f"in every sample, {counts[PARTIAL]} in some samples. Of the {len(public)} public names among them (the others "
        f"are ufunc methods), {public_converting} ({100 * public_converting / len(public):.1f}%) convert. "
        f"{len(NOT_ARRAY)} names take no arrays.",
        "",
        "| layer | names |",
        "| --- | --- |",
        *(f"| {layer} | {counts[layer]} |" for layer in (*CONVERTING_LAYERS, *FAILING_LAYERS)),
        *(f"| no arrays: {category} | {n} |" for category, n in sorted(categories.items())),
        "",
        f"{len(outcomes)} sample calls: "
        + ", ".join(
            f"{n} {status}" for status, n in sorted(sample_counts.items(), key=lambda item: (-item[1], item[0]))
        )
        + ".",
        "",
        "## Names",
        "",
    ]
    return lines


def known_failures(outcomes: dict[tuple[Sample, str], Outcome]) -> str:
    lines = [
        "# The cases of tests/test_numpy_surface.py that fail today: name, variant, sample call, failure.",
        f"# Written by `{COMMAND} --known-failures`; do not edit by hand. Tab-separated.",
    ]
    failing = sorted(
        (sample.name, variant, sample.source, f"{outcome.status}: {outcome.detail}")
        for (sample, variant), outcome in outcomes.items()
        if not outcome.passed
    )
    lines += ["\t".join(fields) for fields in failing]
    return "\n".join(lines) + "\n"


# --- main ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are out of date, write nothing")
    parser.add_argument(
        "--known-failures",
        action="store_true",
        help=f"also run every argument variant and write {KNOWN_FAILURES.relative_to(REPOSITORY)}",
    )
    options = parser.parse_args(argv)
    samples = all_samples()
    files, commands = {}, {}
    with tempfile.TemporaryDirectory() as base, tempfile.TemporaryDirectory() as variants:
        outcomes = run_base(samples, Path(base))
        files[DOCUMENT], commands[DOCUMENT] = document(outcomes), COMMAND
        files[SUPPORT_PAGE], commands[SUPPORT_PAGE] = support_section(outcomes, SUPPORT_PAGE.read_text()), COMMAND
        if options.known_failures:
            files[KNOWN_FAILURES] = known_failures(run_every_variant(samples, Path(variants)))
            commands[KNOWN_FAILURES] = f"{COMMAND} --known-failures"
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    for path in stale:
        relative = path.relative_to(REPOSITORY)
        if options.check:
            print(f"{relative} is out of date: run `{commands[path]}`", file=sys.stderr)
        else:
            path.write_text(files[path])
            print(f"wrote {relative}")
    return 1 if options.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
