"""A tensor ``if`` whose branches give broadcast-compatible values of different shapes converts
wherever only broadcasting sees the value (runtime/control_flow/path_shaped.py), and raises the
branches' mismatch where its shape would be seen."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def subtract_array_or_number(a, x, c):
    return a - (x if c > 0 else 0.1)


def scale_by_array_or_one(x, s, c):
    scale = s if c > 0 else 1.0
    y = x * scale
    return y


def row_or_matrix_offset(X, row, c):
    if c > 0:
        offset = row
    else:
        offset = X * 0.5
    return X + offset


def chained_elementwise_ops(x, c):
    bias = x if c > 0 else 2.0
    shifted = np.exp(-bias) + 1.0  # still depends on the path; the next op broadcasts it
    return x * shifted


def assigned_into_an_array(out, x, c):
    out[:] = x if c > 0 else 0.0
    out += x if c < 0 else 1.0
    return out


def float32_array_or_exact_number(x, c):
    return x * (x if c > 0 else 0.5)


CASES = [(subtract_array_or_number, (np.arange(4.0), np.ones(4), np.array(c))) for c in (0, 1)] + [
    (scale_by_array_or_one, (np.arange(3.0), np.array([2.0, 3.0, 4.0]), np.array(1))),
    (scale_by_array_or_one, (np.arange(3.0), np.array([2.0, 3.0, 4.0]), np.array(0))),
    (row_or_matrix_offset, (np.arange(6.0).reshape(2, 3), np.ones(3), np.array(1))),
    (row_or_matrix_offset, (np.arange(6.0).reshape(2, 3), np.ones(3), np.array(0))),
    (chained_elementwise_ops, (np.arange(3.0), np.array(0))),
    (chained_elementwise_ops, (np.arange(3.0), np.array(1))),
    (assigned_into_an_array, (np.zeros(3), np.arange(3.0), np.array(1))),
    (assigned_into_an_array, (np.zeros(3), np.arange(3.0), np.array(-1))),
    (float32_array_or_exact_number, (np.arange(3, dtype=np.float32), np.array(0))),
    (float32_array_or_exact_number, (np.arange(3, dtype=np.float32), np.array(1))),
]


@pytest.mark.parametrize(("fn", "args"), CASES, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(CASES)])
def test_values_only_broadcast_afterwards_convert(fn, args):
    assert_like_eager(fn, *args)


def returned(x, c):
    return x if c > 0 else 0.1


def shape_read(x, c):
    y = x if c > 0 else 0.1
    return np.zeros(y.shape)


def reduced(x, c):
    y = x if c > 0 else 0.1
    return y.sum()


def float32_times_array_or_number(x32, x64, c):
    # float32 * float64 array is float64 on one path, float32 * 0.5 float32 on the other.
    return x32 * (x64 if c > 0 else 0.5)


def inexact_number(x32, c):
    # 0.1 is not a float32: the branch's value could not be held exactly.
    return x32 * (x32 if c > 0 else 0.1)


@pytest.mark.parametrize(
    ("fn", "args", "what"),
    [
        (returned, (np.ones(3), np.array(1)), "used where its shape matters"),
        (shape_read, (np.ones(3), np.array(1)), "asked for its shape"),
        (reduced, (np.ones(3), np.array(1)), "but here it is"),
        (float32_times_array_or_number, (np.ones(3, np.float32), np.ones(3), np.array(1)), "another dtype"),
    ],
)
def test_uses_that_see_the_shape_raise_the_branches_mismatch(fn, args, what):
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(fn)(*args)
    text = str(info.value)
    assert "in the true branch but the Python float" in text
    assert what in text


def test_a_number_the_array_dtype_cannot_hold_exactly_keeps_the_plain_mismatch():
    with pytest.raises(dy2st.GraphBuildError, match="in the true branch but the Python float 0.1"):
        dy2st.to_static(inexact_number)(np.ones(3, np.float32), np.array(1))


def shape_assigned(x, c):
    y = x if c > 0 else 0.5
    y.shape = (3,)
    return x


def test_assigning_the_shape_of_a_branch_shaped_value_raises_the_mismatch():
    with pytest.raises(dy2st.GraphBuildError, match="given a new shape"):
        dy2st.to_static(shape_assigned)(np.arange(3.0), np.array(1))
