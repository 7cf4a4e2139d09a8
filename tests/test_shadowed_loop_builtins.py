"""A module's own ``range``/``enumerate``/``zip`` is what its loops call, converted as eagerly
(the loop converter routed the names to the builtins, a silent difference)."""

from __future__ import annotations

import numpy as np
import pytest

from eager_parity import assert_like_eager


def range(k):  # noqa: A001  (shadowing the builtin is what this test is about)
    return [5, 6]


def enumerate(items):  # noqa: A001
    return [(10, 1.0)]


def sum_of_range(n):
    s = 0
    for i in range(n):
        s = s + i
    return s


def enumerated(x):
    s = 0.0
    for i, v in enumerate(x):
        s = s + i * v
    return s


@pytest.mark.parametrize(
    ("fn", "args"), [(sum_of_range, (2,)), (sum_of_range, (np.array(2),)), (enumerated, (np.ones(3),))]
)
def test_a_module_that_defines_range_or_enumerate_iterates_its_own(fn, args):
    assert_like_eager(fn, *args)
