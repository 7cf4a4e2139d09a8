"""Differential gradient test: dy2st.grad of random programs equals central finite differences.

The programs are the differential generator's (tests/differential/), with a loss appended that
sums their floating-point results (tests/differential/gradients.py). A mismatch or a crash fails;
a refusal (an op without an adjoint rule, code dy2st does not convert) and a point where the loss
is not smooth are skipped with the reason. Run a bigger batch as a script::

    python tests/autodiff/test_gradient_programs.py --programs 100 --families control_flow,views
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the differential package

from differential.families import FAMILIES  # noqa: E402
from differential.gradients import GradientOutcome, check_gradients  # noqa: E402
from differential.skeleton import generate  # noqa: E402

PROGRAMS_PER_FAMILY = 8
# Programs that once failed, by family and seed, and what failed.
REGRESSIONS = {
    ("stale_reads", 1): "fusion sorted ops by keys that repeated splitting had made equal (KeyError)",
    ("rolled_loops", 20): "a tape pop of no values returned a tuple",
    ("inplace_rebind", 14): "a kink at the point: central differences average two slopes",
    ("numpy_calls", 26): "a gradient through complex values (np.fft.rfft) came back as zeros",
    ("data_dependent", 12): "zeros and broadcasts of a size set by the last iteration of a loop",
}


def _cases() -> list:
    cases = [
        pytest.param(family, seed, id=f"{family}-{seed}") for family in FAMILIES for seed in range(PROGRAMS_PER_FAMILY)
    ]
    return cases + [pytest.param(family, seed, id=f"regression-{family}-{seed}") for family, seed in REGRESSIONS]


@pytest.mark.parametrize("family, seed", _cases())
def test_gradient_of_a_generated_program(family, seed, tmp_path):
    result = check_gradients(generate(FAMILIES[family], seed), tmp_path)
    if result.outcome in (GradientOutcome.MISMATCH, GradientOutcome.CRASH):
        pytest.fail(f"{result.outcome.name}: {result.signature}\n{result.detail}")
    if result.outcome in (GradientOutcome.REFUSAL, GradientOutcome.SKIPPED):
        pytest.skip(f"{result.outcome.name.lower()}: {result.signature}")


def test_random_draws_in_a_branch_the_gradient_would_run_again_are_refused(tmp_path):
    """With NumPy's global random stream seeded 103, random-4's draws take a path where the
    backward pass recomputed a branch holding a draw: it drew again, took the other way, and
    dy2st.grad gave 0 where finite differences give 1. Such a branch is refused now."""
    result = check_gradients(generate(FAMILIES["random"], 4), tmp_path, global_seed=103)
    assert result.outcome is GradientOutcome.REFUSAL, result.detail
    assert "random_draw" in result.signature


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--programs", type=int, default=50, help="programs per family")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma-separated family names")
    options = parser.parse_args(argv)
    tally: collections.Counter = collections.Counter()
    classes: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as directory:
        for family in options.families.split(","):
            for seed in range(options.first_seed, options.first_seed + options.programs):
                result = check_gradients(generate(FAMILIES[family], seed), Path(directory))
                tally[(family, result.outcome.name)] += 1
                if result.outcome is not GradientOutcome.PASSED:
                    classes[(result.outcome.name, result.signature)].append(f"{family}:{seed}")
    for (family, outcome), count in sorted(tally.items()):
        print(f"{family:20s} {outcome:9s} {count}")
    for (outcome, signature), seeds in sorted(classes.items()):
        print(f"\n{outcome} x{len(seeds)}: {signature}\n    {' '.join(seeds[:10])}")
    failed = sum(n for (_, outcome), n in tally.items() if outcome in ("MISMATCH", "CRASH"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
