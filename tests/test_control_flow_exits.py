"""break, continue and return lowered to flags: the generated code, and results equal to eager.

Python-valued control flow runs while the graph is built, so those cases check the lowering itself;
the tensor cases need the if/while converters (``dy2st.runtime.control_flow``) and are skipped
until they are there.
"""

from __future__ import annotations

import ast
import itertools

import gast
import numpy as np
import pytest

import dy2st
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import PIPELINE, break_continue, returns

needs_control_flow = pytest.mark.skipif(
    not any(converter.__name__.endswith(".ifelse") for converter in PIPELINE),
    reason="tensor conditions need the if/while converters",
)


def lowered(fn) -> str:
    """``fn`` after the return and break/continue converters, as ``ast.unparse`` prints it."""
    module, _, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    for converter in (returns, break_continue):
        module = converter.transform(module, ctx)
    return ast.unparse(gast.gast_to_ast(module))


def expected_source(text: str) -> str:
    return ast.unparse(ast.parse(text))


def assert_same(actual, expected):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, (np.ndarray, np.generic)):
        actual_array, expected_array = np.asarray(actual), np.asarray(expected)
        assert (actual_array.shape, actual_array.dtype) == (expected_array.shape, expected_array.dtype)
        np.testing.assert_allclose(actual_array, expected_array)
    else:
        assert type(actual) is type(expected) and actual == expected


# --- the lowered code -----------------------------------------------------------------------------
def early_return(x):
    if x > 0:
        return x
    y = x * 2
    return y


def test_an_early_return_takes_the_rest_into_the_else_branch_without_a_flag():
    assert lowered(early_return) == expected_source(
        """
def early_return(x):
    if x > 0:
        retval = _dy2st.returned(x)
    else:
        y = x * 2
        retval = _dy2st.returned(y)
    return retval
"""
    )


def return_in_loop(x):
    while x < 10:
        if x == 5:
            return -x
        x = x + 2
    return x


def test_a_return_in_a_loop_sets_the_flag_and_breaks():
    assert lowered(return_in_loop) == expected_source(
        """
def return_in_loop(x):
    do_return = False
    break_ = False
    while not break_ and x < 10:
        if x == 5:
            do_return = True
            retval = _dy2st.returned(-x)
            break_ = True
        else:
            x = x + 2
    if not do_return:
        do_return = True
        retval = _dy2st.returned(x)
    return retval
"""
    )


def no_return_on_some_paths(x):
    if x:
        return 1
    elif x is None:
        x = 0
    print(x)


def test_a_function_that_can_end_without_return_starts_with_retval_none():
    assert lowered(no_return_on_some_paths) == expected_source(
        """
def no_return_on_some_paths(x):
    retval = None
    if x:
        retval = _dy2st.returned(1)
    else:
        if x is None:
            x = 0
        print(x)
    return retval
"""
    )


def single_final_return(x):
    y = x + 1
    return y


def test_a_function_with_only_a_final_return_is_unchanged():
    assert lowered(single_final_return) == expected_source(
        """
def single_final_return(x):
    y = x + 1
    return y
"""
    )


def continue_and_break(xs):
    s = 0
    for v in xs:
        if v == 0:
            continue
        s += v
        if s > 10:
            break
        s *= 2
    else:
        s = -s
    return s


def test_continue_guards_the_rest_and_break_stops_the_for():
    assert lowered(continue_and_break) == expected_source(
        """
def continue_and_break(xs):
    s = 0
    break_ = False
    for v in _dy2st.iterate_until(xs, lambda: break_):
        if not break_:
            if v == 0:
                pass
            else:
                s += v
                if s > 10:
                    break_ = True
                else:
                    s *= 2
    if not break_:
        s = -s
    return s
"""
    )


def continue_needing_a_flag(xs):
    s = 0
    for v in xs:
        if v > 0:
            s += v
            if v > 5:
                continue
            s += 1
        s *= 2
    return s


def test_continue_inside_a_nested_if_guards_with_its_flag():
    assert lowered(continue_needing_a_flag) == expected_source(
        """
def continue_needing_a_flag(xs):
    s = 0
    for v in xs:
        continue_ = False
        if v > 0:
            s += v
            if v > 5:
                continue_ = True
            else:
                s += 1
        if not continue_:
            s *= 2
    return s
"""
    )


def test_lowering_is_idempotent():
    once = lowered(continue_and_break)
    namespace: dict = {}
    exec(compile(once, "<lowered>", "exec"), namespace)
    module = gast.parse(once)
    ctx = Context(parse_function(continue_and_break)[2], Namer.for_tree(module))
    for converter in (returns, break_continue):
        module = converter.transform(module, ctx)
    assert ast.unparse(gast.gast_to_ast(module)) == once


# --- Python-valued control flow: equal to eager ---------------------------------------------------
def nested_loops_with_exits(rows, limit):
    total = 0
    for row in rows:
        for v in row:
            if v < 0:
                break
            if v % 2:
                continue
            total += v
            if total > limit:
                return total, "limit"
        else:
            total += 100
            continue
        total -= 1
    return total, "done"


@pytest.mark.parametrize(
    "rows, limit",
    [([[2, 4], [1, 6]], 50), ([[2, -1, 4], [8]], 50), ([[2, 4], [6, 8]], 5), ([], 1), ([[3, 5], [-2]], 0)],
)
def test_nested_python_loops_with_break_continue_return(rows, limit):
    assert dy2st.to_static(nested_loops_with_exits)(rows, limit) == nested_loops_with_exits(rows, limit)


def first_square_above(n):
    for i in itertools.count():
        if i * i > n:
            break
    return i


def test_a_for_over_an_infinite_iterator_stops_at_break():
    assert [dy2st.to_static(first_square_above)(n) for n in (0, 10, 99)] == [1, 4, 10]


def while_true_with_returns(n):
    steps = 0
    while True:
        if n == 1:
            return steps
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1


def test_while_true_left_by_return():
    assert [dy2st.to_static(while_true_with_returns)(n) for n in (1, 6, 27)] == [0, 8, 111]


def returns_none_implicitly(x, flag):
    if flag:
        return x * 2
    x = x + 1


def test_a_function_that_falls_off_the_end_returns_none():
    static = dy2st.to_static(returns_none_implicitly)
    assert static(np.ones(2), False) is None
    assert_same(static(np.ones(2), True), np.ones(2) * 2)


def nested_helper_returns(x, n):
    def clip(v):
        if v > 3:
            return 3
        return v

    out = x
    for i in range(n):
        if clip(i) == 3:
            return out
        out = out + clip(i)
    return out * 10


@pytest.mark.parametrize("n", [0, 2, 6])
def test_nested_functions_keep_their_own_returns(n):
    x = np.arange(3.0)
    assert_same(dy2st.to_static(nested_helper_returns)(x, n), nested_helper_returns(x, n))


def loop_variable_after_break(x, stop):
    for i in range(5):
        if i == stop:
            break
        x = x + i
    return x, i


@pytest.mark.parametrize("stop", [0, 2, 7])
def test_the_loop_variable_keeps_the_value_at_break(stop):
    x = np.zeros(2)
    assert_same(dy2st.to_static(loop_variable_after_break)(x, stop), loop_variable_after_break(x, stop))


# --- tensor conditions (need the if/while converters) ---------------------------------------------
def tensor_early_return(x):
    if np.sum(x) > 0:
        return x * 2
    y = x - 1
    return y


def tensor_search(x, target):
    i = 0
    found = np.float64(-1.0)
    while i < 4:
        if x[i] == target:
            found = x[i] * 10
            break
        i += 1
    return found


def tensor_continue(x):
    s = np.zeros(())
    for i in range(4):
        if x[i] < 0:
            continue
        s = s + x[i]
    return s


def tensor_return_in_branches(x):
    if np.max(x) > 2:
        if np.min(x) < 0:
            return x + 100
        return x - 100
    return x


@needs_control_flow
@pytest.mark.parametrize(
    "fn, args",
    [
        (tensor_early_return, (np.array([1.0, 2.0]),)),
        (tensor_early_return, (np.array([-1.0, -2.0]),)),
        (tensor_search, (np.array([1.0, 2.0, 3.0, 4.0]), np.array(3.0))),
        (tensor_search, (np.array([1.0, 2.0, 3.0, 4.0]), np.array(7.0))),
        (tensor_continue, (np.array([1.0, -2.0, 3.0, -4.0]),)),
        (tensor_return_in_branches, (np.array([3.0, -1.0]),)),
        (tensor_return_in_branches, (np.array([3.0, 1.0]),)),
        (tensor_return_in_branches, (np.array([0.0, 1.0]),)),
    ],
)
def test_exits_under_tensor_conditions_match_eager(fn, args):
    assert_same(dy2st.to_static(fn)(*args), fn(*args))


@needs_control_flow
def test_a_tensor_early_return_becomes_one_cond():
    graph = dy2st.to_static(tensor_early_return).graph(np.ones(2), optimize=False)
    assert [op.name for op in graph.walk()].count("cond") == 1


def target_used_after(xs):
    for v in xs:
        if v > 2:
            break
    return v


def test_a_for_target_used_after_the_loop_is_held_at_the_break():
    assert "for v in _dy2st.iterate_until(xs, lambda: break_, hold_at_break=True):" in lowered(target_used_after)


def rows_until_negative(m):
    total = np.zeros(2)
    for row in m:
        if row[0] < 0:
            break
        total = total + row
    return total, row


@needs_control_flow
@pytest.mark.parametrize("m", [np.array([[1.0, 2], [3, 4], [-1, 0], [5, 5]]), np.array([[1.0, 2], [3, 4]])])
def test_a_tensor_loop_target_first_bound_in_the_loop_keeps_the_row_at_break(m):
    assert_same(dy2st.to_static(rows_until_negative)(m), rows_until_negative(m))


def python_loop_tensor_break(x):
    for i in range(4):
        if x[i] > 2:
            break
    return x * i


@needs_control_flow
@pytest.mark.parametrize("x", [np.array([1.0, 3.0, 5.0, 0.0]), np.array([1.0, 1.0, 1.0, 1.0])])
def test_an_unrolled_loop_left_by_a_tensor_break_keeps_the_index_at_break(x):
    assert_same(dy2st.to_static(python_loop_tensor_break)(x), python_loop_tensor_break(x))


def returns_two_shapes(x):
    if np.sum(x) > 0:
        return x
    return x[:2]


def returns_none_on_one_path(x):
    if np.sum(x) > 0:
        return x


@needs_control_flow
@pytest.mark.parametrize(
    "fn, found, shown",
    [
        # the line that computed the differing value, when an op did; else the tensor 'if'
        (returns_two_shapes, "f64[2]", "return x[:2]"),
        (returns_none_on_one_path, "None", "if np.sum(x) > 0:"),
    ],
)
def test_return_values_that_differ_under_a_tensor_if_name_the_return_value(fn, found, shown):
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(fn)(np.ones(3))
    message = str(info.value)
    assert "test_control_flow_exits.py:" in message
    assert f"error: the return value is f64[3] in the true branch but {found} in the false branch" in message
    assert shown in message
