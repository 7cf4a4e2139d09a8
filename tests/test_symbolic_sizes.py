"""Symbolic sizes (ir/symbolic.py): the polynomial algebra, guarded decisions, and the shape rules
of broadcasting, slicing and indexing checked against NumPy at many concrete sizes."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dy2st.ir.symbolic import (
    MIN_SYMBOLIC_SIZE,
    Guard,
    Symbol,
    SymbolicSizeNeeded,
    SymExpr,
    broadcast_shapes,
    decide,
    evaluate_dim,
    recording_guards,
)
from dy2st.ir.types import TensorType
from dy2st.ops.indexing import TENSOR_SLOT, slice_length, symbolic_indexed_shape


def sym(name: str, hint: int) -> tuple[Symbol, SymExpr]:
    symbol = Symbol(name, hint)
    return symbol, SymExpr.of(symbol)


def test_polynomials_have_one_canonical_form():
    _, n = sym("n0", 7)
    _, m = sym("n1", 4)
    assert (n + 1) - 1 == n
    assert n - n == 0 and isinstance(n - n, int)
    assert (n + m) * 2 == 2 * m + 2 * n
    assert (n * m) * 3 // 3 == m * n
    assert str(n - 2) == "n0 - 2"
    assert str(3 * n * m + n - 1) == "3*n0*n1 + n0 - 1"
    assert hash(n + m) == hash(m + n)


def test_division_that_is_not_exact_needs_the_size():
    symbol, n = sym("n0", 7)
    with pytest.raises(SymbolicSizeNeeded) as caught:
        _ = (n + 1) // 2
    assert caught.value.symbols == {symbol}
    with pytest.raises(SymbolicSizeNeeded):
        int(n)
    with pytest.raises(SymbolicSizeNeeded):
        range(n)


def test_decisions_are_taken_from_hints_and_recorded_as_guards():
    symbol, n = sym("n0", 7)
    with recording_guards() as guards:
        assert n >= 3
        assert not n < 5
        assert n - 2 >= 0  # true for every allowed size: no guard
    assert len(guards) == 2
    assert all(g.holds({symbol: 7}) for g in guards)
    assert not all(g.holds({symbol: 4}) for g in guards)  # n0 < 5 was decided False
    assert all(g.holds({symbol: 9}) for g in guards)


def test_a_decision_outside_a_build_is_refused():
    _, n = sym("n0", 7)
    with pytest.raises(SymbolicSizeNeeded):
        decide(n - 5, operator.gt)


def test_broadcasting_equal_symbolic_sizes_needs_no_guard():
    _, n = sym("n0", 7)
    with recording_guards() as guards:
        assert broadcast_shapes((n, 3), (1, 3), (3,)) == (n, 3)
        assert broadcast_shapes((n - 1,), (n - 1,)) == (n - 1,)
    assert guards == []


def test_broadcasting_different_sizes_raises_numpys_error():
    _, n = sym("n0", 7)
    _, m = sym("n1", 5)
    with recording_guards(), pytest.raises(ValueError, match="cannot be broadcast"):
        broadcast_shapes((n,), (m,))


SLICES = st.builds(
    slice,
    st.one_of(st.none(), st.integers(-12, 12)),
    st.one_of(st.none(), st.integers(-12, 12)),
    st.sampled_from([None, 1, -1]),
)


@settings(max_examples=300, deadline=None)
@given(item=SLICES, hint=st.integers(MIN_SYMBOLIC_SIZE, 12), other=st.integers(MIN_SYMBOLIC_SIZE, 12))
def test_slice_lengths_match_python_wherever_their_guards_hold(item, hint, other):
    symbol, n = sym("n0", hint)
    with recording_guards() as guards:
        length = slice_length(item, n)
    assert evaluate_dim(length, {symbol: hint}) == len(range(*item.indices(hint)))
    if all(g.holds({symbol: other}) for g in guards):
        assert evaluate_dim(length, {symbol: other}) == len(range(*item.indices(other)))


INDEX_ITEMS = st.one_of(
    SLICES,
    st.integers(-2, 1),
    st.none(),
    st.just("tensor0d"),
    st.just("tensor1d"),
)


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(INDEX_ITEMS, min_size=1, max_size=3),
    hints=st.tuples(st.integers(2, 9), st.integers(2, 9)),
    rank=st.integers(2, 3),
)
def test_indexed_shapes_match_numpy(items, hints, rank):
    symbols = [Symbol(f"n{k}", h) for k, h in enumerate(hints)]
    shape = (SymExpr.of(symbols[0]), 4, SymExpr.of(symbols[1]))[:rank]
    concrete = (hints[0], 4, hints[1])[:rank]
    template, tensor_types, arrays = [], [], []
    for item in items:
        if item == "tensor0d":
            template.append(TENSOR_SLOT)
            tensor_types.append(TensorType((), np.dtype(np.intp)))
            arrays.append(np.intp(0))
        elif item == "tensor1d":
            template.append(TENSOR_SLOT)
            tensor_types.append(TensorType((2,), np.dtype(np.intp)))
            arrays.append(np.zeros(2, np.intp))
        else:
            template.append(item)
    slots = iter(arrays)
    index = tuple(next(slots) if item is TENSOR_SLOT else item for item in template)
    try:
        expected = np.empty(concrete)[index].shape
    except IndexError:
        with recording_guards(), pytest.raises(IndexError):
            symbolic_indexed_shape(shape, tuple(template), tensor_types)
        return
    with recording_guards() as guards:
        got = symbolic_indexed_shape(shape, tuple(template), tensor_types)
    sizes = dict(zip(symbols, hints))
    assert tuple(evaluate_dim(d, sizes) for d in got) == expected
    assert all(g.holds(sizes) for g in guards)


def test_a_guard_prints_its_decision():
    symbol, n = sym("n0", 7)
    assert str(Guard(n - 3, operator.ge)) == "n0 - 3 >= 0"
    assert Guard(n - 3, operator.ge).holds({symbol: 3})
