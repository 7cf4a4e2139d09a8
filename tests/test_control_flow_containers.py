"""Python lists and dicts changed in place inside a tensor loop: a clear error at the loop's line.

A tensor loop traces its body while the graph is built, so it cannot append once per iteration.
Containers the loop carries (rebound, or updated leaf by leaf) keep working.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import dy2st
from test_control_flow_if import check_same_graph, line_of

THIS_FILE = os.path.basename(__file__)
X = np.linspace(-1.0, 2.0, 6).astype(np.float32)


def append_in_for(x, n):
    outs = []
    for i in range(n):
        outs.append(x * i)
    return np.stack(outs)


def extend_in_while(x, n):
    outs = [x]
    i = 0
    while i < n:
        outs.extend([x + i])
        i += 1
    return x + 1


def dict_item_in_while(x, n):
    seen = {}
    i = 0
    while i < n:
        seen["last"] = x * i
        i += 1
    return seen["last"]


def check_refused(fn, name: str, kind: str, loop: str) -> None:
    with pytest.raises(dy2st.GraphBuildError) as caught:
        dy2st.to_static(fn)(X, np.array(3))
    text = str(caught.value)
    assert (
        f"{THIS_FILE}:{line_of(fn, loop)}:5: error: '{name}' is a Python {kind} that this tensor loop changes in place"
        in text
    )
    assert f"a tensor loop cannot change a Python {kind}" in text
    assert "a[i] = v" in text and "np.stack" in text


def test_appending_to_a_list_in_a_tensor_for_is_refused():
    check_refused(append_in_for, "outs", "list", "for i in range(n)")


def test_extending_a_list_in_a_tensor_while_is_refused_even_if_unused_later():
    check_refused(extend_in_while, "outs", "list", "while i < n")


def test_setting_a_dict_item_in_a_tensor_loop_is_refused():
    check_refused(dict_item_in_while, "seen", "dict", "while i < n")


def preallocated(x, n):
    outs = np.zeros((4,) + x.shape, x.dtype)
    for i in range(n):
        outs[i] = x * i
    return outs


def python_range_then_stack(x):
    outs = []
    for i in range(3):
        outs.append(x * i)
    return np.stack(outs)


def test_the_suggested_rewrites_work():
    check_same_graph(preallocated, (X, np.array(0)), (X, np.array(3)))
    check_same_graph(python_range_then_stack, (X,))


def carried_dict(x, n):
    d = {"a": x}
    i = 0
    while i < n:
        d["a"] = d["a"] * 2
        i += 1
    return d["a"]


def carried_list(x, n):
    acc = [x, x + 1]
    for i in range(n):
        acc[0] = acc[0] + acc[1]
    return acc[0]


def test_containers_the_loop_carries_are_not_refused():
    check_same_graph(carried_dict, (X, np.array(0)), (X, np.array(2)))
    check_same_graph(carried_list, (X, np.array(0)), (X, np.array(2)))


def append_in_tensor_if(x, flag):
    outs = []
    if flag > 0:
        outs.append(x * 2)
    else:
        outs.append(x - 1)
    return outs[0]


def append_in_python_if(x, k):
    outs = []
    if k > 0:
        outs.append(x * 2)
    else:
        outs.append(x - 1)
    return outs[0]


def test_appending_to_a_list_in_a_tensor_if_is_refused():
    # Both branches are traced, so the list would get both appends whichever branch runs.
    with pytest.raises(dy2st.GraphBuildError) as caught:
        dy2st.to_static(append_in_tensor_if)(X, np.array(1))
    text = str(caught.value)
    line = line_of(append_in_tensor_if, "if flag > 0")
    assert f"{THIS_FILE}:{line}:" in text
    assert "'outs' is a Python list that this tensor 'if' changes in place" in text
    assert "change the container after the 'if'" in text


def test_appending_to_a_list_under_a_python_if_still_works():
    static = dy2st.to_static(append_in_python_if)
    for k in (1, -1):
        np.testing.assert_array_equal(static(X, k), append_in_python_if(X, k))
