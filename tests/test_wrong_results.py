"""Regressions for programs that once gave a silently wrong answer (issue 10's first list).

Each case runs eagerly and converted and must leave the same results and arguments."""

import numpy as np
import pytest

from eager_parity import assert_like_eager

# Rows whose float16 running sum overflows: NumPy's mean accumulates float16 in float32.
HALF_ROWS = np.full((2, 5000), 30000, np.float16)


def mean_of_product(x):
    return (x * 2).mean(axis=1)


def mean_plus_one(x):
    return x.mean(axis=1) + 1


def centred(x):
    return x - (x * 2).mean(axis=1, keepdims=True)


@pytest.mark.parametrize("fn", [mean_of_product, mean_plus_one, centred])
def test_float16_means_accumulate_in_float32_in_planned_and_fused_buffers(fn):
    result = assert_like_eager(fn, HALF_ROWS)
    assert np.isfinite(result).all()
