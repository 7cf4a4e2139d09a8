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


def _python_int_ops(graph, symbol):
    """The ops of ``graph`` running Python's operator ``symbol`` on Python ints."""
    return [
        op
        for op in graph.walk()
        if op.attrs.get("python_operator") == symbol
        and all(v.type.weak and v.type.dtype.kind == "i" for v in op.operands)
    ]


def back_substitute(U, b):
    n = b.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for j in range(i + 1, n):
            s -= U[i, j] * b[j]
        b[i] = s / U[i, i]
    return b


def shifted_hash(x, k):
    h = 1
    for i in range(k):
        h = (h << 3) + i
        x[0] = x[0] + 1.0
    return x, h


def test_a_reversed_range_counts_down_by_a_bounded_product():
    """``range(n - 1, -1, -1)`` counts as ``n - 1 + i * -1``: the product of a counter and a
    literal is bounded, so a loop updating its argument in place compiles (it stayed on the
    NumPy tier, as if the product could outgrow 64 bits)."""
    numba = pytest.importorskip("numba")
    assert numba
    rng = np.random.default_rng(4)
    U = np.triu(rng.random((7, 7))) + 7 * np.eye(7)
    b = rng.random(7)
    static = dy2st.to_static(back_substitute, backend="compiled")
    expected = back_substitute(U, b.copy())
    argument = b.copy()
    result = static(U, argument)
    assert result is argument
    np.testing.assert_array_equal(argument, expected)
    (compiled,) = [c for entries in static._cache.values() for c in entries]
    executor = compiled.executor
    assert executor.tier == "compiled"
    assert [op.parent for op in executor.loops] == [executor.graph.body]  # the outer loop, whole
    graph = static.graph(U, b)
    products = _python_int_ops(graph, "*")
    assert products and all(int_bits(op.results[0]) is not None for op in products)


@pytest.mark.parametrize("k", [0, 5, 30])
def test_a_shift_by_a_literal_in_a_loop_of_data_dependent_length_is_unbounded(k):
    """``h << 3`` repeated grows past 64 bits after 21 iterations: unbounded, so a loop that also
    updates an argument (it could not run again on the NumPy tier) stays there, with eager's int."""
    static = dy2st.to_static(shifted_hash, backend="compiled")
    x = np.zeros(2)
    result, h = static(x, np.array(k))
    assert h == shifted_hash(np.zeros(2), k)[1] and type(h) is int
    assert result is x and x[0] == k
    graph = static.graph(np.zeros(2), np.array(k))
    shifts = _python_int_ops(graph, "<<")
    assert shifts and all(int_bits(op.results[0]) is None for op in shifts)
