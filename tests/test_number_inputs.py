"""Python numbers whose values change between calls become graph inputs: after the first value's
graph, one graph serves every learning rate, step size or index (``dynamic=True``: from the first
call; ``dynamic=False``: never); ``static_argnums``/``static_argnames`` name the parameters whose
values specialise the graph instead, and a parameter the build needs as a value (a shape)
becomes such a constant by itself (docs/daily-use.md, "Python numbers as graph inputs")."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dy2st
from eager_parity import assert_like_eager


def step(x, lr):
    return x - lr * np.sin(x)


def test_a_float_argument_is_a_graph_input():
    converted = dy2st.to_static(step)
    x = np.linspace(0.0, 1.0, 5)
    for lr in (0.1, 0.25, -3.5, 0.0, -0.0, float("inf"), float("nan"), 1e300):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(converted(x, lr), step(x, lr))
    assert converted.num_graphs == 2  # the first value's graph, then one for every value
    first, every = converted.cache_info().graphs
    assert (first.signature, first.calls) == ("x: f64[5], lr: 0.1", 1)
    assert (every.signature, every.calls) == ("x: f64[5], lr: float", 7)


def test_dynamic_true_makes_numbers_inputs_from_the_first_call_and_false_never():
    x = np.linspace(0.0, 1.0, 5)
    eager_inputs = dy2st.to_static(step, dynamic=True)
    constants = dy2st.to_static(step, dynamic=False)
    for lr in (0.1, 0.2, 0.3):
        assert_like_eager(step, x, lr, converted=eager_inputs)
        assert_like_eager(step, x, lr, converted=constants)
    assert eager_inputs.num_graphs == 1
    assert constants.num_graphs == 3


def test_float32_arrays_stay_float32_with_a_float_input():
    x = np.linspace(0.0, 1.0, 5, dtype=np.float32)
    for lr in (0.1, 1e-8):
        assert_like_eager(step, x, lr)  # a Python float is weak: NumPy keeps float32


def indexes(x, k):
    return x[k] * k, x[:k].sum(), x[k:]


def loops(x, n):
    total = 0.0
    for i in range(n):
        total = total + x[i % x.shape[0]] * i
    return total


@pytest.mark.parametrize("k", [0, 1, 3, -2])
def test_an_int_argument_used_as_an_index(k):
    converted = dy2st.to_static(indexes)
    assert_like_eager(indexes, np.arange(6.0), k, converted=converted)


def test_one_graph_serves_every_index_and_trip_count():
    converted = dy2st.to_static(indexes)
    for k in (0, 1, 3, 5):
        converted(np.arange(6.0), k)
    assert converted.num_graphs == 2  # k=0's, then one for every k
    looping = dy2st.to_static(loops)
    for n in (0, 1, 7, 30):
        assert_like_eager(loops, np.arange(4.0), n, converted=looping)
    assert looping.num_graphs == 2


def an_out_of_range_index(x, k):
    return x[k]


def test_an_out_of_range_index_raises_index_error():
    converted = dy2st.to_static(an_out_of_range_index)
    converted(np.arange(3.0), 1)
    with pytest.raises(IndexError):
        converted(np.arange(3.0), 7)


def sized(x, n, lr):
    return np.zeros(n) + lr * x[:1]


def test_a_number_needed_as_a_value_becomes_a_constant_by_itself():
    converted = dy2st.to_static(sized)
    x = np.arange(3.0)
    for n in (2, 3):
        for lr in (0.5, 0.25, 2.0):
            assert_like_eager(sized, x, n, lr, converted=converted)
    # (2, 0.5) builds with constants; (2, 0.25) with lr an input; n=3 tries n as an input too,
    # which np.zeros(n) needs as a value: then one graph per n, lr a graph input.
    assert [g.signature for g in converted.cache_info().graphs] == [
        "x: f64[3], n: 2, lr: 0.5",
        "x: f64[3], n: 2, lr: float",
        "x: f64[3], n: 3, lr: float",
    ]


def uses_math(x, t):
    return x * math.exp(t)


def test_a_python_math_function_of_a_number_makes_it_a_constant():
    converted = dy2st.to_static(uses_math)
    for t in (1.0, 2.0, 3.0):
        assert_like_eager(uses_math, np.arange(3.0), t, converted=converted)
    assert converted.num_graphs == 3


def branches_on_a_number(x, lr):
    if lr > 0.5:
        return x * 2.0
    return x - 1.0


def test_a_branch_on_a_number_input_runs_in_the_graph():
    converted = dy2st.to_static(branches_on_a_number)
    for lr in (0.7, 0.2, 0.5, float("nan")):
        assert_like_eager(branches_on_a_number, np.arange(3.0), lr, converted=converted)
    assert converted.num_graphs == 2


def returns_numbers(x, lr, n):
    lr *= 0.5  # rebinds the name, as eagerly
    return lr, n + 1, lr * n, isinstance(lr, float), type(n) is int, x.sum() * lr


@pytest.mark.parametrize("lr, n", [(0.3, 2), (-1.5, 0), (2.0, 2**62)])
def test_numbers_come_back_as_python_numbers(lr, n):
    converted = dy2st.to_static(returns_numbers)
    assert_like_eager(returns_numbers, np.arange(3.0), lr, n, converted=converted)


def test_an_int_beyond_int64_and_a_bool_are_constants():
    converted = dy2st.to_static(returns_numbers)
    assert_like_eager(returns_numbers, np.arange(3.0), 0.5, 2**70, converted=converted)
    assert_like_eager(returns_numbers, np.arange(3.0), 0.5, 2**71, converted=converted)
    assert_like_eager(returns_numbers, np.arange(3.0), 0.5, 2**72, converted=converted)
    assert converted.num_graphs == 3
    flagged = dy2st.to_static(lambda x, flag: x * 2 if flag else x)
    flagged(np.ones(2), True)
    flagged(np.ones(2), False)
    assert flagged.num_graphs == 2


def test_a_float_and_an_int_get_graphs_of_their_own():
    converted = dy2st.to_static(step)
    x = np.arange(3.0)
    assert_like_eager(step, x, 2, converted=converted)
    assert_like_eager(step, x, 2.0, converted=converted)
    assert_like_eager(step, x, 3, converted=converted)
    assert_like_eager(step, x, 4.0, converted=converted)
    assert_like_eager(step, x, 5, converted=converted)
    assert converted.num_graphs == 3  # the constant 2; then inputs: every float, every int


def from_a_dict(x, config):
    return x * config["scale"] + config["shift"]


def test_numbers_inside_containers_are_inputs():
    converted = dy2st.to_static(from_a_dict)
    for scale in (0.5, 2.0, 3.0):
        assert_like_eager(from_a_dict, np.arange(3.0), {"scale": scale, "shift": 1}, converted=converted)
    assert converted.num_graphs == 2


def test_keyword_calls_take_number_inputs_too():
    converted = dy2st.to_static(step)
    x = np.arange(3.0)
    for lr in (0.1, 0.2, 0.3):
        np.testing.assert_array_equal(converted(x, lr=lr), step(x, lr))
    assert converted.num_graphs == 2


@pytest.mark.parametrize("option", [{"static_argnums": 1}, {"static_argnums": -1}, {"static_argnames": "lr"}])
def test_static_arguments_specialise_the_graph(option):
    converted = dy2st.to_static(step, **option)
    x = np.arange(3.0)
    for lr in (0.1, 0.2, 0.1):
        assert_like_eager(step, x, lr, converted=converted)
    assert converted.num_graphs == 2
    assert converted.cache_info().graphs[0].signature == "x: f64[3], lr: 0.1"


def test_static_arguments_are_checked():
    with pytest.raises(ValueError, match="static_argnums=2: the function has 2 named positional"):
        dy2st.to_static(step, static_argnums=2)
    with pytest.raises(ValueError, match="static_argnames='rate'"):
        dy2st.to_static(step, static_argnames=("rate",))
    with pytest.raises(TypeError, match="static_argnums takes ints"):
        dy2st.to_static(step, static_argnums=[True])


class Optimizer:
    def __init__(self):
        self.momentum = np.zeros(3)

    @dy2st.to_static(static_argnums=2)  # self is 0: lr is 2
    def update(self, grad, lr):
        return self.momentum * 0.9 - lr * grad

    def scaled(self, grad, lr):
        return grad * lr


def test_static_argnums_of_methods():
    opt = Optimizer()
    opt.update(np.ones(3), 0.1)
    opt.update(np.ones(3), 0.2)
    assert Optimizer.update.num_graphs == 2
    bound = dy2st.to_static(opt.scaled, static_argnums=1)  # bound: lr is 1
    bound(np.ones(3), 0.1)
    bound(np.ones(3), 0.2)
    assert bound.num_graphs == 2


def test_the_retrace_warning_names_a_static_number():
    converted = dy2st.to_static(step, static_argnames="lr")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(10):
            converted(np.ones(2), 0.1 * k)
    messages = [str(w.message) for w in caught if issubclass(w.category, dy2st.RetracingWarning)]
    assert len(messages) == 1
    assert "'lr'" in messages[0] and "static_argnums" in messages[0]


def smooth(x, n, alpha):  # the example of docs/daily-use.md
    for _ in range(n):
        x = alpha * x + (1 - alpha) * np.roll(x, 1)
    return x


def test_the_documented_example():
    converted = dy2st.to_static(smooth, static_argnames="n")
    x = np.linspace(0.0, 1.0, 6)
    for n, alpha in [(2, 0.5), (2, 0.25), (3, 0.5)]:
        assert_like_eager(smooth, x, n, alpha, converted=converted)
    assert converted.num_graphs == 3  # (2, 0.5); n=2 with alpha an input; n=3


def test_the_log_says_which_numbers_became_inputs(caplog):
    import logging

    converted = dy2st.to_static(step)
    with caplog.at_level(logging.DEBUG, logger="dy2st"):
        converted(np.ones(3), 0.1)
        converted(np.ones(3), 0.2)
    built = [r.getMessage() for r in caplog.records if r.getMessage().startswith("built graph")]
    assert "(a new signature)" in built[0]
    assert "(a new value of lr, now graph inputs)" in built[1]


RATES = {0.1: 2.0, 0.2: 3.0}


def looked_up(x, lr):
    return x * RATES.get(lr, 1.0) + float(lr in {0.2, 0.4})


def looked_up_by_a_counter(x):
    out = x * 0.0
    for i in range(x.shape[0]):
        out[i] = {0: 5.0, 1: 7.0}.get(i, 1.0)
    return out


def array_as_a_key(x):
    return {x: 1}


def test_a_dict_lookup_by_a_number_gives_the_eager_answer():
    # Hashing a stand-in would look up the wrong key and silently take the default: a number
    # used as a key is needed as a value, so the parameter becomes a constant.
    converted = dy2st.to_static(looked_up)
    for lr in (0.1, 0.2, 0.4, 0.1, 0.3):
        assert_like_eager(looked_up, np.ones(2), lr, converted=converted)
    assert_like_eager(looked_up_by_a_counter, np.ones(40))
    assert_like_eager(array_as_a_key, np.ones(2))  # TypeError: unhashable, as eagerly
