"""Differential test: random programs give exactly eager NumPy's results when converted.

Each program is generated from a pattern family and a seed (tests/differential/): a control-flow
skeleton (nested if/while/for over Python and tensor bounds, break/continue/return, and/or/not)
filled with the family's statements and idioms, written to a real module file (dy2st reads the
source), and called a few times eagerly and converted from the same starting state. Results,
exception classes, the final state of every argument and global array, and every random
generator's state must be exactly eager's (types, shapes, dtypes and bits). Outcomes are
passed, mismatch (the worst), internal crash, or refusal (a dy2st build error on valid code).

Run a bigger batch as a script, with a table per family and a reduced reproducer per failure::

    python tests/test_property_programs.py --programs 500 --first-seed 1000 --families views,swaps
    python tests/test_property_programs.py --list-families
"""

from __future__ import annotations

import sys

import pytest

from differential.families import FAMILIES
from differential.program import Program
from differential.running import Category, run_program
from differential.script import main
from differential.skeleton import Knobs, generate

PROGRAMS_PER_FAMILY = 25
PATTERN_SAMPLE = 120  # programs generated (not run) per family to find each of its constructs
PROGRAMS = {"control_flow": 100}  # the original family keeps its larger share
PYTHON_CONDITION_PROGRAMS = range(0, 100, 3)

# Families whose valid programs dy2st means to convert today: a refusal there fails the test.
# In the others a refusal skips the program with its failure class as the reason, so
# `pytest -rs` counts the refusals of each class. Add a family here once it converts.
MEANT_TO_CONVERT = {"control_flow"}

# Programs that fail on today's main, by family and seed, with their failure class (a reason
# string naming it), e.g. {"views": {12: "a view retaken in a tensor loop misses its base"}}.
# They are strict xfails: once a fix makes one pass, remove it here.
KNOWN_FAILURES: dict[str, dict[int, str]] = {}


def _known(family: str, seed: int) -> list[pytest.MarkDecorator]:
    reason = KNOWN_FAILURES.get(family, {}).get(seed)
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _cases():
    for family in FAMILIES:
        for seed in range(PROGRAMS.get(family, PROGRAMS_PER_FAMILY)):
            yield pytest.param(family, seed, marks=_known(family, seed), id=f"{family}-{seed}")


def check(program: Program, directory, refusals_fail: bool) -> None:
    failure = run_program(program, directory)
    if failure is None:
        return
    if failure.category is Category.REFUSAL and not refusals_fail:
        pytest.skip(f"{program.family} refused (not yet meant to convert): {failure.signature}")
    pytest.fail(
        f"[{failure.category.name}] {program.family} seed {program.seed}: {failure.signature}\n"
        f"{program.source}\n{failure.detail}",
        pytrace=False,
    )


@pytest.mark.parametrize("family, seed", list(_cases()))
def test_program_matches_eager(family, seed, tmp_path):
    check(generate(FAMILIES[family], seed), tmp_path, refusals_fail=family in MEANT_TO_CONVERT)


@pytest.mark.parametrize(
    "seed", [pytest.param(s, marks=_known("python_conditions", s)) for s in PYTHON_CONDITION_PROGRAMS]
)
def test_program_with_python_conditions_matches_eager(seed, tmp_path):
    program = generate(FAMILIES["control_flow"], seed, Knobs(tensor_conditions=False))
    check(program, tmp_path, refusals_fail=True)


# Programs that found bugs, kept as regression tests: element_loops 351 (an unused Python-int
# division by zero must still raise), 678 (a -0.0 Python float on one branch of a tensor if),
# 461 (a chain of ifs in a loop made the check for stale views exponential: 30 s to build),
# 155 (`s = max(s, x[0])` from `s = 0.0` with float32 x returned np.float64), 119, 259, 433 and
# 441 (an IndexError or UnboundLocalError midway lost the argument updates made before it), 161
# and 23 (the check that every update runs in place recursed down hundreds of unrolled ifs), 99
# (a loop after an early return lost its carried value's kind).
REGRESSION_PROGRAMS = [("element_loops", s) for s in (351, 678, 461, 155, 119, 259, 433, 441, 161, 23, 99)]


@pytest.mark.parametrize("family, seed", REGRESSION_PROGRAMS, ids=[f"{f}-{s}" for f, s in REGRESSION_PROGRAMS])
def test_regression_program_matches_eager(family, seed, tmp_path):
    check(generate(FAMILIES[family], seed), tmp_path, refusals_fail=True)


CHANGING_SIZE_PROGRAMS = range(6)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("seed", CHANGING_SIZE_PROGRAMS)
def test_program_with_changing_sizes_matches_eager(family, seed, tmp_path):
    """Each call's arrays longer than the last's: the second call builds a graph with symbolic
    sizes (automatic dynamic shapes) that the later calls run."""
    program = generate(FAMILIES[family], seed, Knobs(changing_sizes=True))
    check(program, tmp_path, refusals_fail=family in MEANT_TO_CONVERT)


# The compiled tier (Numba) runs the loops whose bodies work on scalars and single elements; these
# families write such loops. Each program compiles its loops before its first call returns.
COMPILED_TIER_FAMILIES = [
    "element_loops",
    "python_numbers",
    "search_logic",
    "control_flow",
    "rolled_loops",
    "swaps",
    "buffer_swaps",
]
COMPILED_TIER_PROGRAMS = range(12)


@pytest.mark.parametrize("family", COMPILED_TIER_FAMILIES)
@pytest.mark.parametrize("seed", COMPILED_TIER_PROGRAMS)
def test_program_matches_eager_on_the_compiled_tier(family, seed, tmp_path, monkeypatch):
    """The same programs with DY2ST_BACKEND=compiled: compiled loops give eager NumPy's results,
    dtypes, result types, exception classes and final argument states."""
    pytest.importorskip("numba")
    monkeypatch.setenv("DY2ST_BACKEND", "compiled")
    check(generate(FAMILIES[family], seed), tmp_path, refusals_fail=family in MEANT_TO_CONVERT)


CONSTRUCTS = {
    "control_flow": ["break", "continue", "return", " and ", " or ", "not (", "while ", "in range(k)",
                     "in range(3)", " if ", "else:", "-1.0 < s < 2.0", "u["],
    "views": ["row = X[0]", "inner = X[1:-1, 1:-1]", "lo += hi", "X[1:-1, 1:-1] +=", "row = X[", "= x[:k]", "in X:"],
    "inplace_rebind": ["acc += x[", "acc = acc / 2", "snap = acc", "v = v * 0.5", "v[", "snap += 1.0"],
    "broadcast_branches": ["y - (x if ", " else 0.1)", "else 1.0", "y = x * scale", "else x[", "t", "= 0.5"],
    "swaps": ["a[0], a[", "a[[", "M[[", "].copy()", "a[j", "key = a[", "while j", "a[-1 - "],
    "random": ["rng = np.random.default_rng(1234)", "rng.normal(", "g.random()", "np.random.rand(",
               "np.random.seed(", "if rng.random() < 0.5", "g.permutation("],
    "python_numbers": ["t = 0", "big = 2**64", "h = 2**62", "h = h * 2", "f = f * 0.5", "int(x[", "float(x["],
    "defaults_returns": ["w=W", "eps=EPS", "return len(x)", "np.float64(", "np.zeros(())", "x.any()", "flag"],
    "search_logic": ["break\n", "    else:\n", " < n and x[", " and x[", " or ", "idx = -1", "cnt += 1"],
    "rolled_loops": ["x[1:-1] = x[1:-1] +", "in range(1, len(x)):", "prev = A[0]", ", 1:] += A[", " + 1:] = x[", "% 2 == 0", "range(len(x) - 1, 0, -2)", "prev2 = prev",
                     "coef[", "parts.append(", "rows.append(v", "tot = tot + v", "x[:", "np.zeros(m)", "break\n", "if len(x) == 11:", "W = A.T @ A"],
    "stale_reads": ["old = L * 1.0", "snap = L[", "keep[", "Z[", "A[1:] = A[:-1]", "] = np.tanh(A[",
                    "@ L[", "A[1:-1] = 0.25", "x[x.astype(np.int64) % 4]", "acc = acc + old["],
    "data_dependent": ["x[x > ", "np.flatnonzero(", "np.unique(", "np.compress(", "np.putmask(", "x[:k]",
                       "if len(pos) > 2:", "range(len(pos))", "y = x[x <= ", "out[:i", "ptr[i", "out[:n]"],
    "numpy_calls": ["np.linalg.norm(x, ord=1)", "np.roll(x, k)", "np.fft.rfft(", "out=out, where=", "np.add.at(",
                    "out.sort()", "np.linalg.qr(A)", "np.convolve(", "np.percentile(", "np.mean([x.sum()",
                    ".item(0)", ".tolist():", "bool(x[0]", "np.linspace(x[0]", "np.vectorize(", "np.ndenumerate(",
                    "np.add.at(cnt", "np.fill_diagonal(D",
                    "tb[x[:4] > 0]"],
    "element_loops": ["in range(len(x)):", "in range(1, n):", "in range(A.shape[0]):", "in range(A.shape[1]):",
                      "x[-1 - ", " - 1]", "A[i", "y[i", "b[i", "] += ", "h = h ", "t = t ", "s = s + x[",
                      "int(b[", "<< ", ">> ", " ^ ", " & ", " | ", " // b[", " % ", "np.sqrt(abs(x[", "np.exp(",
                      "np.tanh(", "max(", "min(", "np.maximum(", "elif x[", "break\n", "continue\n", "while ",
                      "] > key", "and it", "0xA001", "np.isnan(x[", "q[", " + 1] = ", "A @ x[:"],
    "select_chains": ["np.where(x > ", "np.where(x != x, 0.0, x)", "np.where(x == 0, np.float32(0.5)", "np.where(M < r, r, M)",
                      "x < 2.0, False)", "np.where(x > 0, 1, -1).sum()", ".sum(axis=1, keepdims=True)", "np.where(np.isinf(x), -0.0",
                      "np.inf, x)", "in range(k):"],
    "buffer_swaps": ["a, b = b, a", "tmp = a", "a, b, c = b, c, a", "a, u = u, a", "b[i", "while err > 0.5:",
                     "< k + ", "range(p + 5)", "a[0] = -1.0", "s = s + b[1]"],
}  # fmt: skip


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_generates_its_patterns(family):
    sources = "\n".join(generate(FAMILIES[family], seed).source for seed in range(PATTERN_SAMPLE))
    missing = [construct for construct in CONSTRUCTS[family] if construct not in sources]
    assert not missing, f"{family} never generates {missing}"


if __name__ == "__main__":
    sys.exit(main(description=__doc__.splitlines()[0]))
