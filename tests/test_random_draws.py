"""Random draws happen when the graph runs and advance the generator exactly as eager code does:
the same seed gives the same numbers as eager, call after call (issue 10)."""

import numpy as np
import pytest

import dy2st
from eager_parity import same_value

rng = np.random.default_rng(0)


def global_draw(x):
    return x + rng.normal(size=x.shape)


def argument_draw(x, g):
    return x * g.random(x.shape)


def seeded_inside(x):
    g = np.random.default_rng(42)
    return x + g.standard_normal(3), g.integers(0, 10, size=2)


def legacy_functions(x):
    return x + np.random.rand(3) + np.random.normal(0.0, 2.0, size=3), np.random.randint(5)


def reseeded_inside(x):
    np.random.seed(3)
    return x + np.random.rand(3)


def python_number_draws(x):
    s = rng.normal()
    return x * s, s, rng.integers(5), rng.random()


def tensor_parameters(mu, sigma):
    return rng.normal(mu, sigma), rng.uniform(low=mu, high=mu + 1.0)


def two_draws_alike(x):
    return rng.random(3) + x, rng.random(3) + x


def unused_draw(x):
    rng.random(5)  # the result is thrown away, but eager code still advances the generator
    return x + rng.random(3)


def draws_in_a_tensor_loop(x, n):
    total = x.copy()
    i = 0
    while i < n:
        total = total + rng.random(3)
        i += 1
    return total


def draws_in_a_tensor_branch(x):
    if x.sum() > 0:
        y = x + rng.random(3)
    else:
        y = x - rng.normal(size=3)
    return y, rng.random()


def _reset():
    global rng
    rng = np.random.default_rng(0)
    np.random.seed(7)


def _same_draws(fn, *make_args, calls=3):
    """Eager and converted calls from the same seeds give the same values, call after call,
    through the fast path (positional arrays) and the general one."""
    _reset()
    eager_args = [make() for make in make_args]
    expected = [fn(*eager_args) for _ in range(calls)]
    _reset()
    static = dy2st.to_static(fn)
    converted_args = [make() for make in make_args]
    for call, want in enumerate(expected):
        same_value(static(*converted_args), want, f"call {call}")
    return static


ONES = lambda: np.ones(3)  # noqa: E731


@pytest.mark.parametrize(
    "fn, make_args",
    [
        (global_draw, [ONES]),
        (argument_draw, [ONES, lambda: np.random.default_rng(1)]),
        (seeded_inside, [ONES]),
        (legacy_functions, [ONES]),
        (reseeded_inside, [ONES]),
        (python_number_draws, [ONES]),
        (tensor_parameters, [lambda: np.zeros(3), lambda: np.full(3, 2.0)]),
        (two_draws_alike, [ONES]),
        (unused_draw, [ONES]),
        (draws_in_a_tensor_loop, [ONES, lambda: np.int64(3)]),
        (draws_in_a_tensor_branch, [ONES]),
        (draws_in_a_tensor_branch, [lambda: -np.ones(3)]),
    ],
)
def test_draws_match_eager_call_after_call(fn, make_args):
    static = _same_draws(fn, *make_args)
    assert static.num_graphs == 1


def test_every_call_draws_new_numbers():
    static = dy2st.to_static(global_draw)
    first, second = static(np.zeros(3)), static(np.zeros(3))
    assert not np.array_equal(first, second)


def test_an_unseeded_generator_created_inside_draws_new_numbers_each_call():
    def fresh(x):
        return x + np.random.default_rng().random(3)

    static = dy2st.to_static(fresh)
    assert not np.array_equal(static(np.zeros(3)), static(np.zeros(3)))


def test_a_rebound_global_generator_is_used():
    global rng
    static = dy2st.to_static(global_draw)
    _reset()
    static(np.zeros(3))
    rng = np.random.default_rng(123)
    expected = np.random.default_rng(123).normal(size=3)
    np.testing.assert_array_equal(static(np.zeros(3)), expected)


def test_a_generator_argument_advances_in_place():
    g_eager, g_converted = np.random.default_rng(5), np.random.default_rng(5)
    static = dy2st.to_static(argument_draw)
    for _ in range(2):
        np.testing.assert_array_equal(static(np.ones(3), g_converted), argument_draw(np.ones(3), g_eager))
    assert g_eager.random() == g_converted.random()


def shuffles(x):
    rng.shuffle(x)
    return x


def builds_a_random_state(x):
    return np.random.RandomState(0).rand(3) + x


def draws_into_out(x):
    return rng.random(3, out=x)


@pytest.mark.parametrize(
    "fn, fragment",
    [(shuffles, "permutation"), (builds_a_random_state, "default_rng"), (draws_into_out, "returned array")],
)
def test_what_cannot_run_per_call_is_refused(fn, fragment):
    with pytest.raises(dy2st.UnsupportedOpError, match=fragment):
        dy2st.to_static(fn)(np.zeros(3))
