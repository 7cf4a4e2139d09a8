"""The NumPy surface: every sample call of the table (tests/numpy_surface/calls.py) gives eager
NumPy's results when converted, over variants of its arguments.

Each sample runs with the base arguments (float64, fixed shapes) and with every variant that
changes an argument it reads: float32, float16, complex128, int64, int32 and bool instead of the
real floating arguments, other shapes, empty arrays, 0-d arrays (tests/numpy_surface/arguments.py).
The converted result must equal eager's in type, structure, shape, dtype and values (floats within
a tolerance scaled to the dtype), and so must the arguments' contents after the call; where eager
NumPy raises, the converted function must raise the same exception class (the nearest one a program
can name: a builtin or ``numpy.exceptions``/``numpy.linalg`` class). Warnings are ignored.

The cases that fail today are listed in tests/numpy_surface/known_failures.txt (written by
``python tools/numpy_coverage.py --known-failures``) and run as strict expected failures, with the
failure as the reason: fixing one makes its case fail as XPASS until the list is rewritten.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from numpy_surface.arguments import ARGUMENTS, VARIANTS, Variant, make_argument
from numpy_surface.calls import CALLS, NOT_ARRAY, public_names, resolve
from numpy_surface.running import Sample, all_samples, run_sample, sample_function, variants_of

REPOSITORY = Path(__file__).resolve().parents[1]
KNOWN_FAILURES = REPOSITORY / "tests" / "numpy_surface" / "known_failures.txt"
COVERAGE_TOOL = REPOSITORY / "tools" / "numpy_coverage.py"


def known_failures() -> dict[tuple[str, str, str], str]:
    """(name, variant, sample call) -> the failure, from known_failures.txt."""
    failures = {}
    for line in KNOWN_FAILURES.read_text().splitlines():
        if line and not line.startswith("#"):
            name, variant, source, failure = line.split("\t")
            failures[(name, variant, source)] = failure
    return failures


KNOWN = known_failures()
SAMPLES = all_samples()
# The failures, the table and the document were measured with one NumPy version: with another
# one (a CI machine that resolves a newer NumPy) expected failures may pass and public names may
# differ, so they are not held to it.
SAME_NUMPY = f"with NumPy {np.__version__};" in (REPOSITORY / "docs" / "numpy-coverage.md").read_text()


def cases() -> list[Any]:
    """A case per sample and variant; the ones known to fail are strict expected failures."""
    params = []
    for sample in SAMPLES:
        for variant in variants_of(sample):
            failure = KNOWN.get((sample.name, variant.name, sample.source))
            marks = [pytest.mark.xfail(strict=SAME_NUMPY, reason=failure)] if failure else []
            params.append(pytest.param(sample, variant, id=f"{sample.source} [{variant.name}]", marks=marks))
    return params


@pytest.fixture(scope="module")
def functions(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Sample], Callable[..., Any]]:
    """The function of a sample, written into a module file once per sample."""
    directory = tmp_path_factory.mktemp("numpy_surface")
    made: dict[Sample, Callable[..., Any]] = {}

    def function(sample: Sample) -> Callable[..., Any]:
        if sample not in made:
            made[sample] = sample_function(sample, directory, len(made))
        return made[sample]

    return function


@pytest.mark.parametrize(("sample", "variant"), cases())
def test_converted_call_matches_eager_numpy(sample: Sample, variant: Variant, functions) -> None:
    outcome = run_sample(functions(sample), sample, variant)
    assert outcome.passed, (
        f"{sample.name}: {sample.source} with {variant.name} arguments: {outcome.status}: {outcome.detail}"
    )


@pytest.mark.skipif(not SAME_NUMPY, reason="the table lists the public names of the NumPy it was written for")
def test_the_table_covers_every_public_name_once() -> None:
    names = set(public_names())
    assert not set(CALLS) & set(NOT_ARRAY), "a name is both sampled and said to take no arrays"
    assert names <= set(CALLS) | set(NOT_ARRAY), (
        f"names missing from the table: {sorted(names - set(CALLS) - set(NOT_ARRAY))}"
    )
    for name in set(CALLS) - names:  # the ufunc methods
        method = resolve(name)
        assert isinstance(getattr(method, "__self__", None), np.ufunc), f"{name} is neither public nor a ufunc method"
    assert all(CALLS.values()), "a name without sample calls"


def test_the_arguments_are_arrays_of_the_shapes_their_variants_give() -> None:
    for variant in VARIANTS:
        for name in ARGUMENTS:
            value = make_argument(name, variant)
            assert type(value) is np.ndarray, f"{name} ({variant.name}) is a {type(value).__name__}"
            assert value.shape == variant.shape_of(name), f"{name} ({variant.name}) has shape {value.shape}"


def test_every_known_failure_is_a_case() -> None:
    cases = {(s.name, v.name, s.source) for s in SAMPLES for v in variants_of(s)}
    assert not set(KNOWN) - cases, f"known failures of no case: {sorted(set(KNOWN) - cases)}"


@pytest.mark.skipif(not SAME_NUMPY, reason="docs/numpy-coverage.md was generated with another NumPy version")
def test_the_coverage_document_is_up_to_date() -> None:
    check = subprocess.run(
        [sys.executable, str(COVERAGE_TOOL), "--check"], capture_output=True, text=True, cwd=REPOSITORY
    )
    assert check.returncode == 0, check.stdout + check.stderr
