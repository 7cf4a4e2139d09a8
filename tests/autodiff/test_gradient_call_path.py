"""The fast call of gradient functions: an all-array positional call of ``grad`` or
``value_and_grad`` runs a generated call of its gradient graph, as converted functions do. It must
give what the general path gives, and step aside whenever the general path would decide otherwise
(a capture rebound, new shapes, keyword arguments, Python floats)."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st

SCALE = np.array([1.0, 2.0, 3.0])


def weighted_loss(w, x):
    return np.sum(np.tanh(x @ w) * SCALE)


def loss_reading_row(w, i):
    return w[i] * 2.0


def eager_gradient(w, x):
    t = np.tanh(x @ w)
    return x.T @ ((1 - t * t) * SCALE)


def test_repeated_calls_take_the_fast_call_and_give_the_general_paths_answer():
    both = dy2st.value_and_grad(weighted_loss)
    w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 1, 8).reshape(2, 4)
    first_value, first_grad = both(w, x)
    assert len(both._fast_calls) == 1
    for _ in range(3):
        value, grad = both(w, x)
        assert value == first_value and type(value) is type(first_value)
        np.testing.assert_array_equal(grad, first_grad)
    np.testing.assert_allclose(first_grad, eager_gradient(w, x), rtol=1e-12)


def test_grad_with_a_tuple_of_argnums_returns_a_tuple_on_the_fast_call():
    g = dy2st.grad(weighted_loss, argnums=(0, 1))
    w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 1, 8).reshape(2, 4)
    expected = g(w, x)
    again = g(w, x)
    assert isinstance(again, tuple) and len(again) == 2
    for a, e in zip(again, expected):
        np.testing.assert_array_equal(a, e)


def test_a_rebound_global_array_is_read_anew(monkeypatch):
    g = dy2st.grad(weighted_loss)
    w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 1, 8).reshape(2, 4)
    g(w, x)
    g(w, x)
    monkeypatch.setattr(f"{__name__}.SCALE", np.array([-1.0, 0.5, 4.0]))
    np.testing.assert_allclose(g(w, x), eager_gradient(w, x), rtol=1e-12)
    monkeypatch.setattr(f"{__name__}.SCALE", np.array([1.0, 1.0]))  # another shape: a new graph
    with pytest.raises(ValueError):
        g(w, x)


def test_new_shapes_keywords_and_floats_give_the_right_gradients():
    g = dy2st.grad(weighted_loss)
    for rows in (2, 5, 2, 7):
        w, x = np.linspace(-1, 1, 12).reshape(4, 3), np.linspace(0, 1, rows * 4).reshape(rows, 4)
        np.testing.assert_allclose(g(w, x), eager_gradient(w, x), rtol=1e-12)
        np.testing.assert_allclose(g(w, x=x), eager_gradient(w, x), rtol=1e-12)
    scalar = dy2st.grad(lambda a, b: a * b * 3.0)
    assert scalar(2.0, np.float64(4.0)) == 12.0 and type(scalar(2.0, np.float64(4.0))) is float
    assert scalar(np.array(2.0), np.array(5.0)) == 15.0


def test_an_error_of_the_gradient_graph_names_the_users_line_on_the_fast_call_too():
    g = dy2st.grad(loss_reading_row)
    w = np.arange(4.0)
    np.testing.assert_array_equal(g(w, np.array(1)), [0.0, 2.0, 0.0, 0.0])
    for _ in range(2):
        with pytest.raises(IndexError) as raised:
            g(w, np.array(9))
        assert "test_gradient_call_path.py" in str(raised.value)
