"""dy2st.trace: every kind of decision a traced function takes on a tensor is baked with a warning
naming its line, checked on each call, and traced again where the arguments take the other path;
results always equal eager NumPy's (docs/tracing.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dy2st

W = np.arange(9.0).reshape(3, 3) / 10


def branch(x):
    if x.sum() > 0:  # bool()
        return x @ W
    return -x


def count(x, n):
    y = x * 1.0
    for _ in range(int(n)):  # int()
        y = y * 0.5
    return y


def scale(x):
    return x * float(x.max())  # float()


def by_item(x):
    return x[: x.argmax().item() + 1].sum()  # .item(), then a slice length


def by_index(x, i):
    return [10.0, 20.0, 30.0][i] * x  # operator.index on a 0-d tensor


def masked(x):
    k = len(x[x > 0])  # the length of a size that depends on the values
    return np.zeros(k) + x[:k]


def loop_on_values(x):
    while x.max() > 1.0:  # a while loop on values: one bool() per iteration
        x = x * 0.5
    return x


DECISIONS = [
    (branch, (np.ones(3),), (-np.ones(3),)),
    (count, (np.ones(2), np.array(2)), (np.ones(2), np.array(5))),
    (scale, (np.array([1.0, 2.0]),), (np.array([1.0, 3.0]),)),
    (by_item, (np.array([1.0, 5.0, 2.0]),), (np.array([7.0, 5.0, 2.0]),)),
    (by_index, (np.ones(2), np.array(1)), (np.ones(2), np.array(2))),
    (masked, (np.array([1.0, -1.0, 2.0]),), (np.array([1.0, 3.0, 2.0]),)),
    (loop_on_values, (np.array([4.0, 1.0]),), (np.array([40.0, 1.0]),)),
]


@pytest.mark.parametrize("fn, first, other", DECISIONS, ids=[d[0].__name__ for d in DECISIONS])
def test_a_decision_that_comes_out_otherwise_traces_again(fn, first, other):
    traced = dy2st.trace(fn)
    with pytest.warns(dy2st.TracerWarning) as caught:
        got = traced(*first)
    np.testing.assert_array_equal(got, fn(*first))
    assert all(w.filename == __file__ for w in caught)  # each names this file and its line
    assert traced.num_graphs == 1
    np.testing.assert_array_equal(traced(*first), fn(*first))  # the same path: the same graph
    assert traced.num_graphs == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dy2st.TracerWarning)
        other_result = traced(*other)
    np.testing.assert_array_equal(other_result, fn(*other))  # never the first path's result
    assert traced.num_graphs == 2


def test_the_warning_names_the_line_of_the_decision():
    with pytest.warns(dy2st.TracerWarning, match=r"baked bool\(\) of a tensor .* \(here it was True\)") as caught:
        dy2st.trace(branch)(np.ones(3))
    assert caught[0].lineno == branch.__code__.co_firstlineno + 1


def test_functions_without_source_trace():
    square_or_not = dy2st.trace(lambda a: a * a if a.max() > 1 else a - 1)
    namespace: dict = {}
    exec("import numpy as np\ndef made(z):\n    return np.sin(z) if z[0] > 0 else np.cos(z)\n", namespace)
    made = dy2st.trace(namespace["made"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dy2st.TracerWarning)
        np.testing.assert_array_equal(square_or_not(np.array([3.0])), [9.0])
        np.testing.assert_array_equal(square_or_not(np.array([0.5])), [-0.5])
        np.testing.assert_array_equal(made(np.array([1.0, 2.0])), np.sin([1.0, 2.0]))
        np.testing.assert_array_equal(made(np.array([-1.0, 2.0])), np.cos([-1.0, 2.0]))


def update(x):
    if x[0] > 0:
        x[1] = 100.0
    else:
        x[2] = -100.0
    return x.sum()


def test_arguments_change_only_by_the_path_taken():
    traced = dy2st.trace(update)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dy2st.TracerWarning)
        a = np.array([1.0, 2.0, 3.0])
        assert traced(a) == 104.0
        np.testing.assert_array_equal(a, [1.0, 100.0, 3.0])
        b = np.array([-1.0, 2.0, 3.0])  # the first graph runs, its decision fails: b is untouched
        assert traced(b) == update(np.array([-1.0, 2.0, 3.0]))
        np.testing.assert_array_equal(b, [-1.0, 2.0, -100.0])


def test_a_function_that_keeps_deciding_otherwise_runs_as_python():
    traced = dy2st.trace(scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(dy2st.tracing.MAX_TRACES + 3):
            x = np.array([1.0, 2.0 + k])
            np.testing.assert_array_equal(traced(x), scale(x))
    assert traced.num_graphs == dy2st.tracing.MAX_TRACES
    assert any("traced 8 times" in str(w.message) for w in caught)


def test_the_graph_of_a_trace_has_no_control_flow():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dy2st.TracerWarning)
        graph = dy2st.trace(loop_on_values).graph(np.array([4.0, 1.0]))
    names = [op.name for op in graph.walk()]
    assert "while_loop" not in names and "cond" not in names
