"""and/or/not, chained comparisons, ternaries, assert and print in converted functions.

Every converted result is compared with the eager function: same value, shape and dtype.
"""

from __future__ import annotations

import ast

import gast
import numpy as np
import pytest

import dy2st
from dy2st.frontend.codegen import to_source
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import PIPELINE, asserts, logical

needs_cond = pytest.mark.skipif(
    not any(converter.__name__.endswith(".ifelse") for converter in PIPELINE),
    reason="tensor ternaries stage through the control-flow runtime's cond",
)


def converted_source(fn, *converters) -> str:
    module, _, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    for converter in converters:
        module = converter.transform(module, ctx)
    # Compiling the generated source checks it; ast.unparse gives one line per statement,
    # so the assertions do not depend on astor's line wrapping.
    compile(to_source(module), "<converted>", "exec")
    return " ".join(ast.unparse(gast.gast_to_ast(module)).split())


def assert_same(actual, expected):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
        return
    if isinstance(expected, (np.ndarray, np.generic)):
        actual_array, expected_array = np.asarray(actual), np.asarray(expected)
        assert actual_array.shape == expected_array.shape
        assert actual_array.dtype == expected_array.dtype
        np.testing.assert_allclose(actual_array, expected_array)
    else:
        assert type(actual) is type(expected) and actual == expected


# --- the generated code ---------------------------------------------------------------------------
def _logic(a, b, c):
    return a and b or not c


def _chain(a, b, c):
    return a < b <= c


def _ternary(a, b):
    return a if a > b else b


def test_boolop_becomes_nested_lazy_runtime_calls():
    assert converted_source(_logic, logical) == (
        "def _logic(a, b, c): return _dy2st.convert_logical_or(lambda: _dy2st.convert_logical_and("
        "lambda: a, lambda: b), lambda: _dy2st.convert_logical_not(c))"
    )


def test_chained_comparison_evaluates_each_operand_in_one_lambda():
    source = converted_source(_chain, logical)
    assert "_dy2st.convert_compare_chain(lambda: a, ('Lt', lambda: b), ('LtE', lambda: c))" in source


def test_single_comparison_is_left_to_the_tensor_operators():
    def single(a, b):
        return a < b

    assert "return a < b" in converted_source(single, logical)


def test_ternary_becomes_convert_ifexp():
    assert "_dy2st.convert_ifexp(a > b, lambda: a, lambda: b)" in converted_source(_ternary, logical)


def test_assert_message_is_lazy():
    def checked(x):
        assert x > 0, f"bad {x}"
        return x

    assert "_dy2st.convert_assert(x > 0, lambda: f'bad {x}')" in converted_source(checked, asserts)


def test_named_expressions_are_left_unconverted():
    def walrus(a, b):
        return (n := a) and n < b

    assert "convert_logical_and" not in converted_source(walrus, logical)


# --- Python values keep Python semantics ----------------------------------------------------------
def _needs_truthy(value):
    if not value:
        raise ValueError("evaluated although the left operand decided the result")
    return value


def _short_circuit(a, b):
    return a and b, a or b, a and _needs_truthy(a), (not a) or _needs_truthy(a)


@pytest.mark.parametrize("a, b", [(0, 5), (3, 5), (3, 0), ("", "x"), (1.5, None)])
def test_python_and_or_return_operands_and_short_circuit(a, b):
    assert dy2st.to_static(_short_circuit)(a, b) == _short_circuit(a, b)


def _python_chain(a, b, c):
    return a < b < c, a == b != c, not a, a if b else c


@pytest.mark.parametrize("args", [(1, 2, 3), (1, 0, 3), (2, 2, 1), (0, 1, 1)])
def test_python_chains_nots_and_ternaries(args):
    assert dy2st.to_static(_python_chain)(*args) == _python_chain(*args)


def test_chain_stops_before_the_operands_it_does_not_need():
    calls = []

    def operand(value):
        calls.append(value)
        return value

    def chain():
        return operand(3) < operand(1) < operand(2)

    assert dy2st.to_static(chain)() is False
    assert calls == [3, 1]


# --- tensors become logical ops -------------------------------------------------------------------
def _tensor_logic(x, y):
    both = np.sum(x) > 0 and np.sum(y) > 0
    either = np.max(x) > 2 or np.min(y) < 0
    neither = not (np.sum(x) > 0)
    in_range = 0 < np.sum(x) < 10
    numeric_truth = not np.sum(y)
    return both, either, neither, in_range, numeric_truth


@pytest.mark.parametrize(
    "x, y",
    [
        (np.array([1.0, 2.0]), np.array([3.0, -1.0])),
        (np.array([-1.0, 0.5]), np.array([0.0, 0.0])),
        (np.array([4.0, 8.0]), np.array([1.0, 1.0])),
    ],
)
def test_tensor_and_or_not_chains_give_bool_truth_values(x, y):
    expected = tuple(np.bool_(bool(v)) for v in _tensor_logic(x, y))
    assert_same(dy2st.to_static(_tensor_logic)(x, y), expected)


def test_tensor_and_or_stage_a_cond_and_not_stages_logical_not():
    """`and`/`or` evaluate their right operand only where Python would: in a branch."""
    graph = dy2st.to_static(_tensor_logic).graph(np.ones(2), np.ones(2), optimize=False)
    names = [op.name for op in graph.walk()]
    assert names.count("cond") >= 2 and "logical_not" in names and "not_equal" in names


def _operands(x):
    return x.sum() and x.max() * 5, x.min() or x.max() - 1


@pytest.mark.parametrize("x", [np.arange(1.0, 4.0), np.zeros(3), np.array([-1.0, 0.0, 1.0])])
def test_and_or_return_the_deciding_operand(x):
    assert_same(dy2st.to_static(_operands)(x), _operands(x))


def _guarded_index(x, i, n):
    if i < n and x[i] > 0:
        return 1.0
    return 0.0


def _guarded_index_value(x, i, n):
    ok = i < n and x[i] > 0
    return ok


@pytest.mark.parametrize("fn", [_guarded_index, _guarded_index_value])
def test_the_right_operand_is_not_evaluated_where_the_left_decides(fn):
    static = dy2st.to_static(fn)
    for i in range(6):
        assert_same(static(np.ones(3), np.int64(i), np.int64(3)), fn(np.ones(3), np.int64(i), np.int64(3)))


def _python_left_tensor_right(x, flag):
    return flag and np.sum(x) > 0


def test_python_left_operand_decides_without_staging_the_right():
    static = dy2st.to_static(_python_left_tensor_right)
    assert static(np.ones(2), False) is False
    assert_same(static(np.ones(2), True), np.True_)


def _ambiguous(x):
    return x and True


def test_truth_value_of_a_multi_element_tensor_is_an_error_at_its_line():
    with pytest.raises(dy2st.TensorValueError) as info:
        dy2st.to_static(_ambiguous)(np.ones(3))
    message = str(info.value)
    assert "test_logical.py:" in message
    assert "the truth value of a tensor f64[3] with 3 elements is ambiguous" in message
    assert "return x and True" in message


@needs_cond
def test_tensor_ternary_becomes_cond():
    static = dy2st.to_static(_ternary)
    for a, b in [(np.array(2.0), np.array(1.0)), (np.array(-2.0), np.array(1.0))]:
        assert_same(static(a, b), _ternary(a, b))
    graph = static.graph(np.array(2.0), np.array(1.0), optimize=False)
    assert "cond" in [op.name for op in graph.walk()]


# --- assert and print -----------------------------------------------------------------------------
def _checked_mean(x):
    assert np.all(x > 0), "x must be positive"
    return np.mean(x)


def test_tensor_assert_passes_and_fails_at_run_time_with_the_users_line():
    static = dy2st.to_static(_checked_mean)
    assert_same(static(np.array([1.0, 3.0])), _checked_mean(np.array([1.0, 3.0])))
    with pytest.raises(dy2st.GraphAssertionError) as info:
        static(np.array([1.0, -3.0]))
    message = str(info.value)
    assert "test_logical.py:" in message
    assert "error: assertion failed: x must be positive" in message
    assert 'assert np.all(x > 0), "x must be positive"' in message
    assert static.num_graphs == 1  # the failing call ran the same graph


def test_tensor_assert_survives_optimization():
    graph = dy2st.to_static(_checked_mean).graph(np.ones(2))
    assert "assert" in [op.name for op in graph.walk()]


def _python_assert(x, n):
    assert n > 0, f"n is {n}"
    return x * n


def test_python_assert_raises_at_build_time_like_python():
    static = dy2st.to_static(_python_assert, static_argnames="n")  # n: a constant of the graph
    assert_same(static(np.ones(2), 2), _python_assert(np.ones(2), 2))
    with pytest.raises(AssertionError, match="^n is 0$"):
        static(np.ones(2), 0)


def test_an_assert_on_a_number_input_runs_with_the_graph():
    static = dy2st.to_static(_python_assert)  # n: a graph input
    assert_same(static(np.ones(2), 2), _python_assert(np.ones(2), 2))
    with pytest.raises(AssertionError, match="assertion failed: n is 0"):
        static(np.ones(2), 0)
    assert static.num_graphs == 2  # n=2 as a constant, then n an input


def _printing(x):
    print("x sum:", np.sum(x))
    return x + 1


def test_print_of_a_tensor_prints_the_runtime_value_at_every_call(capsys):
    static = dy2st.to_static(_printing)
    static(np.array([1.0, 2.0]))
    static(np.array([5.0, 2.0]))
    assert capsys.readouterr().out == "x sum: 3.0\nx sum: 7.0\n"


def _printing_python_values(x, flag):
    print("start", 3)
    if flag > 0:
        print("positive")
    else:
        print("not positive")
    return x * 2


def test_print_of_python_values_prints_at_every_call_and_only_in_the_taken_branch(capsys):
    static = dy2st.to_static(_printing_python_values)
    for flag in (1, -1, 1):
        static(np.ones(2), np.array(flag))
    assert capsys.readouterr().out == "start 3\npositive\nstart 3\nnot positive\nstart 3\npositive\n"
    assert static.num_graphs == 1


def test_class_bodies_keep_python_logic():
    def with_class(a):
        class Limits:
            low = 0
            high = low or 10

        return Limits.high if a else Limits.low

    assert dy2st.to_static(with_class)(True) == 10
    assert "low or 10" in converted_source(with_class, logical)


def _assert_elementwise(x):
    assert x > 0
    return x


def test_a_tensor_assert_needs_one_element_as_in_numpy():
    with pytest.raises(ValueError):
        _assert_elementwise(np.ones(2))
    ambiguous = r"the truth value of a tensor bool\[2\] with 2 elements is ambiguous"
    with pytest.raises(dy2st.TensorValueError, match=ambiguous):
        dy2st.to_static(_assert_elementwise)(np.ones(2))
