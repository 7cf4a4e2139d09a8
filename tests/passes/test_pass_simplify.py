"""Algebraic simplification: golden IR, type-preserving rewrites only, small powers within 2 ulp."""

import numpy as np
import pytest
from pass_harness import (
    F32,
    assert_ir,
    assert_same_results,
    assert_unchanged_by,
    const,
    emit,
    execute,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

import dy2st
from dy2st.passes.simplify import AlgebraicSimplification


def identities(x):
    a = x * 1 + -0.0  # -0.0 is the identity of float addition; 0 is not (-0.0 + 0 is +0.0)
    b = 1 * (-0.0 + a) - 0
    c = -(-(b / 1))
    return c.astype(np.float32)


def test_removes_arithmetic_identities():
    graph = staged_graph(identities, np.ones(3, np.float32))
    assert_ir(
        graph,
        """
        func @identities(%x: f32[3]) -> f32[3] {
          %0 = multiply %x, 1 : f32[3]
          %a = add %0, -0.0 : f32[3]
          %1 = add -0.0, %a : f32[3]
          %2 = multiply 1, %1 : f32[3]
          %b = subtract %2, 0 : f32[3]
          %3 = divide %b, 1 : f32[3]
          %4 = negative %3 : f32[3]
          %c = negative %4 : f32[3]
          %5 = astype %c {dtype=float32} : f32[3]
          return %5
        }
    """,
    )
    assert run_pass(AlgebraicSimplification, graph) is True
    # The inner negation is left for DCE.
    assert_ir(
        graph,
        """
        func @identities(%x: f32[3]) -> f32[3] {
          %0 = negative %x : f32[3]
          return %x
        }
    """,
    )


def test_returned_input_is_a_copy_the_caller_owns():
    converted = dy2st.to_static(identities)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    result = converted(x)
    assert [op.name for op in converted.graph(x).walk()] == ["return"]
    assert result is not x and not np.shares_memory(result, x)
    result[:] = 0
    assert_same_results([x], [np.array([1.0, 2.0, 3.0], np.float32)])
    assert_same_results([converted(x)], [identities(x)])


def shapes(m):
    t = m.T.T
    u = m.transpose(1, 0, 2).transpose(2, 0, 1)
    r = m.reshape(6, 4).reshape(4, 6)
    s = m.reshape(24).reshape(2, 3, 4)
    return t, u, r, s


def test_composes_transposes_and_reshapes():
    graph = staged_graph(shapes, np.ones((2, 3, 4), np.float32))
    assert run_pass(AlgebraicSimplification, graph) is True
    assert_ir(
        graph,
        """
        func @shapes(%m: f32[2,3,4]) -> (f32[2,3,4], f32[4,3,2], f32[4,6], f32[2,3,4]) {
          %0 = transpose %m {axes=(2, 1, 0)} : f32[4,3,2]
          %1 = transpose %m {axes=(1, 0, 2)} : f32[3,2,4]
          %2 = transpose %m {axes=(2, 1, 0)} : f32[4,3,2]
          %3 = reshape %m {shape=(6, 4)} : f32[6,4]
          %4 = reshape %m {shape=(4, 6)} : f32[4,6]
          %5 = reshape %m {shape=(24,)} : f32[24]
          return %m, %2, %4, %m
        }
    """,
    )
    m = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_same_results(execute(graph, m), shapes(m))


def powers(x):
    # np.power: ``x ** 2`` and ``x ** 0.5`` already stage as np.square and np.sqrt, as NumPy runs them
    return np.power(x, 2), x**3, x**4, x**5, np.power(x, 0.5)


def test_small_integer_powers_of_floats_become_products():
    graph = staged_graph(powers, np.ones(3, np.float32))
    assert run_pass(AlgebraicSimplification, graph) is True
    assert_ir(
        graph,
        """
        func @powers(%x: f32[3]) -> (f32[3], f32[3], f32[3], f32[3], f32[3]) {
          %0 = multiply %x, %x : f32[3]
          %1 = multiply %x, %x : f32[3]
          %2 = multiply %1, %x : f32[3]
          %3 = multiply %x, %x : f32[3]
          %4 = multiply %3, %3 : f32[3]
          %5 = power %x, 5 : f32[3]
          %6 = power %x, 0.5 : f32[3]
          return %0, %2, %4, %5, %6
        }
    """,
    )


def type_changing(x, i):
    return i * 1.0, i / 1, x * np.ones((2, 3), np.float32), i**2, x + np.zeros(3, np.float32)


def test_rewrites_that_would_change_the_type_are_not_made():
    graph = staged_graph(type_changing, np.ones(3, np.float32), np.ones(3, np.int32))
    assert_unchanged_by(AlgebraicSimplification, graph)


def add_zero(x, i):
    return x + 0, x + 0.0, 0.0 + x, x - (-0.0), i + 0


def test_adding_zero_to_floats_is_kept_because_it_turns_negative_zero_positive():
    graph = staged_graph(add_zero, np.ones(3), np.ones(3, np.int64))
    run_pass(AlgebraicSimplification, graph)
    kept = [op.name for op in graph.walk() if op.name in ("add", "subtract")]
    assert kept == ["add", "add", "add", "subtract"]  # i + 0 of integers is folded
    converted = dy2st.to_static(add_zero)
    x = np.array([-0.0, 1.0, -2.0])
    for got, want in zip(converted(x, np.arange(3)), add_zero(x, np.arange(3))):
        assert np.array_equal(np.signbit(got), np.signbit(want)) and np.array_equal(got, want)


def test_identity_with_a_broadcasting_constant_is_not_made():
    builder, (x,) = new_builder("broadcast", x=tensor_type(F32, 3))
    with builder:
        ones = const(builder, np.ones((2, 3), np.float32))
        graph = builder.finish(
            [emit(builder, "multiply", x, ones), emit(builder, "add", x, const(builder, np.full(3, -0.0, np.float32)))]
        )
    assert run_pass(AlgebraicSimplification, graph) is True
    assert graph.outputs[0].op.name == "multiply" and graph.outputs[1] is graph.inputs[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [2, 3, 4])
def test_powers_as_products_stay_within_two_ulp(dtype, exponent):
    rng = np.random.default_rng(exponent)
    x = (rng.standard_normal(20000) * 30).astype(dtype)

    def power(v):
        return v**exponent

    converted = dy2st.to_static(power)
    assert "power" not in [op.name for op in converted.graph(x).walk()]
    expected = x**exponent
    actual = converted(x)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    ulps = np.abs(actual.astype(np.float64) - expected) / np.spacing(np.abs(expected)).astype(np.float64)
    assert ulps.max() <= 2


def test_graph_without_identities_is_left_unchanged():
    graph = staged_graph(powers, np.ones(3, np.float32))
    run_pass(AlgebraicSimplification, graph)
    assert_unchanged_by(AlgebraicSimplification, graph)


def augmented_slice_updates(A, v, m):
    A[1:, 1:] -= v  # Python: A[1:, 1:] = A[1:, 1:].__isub__(v), two writes of the same values
    A[m] *= 2.0  # a mask read copies: one write
    A[0, :2] = v[0, :2]
    A[0, :2] = v[1, :2]  # another value: both writes stay
    return A


def test_an_update_repeated_with_the_same_value_at_the_same_place_is_made_once():
    A = np.arange(25.0).reshape(5, 5)
    v = np.ones((4, 4))
    m = A > 12
    graph = staged_graph(augmented_slice_updates, A, v, m)
    assert sum(op.name == "setitem" for op in graph.walk()) == 5
    assert run_pass(AlgebraicSimplification, graph) is True
    assert sum(op.name == "setitem" for op in graph.walk()) == 4
    converted = dy2st.to_static(augmented_slice_updates)
    expected = augmented_slice_updates(A.copy(), v, m)
    assert_same_results([converted(A.copy(), v, m)], [expected])
