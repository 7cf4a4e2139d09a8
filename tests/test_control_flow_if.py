"""``if``/``elif``/``else`` and ``dy2st.cond``: same results as eager NumPy, one graph per signature.

Each equivalence case runs the converted function with inputs that take different branches through
the same cached graph (``num_graphs == 1``), so the graph really holds both branches. Error cases
check the exact wording, the user's file and line, and the variable named.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import dy2st
from dy2st import GraphBuildError, UnsupportedSyntaxError
from eager_parity import assert_like_eager

THIS_FILE = os.path.basename(__file__)


def assert_same(got, want) -> None:
    """Same structure, same array types, shapes and dtypes, and equal values."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        got_array = np.asarray(got)
        assert got_array.shape == np.shape(want), (got_array.shape, np.shape(want))
        assert got_array.dtype == np.asarray(want).dtype, (got_array.dtype, np.asarray(want).dtype)
        np.testing.assert_allclose(got_array, want, rtol=1e-6, atol=1e-12)
        return
    assert np.asarray(got).item() == want, (got, want)


def check_same_graph(fn, *calls):
    """Run the converted ``fn`` on each argument tuple; all must share one graph."""
    static = dy2st.to_static(fn)
    for args in calls:
        assert_same(static(*args), fn(*args))
    assert static.num_graphs == 1
    return static


def op_names(static, *args) -> list[str]:
    return [op.name for op in static.graph(*args, optimize=False).walk()]


def line_of(fn, text: str) -> int:
    """The line number in this file of the first line of ``fn`` containing ``text``."""
    import inspect

    lines, start = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if text in line:
            return start + offset
    raise AssertionError(f"{text!r} not in {fn.__name__}")


X = np.linspace(-1.0, 2.0, 6).astype(np.float32)
W1 = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
W2 = -np.arange(16, dtype=np.float32).reshape(4, 4) / 7


# --- equivalence ----------------------------------------------------------------------------------
def seed_model(x, flag):
    if flag > 0:
        y = W1 @ x
    else:
        y = W2 @ x
    return np.maximum(y, 0)


def test_seed_model_with_tensor_flag_takes_both_branches_through_one_graph():
    x = np.arange(4, dtype=np.float32)
    static = check_same_graph(seed_model, (x, np.array(1)), (x, np.array(-1)))
    assert op_names(static, x, np.array(1)).count("cond") == 1


def if_without_else(x, t):
    y = x * 2
    if t > 0:
        y = y + 1
    return y


def test_if_without_else_keeps_the_old_value_on_the_other_path():
    check_same_graph(if_without_else, (X, np.float32(1)), (X, np.float32(-1)))


def elif_chain(x, t):
    if t > 1:
        y = x + 1
    elif t > 0:
        y = x * 2
    elif t > -1:
        y = x - 3
    else:
        y = -x
    return y


def test_elif_chain_becomes_nested_conds():
    static = check_same_graph(elif_chain, *[(X, np.float32(t)) for t in (2, 0.5, -0.5, -2)])
    assert op_names(static, X, np.float32(0)).count("cond") == 3


def nested_if(x, a, b):
    if a > 0:
        if b > 0:
            y = x + 1
        else:
            y = x - 1
        z = y * 2
    else:
        z = x
    return z


def test_nested_ifs():
    check_same_graph(nested_if, *[(X, np.array(a), np.array(b)) for a in (1, -1) for b in (1, -1)])


def several_outputs(x, t):
    if t.sum() > 0:
        a, b = x + 1, x.sum()
        c = 3
    else:
        a = x * 0
        b = x.max()
        c = 3
    return a, b, c


def test_several_outputs_and_equal_python_constants():
    check_same_graph(several_outputs, (X, X), (X, -X))


def temporary_in_one_branch(x, t):
    if t > 0:
        tmp = x * 3
        y = tmp + 1
    else:
        y = x
    return y


def test_a_variable_defined_in_one_branch_and_not_used_later_is_fine():
    check_same_graph(temporary_in_one_branch, (X, np.array(1)), (X, np.array(0)))


def python_scalar_against_tensor(x, t):
    if t > 0:
        s = x.sum()
    else:
        s = 0.0
    return s * x


def test_python_scalar_in_one_branch_takes_the_tensors_dtype():
    static = check_same_graph(python_scalar_against_tensor, (X, np.array(1)), (X, np.array(0)))
    assert static(X, np.array(0)).dtype == np.float32


def python_ints_in_both_branches(x, t):
    if t > 0:
        k = 2
    else:
        k = 3
    return x * k


def test_different_python_numbers_stay_weakly_typed():
    # ``k`` is a 0-d value in the graph but promotes like a Python int: x stays float32.
    check_same_graph(python_ints_in_both_branches, (X, np.array(1)), (X, np.array(0)))


def in_place_update(x, a, t):
    if t > 0:
        a[0] = 10.0
        a += 1
    return a * x


def test_in_place_updates_in_a_branch_reach_the_callers_array():
    static = dy2st.to_static(in_place_update)
    for t in (1, 0):
        a_eager, a_static = np.ones(6, np.float32), np.ones(6, np.float32)
        assert_same(static(X, a_static, np.array(t)), in_place_update(X, a_eager, np.array(t)))
        np.testing.assert_array_equal(a_static, a_eager)
    assert static.num_graphs == 1


def reads_after_update_in_other_branch(x, t):
    y = x + 0
    if t > 0:
        y[1] = 5.0
        z = y.sum()
    else:
        z = y.sum() * 2
    return z, y


def test_the_false_branch_does_not_see_the_true_branchs_updates():
    check_same_graph(reads_after_update_in_other_branch, (X, np.array(1)), (X, np.array(0)))


def python_condition(x, n):
    if n > 2:
        y = x * n
    else:
        y = x - n
    return y


def test_python_condition_stays_python_and_specialises_the_graph():
    static = dy2st.to_static(python_condition, static_argnames="n")
    assert_same(static(X, 3), python_condition(X, 3))
    assert_same(static(X, 1), python_condition(X, 1))
    assert "cond" not in op_names(static, X, 3)
    assert static.num_graphs == 2


def test_a_condition_on_a_number_input_is_a_graph_cond():
    static = dy2st.to_static(python_condition)
    assert_same(static(X, 3), python_condition(X, 3))
    assert_same(static(X, 1), python_condition(X, 1))
    assert "cond" in op_names(static, X, 3)
    assert static.num_graphs == 2  # n=3 as a constant, then n an input


def condition_with_one_element(x, t):
    if t:  # a float array of shape (1,): NumPy's truth value is t[0] != 0
        y = x + 1
    else:
        y = x
    return y


def test_one_element_condition_uses_numpys_truth_value():
    check_same_graph(condition_with_one_element, (X, np.array([0.5])), (X, np.array([0.0])))


def if_in_helper(x, t):
    def helper(v):
        if v.sum() > 0:
            return v * 2
        return -v

    return helper(x) + helper(x * t)


def test_if_inside_a_nested_helper_function():
    check_same_graph(if_in_helper, (X, np.float32(1)), (X, np.float32(-1)))


# --- the graph holds cond only where the condition is a tensor ----------------------------------------
def mixed_conditions(x, t, mode):
    if mode == "double":
        x = x * 2
    if t > 0:
        x = x + 1
    return x


def test_cond_exactly_where_the_condition_is_a_tensor():
    static = dy2st.to_static(mixed_conditions)
    names = op_names(static, X, np.array(1), "double")
    assert names.count("cond") == 1
    cond_index = names.index("cond")
    assert "multiply" in names[:cond_index]  # the Python if ran while building


# --- dy2st.cond ---------------------------------------------------------------------------------------
def test_public_cond_is_eager_on_concrete_values():
    assert dy2st.cond(np.array(True), lambda: "yes", lambda: "no") == "yes"
    assert dy2st.cond(False, lambda a: a + 1, lambda a: a - 1, 10) == 9


def public_cond(x, t):
    return dy2st.cond(t > 0, lambda v: (v * 2, v.sum()), lambda v: (-v, v.min()), x)


def test_public_cond_stages_inside_a_converted_function():
    static = check_same_graph(public_cond, (X, np.array(1)), (X, np.array(-1)))
    assert "cond" in op_names(static, X, np.array(1))


# --- errors -------------------------------------------------------------------------------------------
def shape_mismatch(x, t):
    if t > 0:
        y = x
    else:
        y = x[:3]
    return y


def test_shape_mismatch_between_branches_names_variable_types_and_line():
    with pytest.raises(GraphBuildError) as info:
        dy2st.to_static(shape_mismatch)(X, np.array(1))
    # The error points at the line that computed the false branch's value; the note names the if.
    line = line_of(shape_mismatch, "y = x[:3]")
    assert info.value.message == "'y' is f32[6] in the true branch but f32[3] in the false branch"
    assert info.value.loc.lineno == line and info.value.loc.filename.endswith(THIS_FILE)
    assert "y = x[:3]" in str(info.value)
    assert info.value.note == (
        "a variable assigned in both branches of a tensor 'if' needs one shape and dtype "
        f"(the 'if' is at line {line_of(shape_mismatch, 'if t > 0')})"
    )


def dtype_mismatch(x, t):
    if t > 0:
        y = x.astype(np.float64)
    else:
        y = x
    return y


def test_dtype_mismatch_between_branches():
    with pytest.raises(GraphBuildError, match=r"'y' is f64\[6\] in the true branch but f32\[6\] in the false branch"):
        dy2st.to_static(dtype_mismatch)(X, np.array(1))


def defined_in_one_branch_used_later(x, t):
    if t > 0:
        y = x + 1
    return y


@pytest.mark.parametrize("t", [1, 0])
def test_a_variable_defined_in_one_branch_is_checked_where_it_is_used(t):
    # As in Python: fine on the path that assigned it, UnboundLocalError at the use on the other.
    static = dy2st.to_static(defined_in_one_branch_used_later)
    if t:
        assert_same(static(X, np.array(t)), defined_in_one_branch_used_later(X, np.array(t)))
        return
    with pytest.raises(UnboundLocalError) as info:
        static(X, np.array(t))
    assert (
        "the function returns 'y', which was never assigned: it is not assigned on the path the 'if' at line "
        in str(info.value)
    )
    assert f"line {line_of(defined_in_one_branch_used_later, 'if t > 0')} took" in str(info.value)


def undefined_on_python_path(x, n):
    if n > 0:
        y = x + 1
    return y * 2


def test_using_a_variable_the_python_path_did_not_define_names_it_and_its_line():
    static = dy2st.to_static(undefined_on_python_path, static_argnums=1)
    assert_same(static(X, 1), undefined_on_python_path(X, 1))
    with pytest.raises(GraphBuildError) as info:
        static(X, 0)
    assert info.value.message == "'y' is used here but is not defined on every path that reaches this line"
    assert info.value.loc.lineno == line_of(undefined_on_python_path, "return y * 2")


def scalar_vs_incompatible_tensor(x, t):
    if t > 0:
        k = np.int64(3) * (x > 0).sum()
    else:
        k = 0.5
    return k


def test_python_float_against_an_integer_tensor_is_an_error():
    with pytest.raises(GraphBuildError, match=r"'k' is i64\[\] in the true branch but the Python float 0.5"):
        dy2st.to_static(scalar_vs_incompatible_tensor)(X, np.array(1))


def ambiguous_condition(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def test_a_condition_with_many_elements_is_ambiguous_like_numpy():
    with pytest.raises(GraphBuildError, match="truth value of a tensor bool\\[6\\] with 6 elements is ambiguous"):
        dy2st.to_static(ambiguous_condition)(X)


def try_in_tensor_branch(x, t):
    if t > 0:
        try:
            y = x + 1
        except ValueError:
            y = x
    else:
        y = x
    return y


def test_try_under_a_tensor_condition_is_unsupported_but_fine_under_a_python_one():
    static = dy2st.to_static(try_in_tensor_branch)
    assert_same(static(X, 1), try_in_tensor_branch(X, 1))
    with pytest.raises(UnsupportedSyntaxError) as info:
        static(X, np.array(1))
    try_line = line_of(try_in_tensor_branch, "try:")
    assert info.value.message == (
        "this condition is a tensor, so the statement must become a graph op, but its body has "
        f"a 'try' statement (line {try_line})"
    )
    assert info.value.loc.lineno == line_of(try_in_tensor_branch, "if t > 0")


def test_fallback_runs_eagerly_when_a_tensor_branch_cannot_be_staged():
    static = dy2st.to_static(try_in_tensor_branch, fallback=True)
    with pytest.warns(UserWarning, match="running try_in_tensor_branch eagerly"):
        assert_same(static(X, np.array(1)), try_in_tensor_branch(X, np.array(1)))


def error_in_branch(x, t):
    if t > 0:
        y = x @ np.ones((5, 2))
    else:
        y = x
    return y


def test_an_error_inside_a_branch_points_at_the_users_line():
    with pytest.raises(GraphBuildError) as info:
        dy2st.to_static(error_in_branch)(X, np.array(1))
    assert info.value.loc.lineno == line_of(error_in_branch, "y = x @ np.ones")
    assert "matmul" in info.value.message


def cond_with_different_structures(x, t):
    return dy2st.cond(t > 0, lambda: (x, x), lambda: x)


def test_cond_branches_must_return_one_structure():
    message = "the result is a tuple of 2 values in the true branch but f32.6. in the false"
    with pytest.raises(GraphBuildError, match=message):
        dy2st.to_static(cond_with_different_structures)(X, np.array(1))


def negated_zero_on_one_path(x):
    s = 0.0
    if x[2] > -1.0:
        s = -s  # -0.0 on this path only: a Python float the branches must not call equal to 0.0
    return s


def test_python_floats_of_the_branches_are_joined_by_their_bits():
    assert_like_eager(negated_zero_on_one_path, np.array([0.0, 1.0, -1.0]))
    assert_like_eager(negated_zero_on_one_path, np.array([0.0, 1.0, 0.5]))
