"""dy2st.grad, value_and_grad and vjp: arguments, results, caching, errors (docs/autodiff.md)."""

from __future__ import annotations

import numpy as np
import pytest
from finite_differences import assert_gradient_matches, numerical_gradient

import dy2st
from dy2st.ir.opcodes import TAPE_PUSH, TAPE_ROWS_NEW, WHILE_LOOP


def loss(w, x, scale):
    return (np.tanh(x @ w) ** 2).sum() * scale


def test_grad_of_several_arguments_is_a_tuple_with_their_shapes():
    w, x = np.ones((3, 2)) * 0.1, np.arange(12.0).reshape(4, 3) / 10
    gw, gx = dy2st.grad(loss, argnums=(0, 1))(w, x, 2.0)
    assert gw.shape == w.shape and gx.shape == x.shape
    single = dy2st.grad(loss)(w, x, 2.0)
    np.testing.assert_array_equal(single, gw)


def test_value_and_grad_returns_the_value_eager_code_returns():
    w, x = np.ones((3, 2)) * 0.1, np.arange(12.0).reshape(4, 3) / 10
    value, g = dy2st.value_and_grad(loss)(w, x, 2.0)
    assert value == loss(w, x, 2.0)
    assert type(value) is type(loss(w, x, 2.0))
    np.testing.assert_allclose(g, dy2st.grad(loss)(w, x, 2.0))


def test_a_python_float_argument_gets_a_float_gradient():
    def f(x, t):
        return (np.exp(x / t)).sum()

    x = np.array([0.5, 1.0])
    g = dy2st.grad(f, argnums=1)(x, 2.0)
    assert type(g) is float
    np.testing.assert_allclose(g, (-x / 4.0 * np.exp(x / 2.0)).sum())


def test_a_numpy_scalar_argument_gets_a_numpy_scalar_gradient():
    g = dy2st.grad(lambda t: np.sin(t) * 2.0)(np.float64(0.3))
    assert type(g) is np.float64
    np.testing.assert_allclose(g, 2 * np.cos(0.3))


def test_a_zero_d_array_argument_gets_a_zero_d_array_gradient():
    g = dy2st.grad(lambda t: np.sin(t) * 2.0)(np.array(0.3))
    assert type(g) is np.ndarray and g.shape == ()


def test_pytree_arguments():
    def f(params, x):
        w, b = params["w"], params["b"]
        return ((x @ w + b) ** 2).sum()

    params = {"w": np.ones((2, 3)), "b": np.zeros(3)}
    x = np.array([[1.0, 2.0]])
    g = dy2st.grad(f)(params, x)
    assert set(g) == {"w", "b"}
    np.testing.assert_allclose(g["b"], 2 * (x @ params["w"] + params["b"])[0])


def test_an_argument_the_result_does_not_depend_on_has_zero_gradient():
    g = dy2st.grad(lambda x, y: (x * 2.0).sum(), argnums=1)(np.ones(3), np.ones(4))
    np.testing.assert_array_equal(g, np.zeros(4))


def test_integer_arguments_are_refused():
    with pytest.raises(dy2st.DifferentiationError, match="dtype int64"):
        dy2st.grad(lambda x: (x * 2.0).sum())(np.arange(3))


def test_non_scalar_results_are_refused_by_grad():
    with pytest.raises(dy2st.DifferentiationError, match="one floating-point scalar"):
        dy2st.grad(lambda x: x * 2.0)(np.ones(3))


def test_an_op_without_an_adjoint_rule_names_the_op_and_the_users_line():
    def f(x):
        return np.convolve(x, x).sum()

    with pytest.raises(dy2st.DifferentiationError, match="np.convolve") as info:
        dy2st.grad(f)(np.arange(3.0))
    assert "test_gradient_api.py" in str(info.value)
    assert "np.convolve(x, x)" in str(info.value)


def test_gradient_graphs_are_cached_per_signature():
    g = dy2st.grad(lambda x: (x**2).sum())
    g(np.ones(3))
    g(np.ones(3) * 2)
    assert g.num_graphs == 1
    g(np.ones(4))
    assert g.num_graphs == 2


def test_the_gradient_graph_is_a_static_graph_with_a_tape_for_loops():
    def f(a):
        x = a
        while x > 1.0:
            x = x * 0.5
        return x

    graph = dy2st.grad(f).graph(np.array(5.0))
    ops = [op.name for op in graph.walk()]
    assert ops.count(WHILE_LOOP) == 2  # the forward loop and its adjoint
    assert TAPE_PUSH in ops


def test_vjp_of_a_vector_function():
    def f(x, y):
        return np.sin(x) * y, (x * y).sum()

    x, y = np.array([0.1, 0.2, 0.3]), np.array([1.0, 2.0, 3.0])
    outputs, back = dy2st.vjp(f, x, y)
    np.testing.assert_allclose(outputs[0], np.sin(x) * y)
    gx, gy = back(np.array([1.0, 0.0, 2.0]), np.array(3.0))
    np.testing.assert_allclose(gx, np.cos(x) * y * [1.0, 0.0, 2.0] + 3.0 * y)
    np.testing.assert_allclose(gy, np.sin(x) * [1.0, 0.0, 2.0] + 3.0 * x)


def test_converted_functions_and_methods_differentiate():
    class Model:
        def __init__(self):
            self.scale = np.array([2.0, 3.0])

        def __call__(self, x):
            return (self.scale * x**2).sum()

    model = Model()
    g = dy2st.grad(model)(np.array([1.0, 1.0]))
    np.testing.assert_allclose(g, [4.0, 6.0])

    @dy2st.to_static
    def f(x):
        return (x**3).sum()

    np.testing.assert_allclose(dy2st.grad(f)(np.array([1.0, 2.0])), [3.0, 12.0])


def test_matches_jax_grad_where_jax_is_installed():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def ours(W, U, xs, h):
        for t in range(xs.shape[0]):
            h = np.tanh(W @ h + U @ xs[t])
        return (h**2).sum()

    def theirs(W, U, xs, h):
        for t in range(xs.shape[0]):
            h = jnp.tanh(W @ h + U @ xs[t])
        return (h**2).sum()

    rng = np.random.default_rng(3)
    args = (rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=(8, 3)), rng.normal(size=4))
    got = dy2st.grad(ours, argnums=(0, 1, 3))(*args)
    want = jax.grad(theirs, argnums=(0, 1, 3))(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10)


def test_argnums_inside_star_args_is_refused_clearly():
    def f(*xs):
        return xs[0].sum()

    with pytest.raises(dy2st.DifferentiationError, match="not a named positional parameter"):
        dy2st.grad(f)(np.ones(2))


def test_the_graph_before_the_passes_holds_the_forward_and_backward_code():
    def f(x):
        return (np.sin(x) * x).sum()

    graph = dy2st.grad(f).graph(np.ones(3), optimize=False)
    assert len(graph.outputs) == 2  # the value, then the gradient
    assert sum(1 for op in graph.walk()) > sum(1 for op in dy2st.to_static(f).graph(np.ones(3), optimize=False).walk())


def test_dump_prints_the_gradient_graph(tmp_path):
    from dy2st.cli import main

    source = tmp_path / "model.py"
    source.write_text(
        "import numpy as np\n\ndef f(a):\n    x = a\n    while x > 1.0:\n        x = x * 0.5\n    return x * x\n"
    )
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dump", f"{source}::f", "--grad", "0", "--arg", "a=f64[]"]) == 0
    text = out.getvalue()
    assert text.count("while_loop") == 2 and "tape_pop" in text
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit) as usage:
        main(["dump", f"{source}::f", "--grad", "x", "--arg", "a=f64[]"])
    assert usage.value.code == 2


def test_checkpointed_loops_recompute_their_iterations_and_agree():
    def f(A):
        B = A.copy()
        for i in range(1, B.shape[0]):
            B[i] = B[i] * np.tanh(B[i - 1])
        return (B**2).sum()

    A = np.random.default_rng(5).normal(size=(6, 3))
    saved, recomputed = dy2st.grad(f), dy2st.grad(f, checkpoint=True)
    np.testing.assert_allclose(recomputed(A), saved(A), rtol=1e-12)

    def stacked(graph):
        return [op.results[0].type.shape for op in graph.walk() if op.name == TAPE_ROWS_NEW]

    # Saving mode keeps the rows the adjoint reads; checkpointing keeps what each iteration
    # starts from (the whole matrix B; the counter is computed again), 5 iterations of each.
    assert stacked(recomputed.graph(A)) == [(5, 6, 3)]
    assert stacked(saved.graph(A)) and all(shape[1:] == (3,) for shape in stacked(saved.graph(A)))


def test_a_gradient_through_complex_numbers_is_refused_not_zero():
    """np.abs(np.fft.rfft(x)) depends on x through complex values: refusing is the honest
    answer until complex differentiation exists (it once returned zeros)."""

    def f(x):
        return np.abs(np.fft.rfft(x)).sum()

    with pytest.raises(dy2st.DifferentiationError, match="complex"):
        dy2st.grad(f)(np.arange(8.0))


SEEN = np.zeros(2)


def counts_calls(x):
    SEEN[0] += 1.0  # a global array updated in place, as eager code would
    return np.sin(x) * 2.0


def test_vjp_of_a_function_that_updates_a_global_array():
    before = SEEN.copy()
    x = np.array([0.1, 0.2])
    outputs, back = dy2st.vjp(counts_calls, x)
    (gx,) = back(np.ones(2))
    np.testing.assert_allclose(gx, 2.0 * np.cos(x))
    assert SEEN[0] == before[0] + 2.0  # the forward call and the vjp's graph each update it once


def batch_loss(w, x):
    h = np.tanh(x @ w)
    return (h * h).mean() + np.maximum(w, 0.0).sum()


def test_a_changing_batch_size_builds_one_symbolic_gradient_graph():
    grad = dy2st.grad(batch_loss)
    w = np.random.default_rng(0).normal(size=(4, 3))
    for n in (5, 9, 17, 33, 9):
        x = np.random.default_rng(n).normal(size=(n, 4))
        assert_gradient_matches(batch_loss, w, x)
        grad(w, x)
    assert grad.num_graphs == 2  # n=5's, then one with the batch size symbolic
    assert "n0" in str(grad.graph(w, np.ones((12, 4))))


def test_vjp_keeps_a_graph_per_shape():
    for n in (5, 9):
        x = np.random.default_rng(n).normal(size=(n, 4))
        out, pullback = dy2st.vjp(lambda x: np.tanh(x) * 2.0, x)
        (g,) = pullback(np.ones_like(out))
        np.testing.assert_allclose(g, 2.0 * (1.0 - np.tanh(x) ** 2))


def test_vjp_of_the_same_function_reuses_its_gradient_graph():
    def f(x, w):
        return np.tanh(x @ w)

    x, w = np.ones((4, 3)), np.full((3, 2), 0.5)
    for step in range(3):
        out, back = dy2st.vjp(f, x, w * step)
        gx, gw = back(np.ones((4, 2)))
        np.testing.assert_allclose(gw, x.T @ (1.0 - np.tanh(x @ (w * step)) ** 2))
    programs = f.__dict__["_dy2st_vjp_functions"]
    assert [program.num_graphs for program in programs.values()] == [1]


def test_vjp_of_methods_of_two_instances_keeps_them_apart():
    class Scaled:
        def __init__(self, scale):
            self.scale = scale

        def apply(self, x):
            return x * self.scale

    x = np.arange(3.0)
    for scale in (np.array(2.0), np.array(5.0)):
        _, back = dy2st.vjp(Scaled(scale).apply, x)
        np.testing.assert_array_equal(back(np.ones(3))[0], np.full(3, float(scale)))


def test_python_numbers_that_change_become_inputs_of_the_gradient_graph():
    def loss(w, x, reg):
        return ((x @ w) ** 2).sum() + reg * (w * w).sum()

    g = dy2st.grad(loss)
    w, x = np.array([0.5, -1.0, 2.0]), np.ones((4, 3))
    for reg in (0.1, 0.2, 0.3, 0.7):
        np.testing.assert_allclose(g(w, x, reg), 2 * x.T @ (x @ w) + 2 * reg * w)
    assert g.num_graphs == 2  # the first value's, then one for every value
    assert type(dy2st.grad(loss, argnums=2)(w, x, 0.25)) is float


def test_a_changing_step_count_rolls_the_differentiated_loop():
    def iterate(x, steps):
        for _ in range(steps):
            x = np.sin(x) * 1.1
        return x.sum()

    g = dy2st.value_and_grad(iterate)
    x = np.array([0.3, -0.2, 0.9])
    for steps in (2, 5, 3, 0):
        value, grad = g(x, steps)
        assert value == pytest.approx(iterate(x, steps))
        np.testing.assert_allclose(grad, numerical_gradient(iterate, (x, steps), 0), rtol=1e-6)
    assert g.num_graphs == 2


def test_a_number_needed_as_a_value_keeps_the_gradient_graphs_specialised():
    def padded(x, n):
        return (np.concatenate([x, np.zeros(n)]) ** 2).sum() * n

    g = dy2st.grad(padded)
    x = np.array([1.0, 2.0])
    for n in (1, 2, 3):
        np.testing.assert_allclose(g(x, n), 2 * x * n)
