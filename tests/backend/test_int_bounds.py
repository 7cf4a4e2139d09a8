"""Bounds on the bits of Python ints computed from sizes and loop counters (backend/numba/int_bounds)."""

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.int_bounds import SIZE_BITS, int_bits
from dy2st.ir.opcodes import WHILE_LOOP


def counts(x):
    n = len(x)
    for i in range(n):
        for j in range(i, n):
            x[j] = x[j] + 1.0
    return x


def grows(x, k):
    h = 3
    for i in range(k):
        h = h + h
    return h


def _sums(graph):
    return [
        op
        for op in graph.walk()
        if op.attrs.get("python_operator") in ("+", "-")
        and len(op.operands) == 2
        and op.results[0].type.dtype.kind == "i"
    ]


def test_differences_of_sizes_and_counters_are_bounded():
    graph = dy2st.to_static(counts, backend="numpy").graph(np.zeros(9))
    sums = _sums(graph)
    assert sums
    for op in sums:
        bits = int_bits(op.results[0])
        assert bits is not None and bits <= SIZE_BITS + 2


def test_a_doubling_is_not_bounded():
    graph = dy2st.to_static(grows, backend="numpy").graph(np.zeros(3), np.array(70))
    loops = [op for op in graph.walk() if op.name == WHILE_LOOP]
    assert loops
    doubled = [op for op in _sums(graph) if op.operands[0] is op.operands[1]]
    assert doubled and all(int_bits(op.results[0]) is None for op in doubled)


@pytest.mark.parametrize("k", [0, 5, 70])
def test_the_doubling_still_gives_pythons_unbounded_int(k):
    assert dy2st.to_static(grows, backend="numpy")(np.zeros(3), np.array(k)) == grows(np.zeros(3), k)
