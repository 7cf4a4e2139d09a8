"""The tiled fused-kernel runtime: bit-identical to unfused NumPy, out=, and located run-time errors."""

import numpy as np
import pytest

import dy2st
from dy2st.backend.numpy import fused as fused_runtime
from dy2st.backend.numpy.executor import Executor
from dy2st.errors import Dy2stRuntimeError
from dy2st.ir.verifier import verify
from dy2st.passes.fuse import FuseElementwise


def unfused_and_fused(fn, *args, member=None):
    """Results of ``fn``'s staged graph run without, then with, elementwise fusion (which must
    have put the op named ``member``, if given, into a group)."""
    graph = dy2st.to_static(fn, optimize=False).graph(*args, optimize=False)
    plain = Executor(graph)(*args)
    assert FuseElementwise().run(graph) is True
    verify(graph)
    assert any(op.name == "fused" for op in graph.walk())
    assert member is None or any(op.name == member and op.parent is not graph.body for op in graph.walk())
    return plain, Executor(graph)(*args)


def assert_bit_identical(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert type(a) is type(e)
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, (a.dtype, a.shape, e.dtype, e.shape)
        assert a.tobytes() == e.tobytes()


@pytest.fixture
def tiny_tiles(monkeypatch):
    """Tiles of 7 elements, so small test arrays cover many tiles and a ragged last one."""
    monkeypatch.setattr(fused_runtime, "TILE_ELEMENTS", 7)


def gelu_scaled(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))) * 1.5 + 0.1


@pytest.mark.parametrize("shape", [(), (1,), (7,), (30,), (5, 9), (3, 4, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_w1_is_bit_identical_across_shapes_that_do_not_divide_the_tile(tiny_tiles, shape, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    plain, fused = unfused_and_fused(gelu_scaled, x)
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, (gelu_scaled(x),))


def int_mix(a, b):
    return (a * 3 + b) // 2 - (a % 5) + (b < a)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
def test_integer_groups_keep_dtypes_and_values(tiny_tiles, dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(1, 50, (4, 6)).astype(dtype)
    b = rng.integers(1, 50, (4, 6)).astype(dtype)
    plain, fused = unfused_and_fused(int_mix, a, b)
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, (int_mix(a, b),))


def promoting(x):
    return np.sqrt(x / 3) * 1.5 + x


def test_promotion_inside_the_group_matches_eager(tiny_tiles):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    plain, fused = unfused_and_fused(promoting, x)
    assert fused[0].dtype == np.float64
    assert_bit_identical(fused, plain)


def broadcasting(x, row, col, s):
    return np.exp(x * row) + col - s * x


@pytest.mark.parametrize("tile", [7, 3, 1000])
def test_broadcast_inputs_tile_along_the_leading_axes(monkeypatch, tile):
    monkeypatch.setattr(fused_runtime, "TILE_ELEMENTS", tile)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    row = rng.standard_normal(5).astype(np.float32)
    col = rng.standard_normal((4, 1)).astype(np.float32)
    s = np.float32(0.75)
    plain, fused = unfused_and_fused(broadcasting, x, row, col, s)
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, (broadcasting(x, row, col, s),))


def transposed(x):
    return np.abs(x.T * 2.0) + 1.0


def test_strided_inputs_take_the_broadcast_path(tiny_tiles):
    x = np.random.default_rng(3).standard_normal((6, 5))
    plain, fused = unfused_and_fused(transposed, x)
    assert_bit_identical(fused, plain)


def two_results(x):
    y = np.cos(x) * 2.0
    return y, y + x


def test_groups_with_several_outputs(tiny_tiles):
    x = np.linspace(-3, 3, 25)
    plain, fused = unfused_and_fused(two_results, x)
    assert_bit_identical(fused, plain)


def empty_ok(x):
    return x * 2 + 1


def test_zero_size_arrays(tiny_tiles):
    x = np.ones((0, 3), np.float32)
    plain, fused = unfused_and_fused(empty_ok, x)
    assert_bit_identical(fused, plain)


def fused_kernel_of(fn, *args):
    graph = dy2st.to_static(fn, optimize=False).graph(*args, optimize=False)
    FuseElementwise().run(graph)
    (op,) = [op for op in graph.walk() if op.name == "fused"]
    return fused_runtime.build_fused_kernel(op)


def test_out_buffer_given_by_the_caller_receives_the_result(tiny_tiles):
    x = np.random.default_rng(4).standard_normal(30).astype(np.float32)
    kernel = fused_kernel_of(gelu_scaled, x)
    out = np.full_like(x, np.nan)
    assert kernel(x, out=out) is out
    assert out.tobytes() == gelu_scaled(x).tobytes()


def test_out_buffer_may_be_an_input(tiny_tiles):
    x = np.random.default_rng(5).standard_normal(30)
    expected = two_results(x)
    kernel = fused_kernel_of(two_results, x)
    y = np.empty_like(x)
    x_copy = x.copy()
    # The second output overwrites the input the group still reads after writing its first output.
    result = kernel(x_copy, out=(y, x_copy))
    assert result[1] is x_copy
    assert y.tobytes() == expected[0].tobytes() and x_copy.tobytes() == expected[1].tobytes()


def test_scratch_stays_within_one_tile_and_is_reused_in_place():
    x = np.ones(1 << 20, np.float32)
    kernel = fused_kernel_of(gelu_scaled, x)
    # Ten intermediates share two scratch buffers: each value dies where the next is made.
    assert kernel.program.scratch == [(np.dtype(np.float32), fused_runtime.FULL)] * 2
    kernel(x)
    scratch_bytes = sum(s.nbytes for s in kernel._scratch)
    assert scratch_bytes == 2 * fused_runtime.TILE_ELEMENTS * 4 <= 1 << 20


def negative_power(a, b):
    c = a + 1
    d = np.power(c, b)
    return d * 2


def test_error_inside_a_fused_kernel_names_the_absorbed_op_and_line(tiny_tiles):
    # Large enough that the backend runs the tiled kernel rather than the ops one by one.
    a = np.arange(5000, dtype=np.int64)
    b = np.full(5000, 2, np.int64)
    b[4321] = -1
    static = dy2st.to_static(negative_power)
    graph = static.graph(a, b)
    assert "fused" in [op.name for op in graph.walk()]
    line = negative_power.__code__.co_firstlineno + 2
    with pytest.raises(Dy2stRuntimeError) as info:
        static(a, b)
    message = str(info.value)
    assert f"while executing power(i64[5000], i64[5000]) (test_fused.py:{line}) in fused_0: ValueError: " in message
    assert "Integers to negative integer powers are not allowed" in message
    assert info.value.loc.lineno == line
    assert "d = np.power(c, b)" in message


def layernorm(x, gain, bias):
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5) * gain + bias


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def row_norms(x):
    return np.sqrt(np.sum(x * x, axis=-1)), np.min(x + 1.0, axis=-1, keepdims=True)


@pytest.mark.parametrize("shape", [(9,), (7, 5), (2, 5, 6), (3, 20)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_reduction_groups_are_bit_identical(tiny_tiles, shape, dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(dtype)
    gain = rng.standard_normal(shape[-1]).astype(dtype)
    bias = rng.standard_normal(shape[-1]).astype(dtype)
    for fn, args in ((layernorm, (x, gain, bias)), (softmax, (x,)), (row_norms, (x,))):
        plain, fused = unfused_and_fused(fn, *args)
        assert_bit_identical(fused, plain)
        eager = fn(*args)
        assert_bit_identical(fused, eager if isinstance(eager, tuple) else (eager,))


def scaled_outer_rows(C, a, b):
    for i in range(C.shape[0]):
        C[:i, :] += 1.5 * np.outer(a[:i], b)  # a group of a new (data-dependent) shape each iteration
    return C


def test_a_group_whose_shape_changes_every_iteration_runs_op_by_op_until_a_shape_comes_back():
    rng = np.random.default_rng(3)
    C, a, b = rng.random((40, 300)), rng.random(40), rng.random(300)
    static = dy2st.to_static(scaled_outer_rows)
    graph = static.graph(C.copy(), a, b)
    (op,) = [op for op in graph.walk() if op.name == "fused"]
    kernel = fused_runtime.build_fused_kernel(op)
    for _ in range(3):
        expected = scaled_outer_rows(C.copy(), a, b)
        np.testing.assert_array_equal(static(C.copy(), a, b), expected)
    inputs = (np.ones((5, 1)), np.ones((1, 300)))
    assert kernel._sized_kernel(inputs) is None  # the first time: op by op
    assert kernel._sized_kernel(inputs) is not None  # it came back: a tile plan
    for rows in range(6, 6 + 2 * fused_runtime._MAX_SIZED_KERNELS):
        twice = (np.ones((rows, 1)), np.ones((1, 300)))
        kernel._sized_kernel(twice), kernel._sized_kernel(twice)
    assert len(kernel.sized) == fused_runtime._MAX_SIZED_KERNELS  # then no more plans, none dropped
    np.testing.assert_array_equal(kernel(*inputs), 1.5 * np.outer(np.ones(5), np.ones(300)))


def masked_chain(x, y):
    a = x[x > 0]
    b = y[y > 0]
    return (a * 2.0 + b) * 3.0  # a group of data-dependent size over vectors: the generated entry


def test_a_small_vector_group_of_symbolic_size_runs_inline_and_names_the_users_line():
    static = dy2st.to_static(masked_chain)
    x = np.array([1.0, 2.0, -1.0])
    np.testing.assert_array_equal(static(x, x), masked_chain(x, x))
    (op,) = [op for op in static.graph(x, x).walk() if op.name == "fused"]
    kernel = fused_runtime.build_fused_kernel(op)
    assert kernel.entry is not kernel and "def entry(" in kernel.program.source
    with pytest.raises(Dy2stRuntimeError, match=r"test_fused.py:\d+.*could not be broadcast") as raised:
        static(x, np.array([1.0, 2.0, 3.0]))
    assert isinstance(raised.value, ValueError)


def test_a_group_of_one_tile_runs_through_its_generated_entry_with_every_out_form():
    x = np.random.default_rng(6).standard_normal(3000)  # one tile, above the size run op by op
    expected = two_results(x)
    kernel = fused_kernel_of(two_results, x)
    assert kernel.entry is not kernel and kernel.split.count == 1
    fresh = kernel.entry(x)
    assert_bit_identical(fresh, expected)
    y, z = np.empty_like(x), np.empty_like(x)
    result = kernel.entry(x, out=(y, z))
    assert result[0] is y and result[1] is z
    assert_bit_identical((y, z), expected)
    x_copy = x.copy()  # an output that is also an input the group reads after writing another
    result = kernel.entry(x_copy, out=(y, x_copy))
    assert result[1] is x_copy
    assert_bit_identical((y, x_copy), expected)
    shifted = np.concatenate([x, [0.5]])  # an output overlapping an input elsewhere: staged
    kernel.entry(shifted[1:], out=(y, shifted[:-1]), out_may_overlap=True)
    assert_bit_identical((shifted[:-1],), (two_results(np.concatenate([x, [0.5]])[1:])[1],))


# --- np.where in fused groups ----------------------------------------------------------------------
SPECIAL_FLOATS = [np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0]


def special_values(dtype, shape, seed):
    """Values of ``dtype`` with NaN, inf and signed zeros among them (for floats)."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.choice(np.array(SPECIAL_FLOATS, dtype), shape)
    if np.dtype(dtype).kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 100, shape).astype(dtype)


def select_chain(z, x, y):
    """A select between arithmetic, and one more select on its result (a chain, two masks)."""
    picked = np.where(z > 0.5, x, y)
    return np.where(z == 0, picked, x), picked


DTYPE_MIXES = [
    (np.float32, np.float32),
    (np.float64, np.float64),
    (np.float32, np.float64),
    (np.float32, np.int64),
    (np.int8, np.uint8),
    (np.int64, np.int64),
    (np.uint16, np.int32),
    (np.bool_, np.bool_),
    (np.bool_, np.float32),
]


@pytest.mark.parametrize(("x_dtype", "y_dtype"), DTYPE_MIXES)
def test_where_in_a_group_is_bit_identical_for_every_dtype_mix(tiny_tiles, x_dtype, y_dtype):
    z = special_values(np.float32, (5, 9), 0)
    x, y = special_values(x_dtype, (5, 9), 1), special_values(y_dtype, (5, 9), 2)
    plain, fused = unfused_and_fused(select_chain, z, x, y, member="where")
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, select_chain(z, x, y))


def select_broadcast(z, x, y):
    return np.where(z > 0, x, y) * 2


@pytest.mark.parametrize("tile", [7, 3, 1000])
@pytest.mark.parametrize(
    "shapes", [((5, 1), (1, 9), (9,)), ((5, 9), (9,), (5, 1)), ((9,), (5, 9), ()), ((), (5, 9), (5, 9))]
)
def test_where_broadcasts_its_condition_and_operands(monkeypatch, tile, shapes):
    monkeypatch.setattr(fused_runtime, "TILE_ELEMENTS", tile)
    z = special_values(np.float64, shapes[0], 3)
    x, y = special_values(np.float32, shapes[1], 4), special_values(np.float64, shapes[2], 5)
    plain, fused = unfused_and_fused(select_broadcast, z, x, y, member="where")
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, (select_broadcast(z, x, y),))


def select_literals(z, x):
    return (
        np.where(z > 0, x, -0.0) + 0.0,
        np.where(z < 0, np.inf, x) * 1,
        np.where(z != z, x, np.nan) - 0.0,
        np.where(z > 0, 0.0, x) + 0.0,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_with_python_number_operands_keeps_signed_zeros_nan_and_inf(tiny_tiles, dtype):
    z = special_values(dtype, (31,), 6)
    x = special_values(dtype, (31,), 7)
    plain, fused = unfused_and_fused(select_literals, z, x, member="where")
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, select_literals(z, x))


def select_wrapping_ints(z, a, u):
    return np.where(z > 0, a, 1000) + a, np.where(z > 0, u, -1) + u


def test_where_casts_python_ints_to_the_result_dtype_as_numpy_does(tiny_tiles):
    """``np.where(c, int8_array, 1000)`` is int8 with 1000 wrapped to -24 (NumPy casts unsafely),
    where ``np.copyto`` of the Python int would raise."""
    z = special_values(np.float32, (20,), 8)
    a, u = np.arange(20, dtype=np.int8), np.arange(20, dtype=np.uint8)
    plain, fused = unfused_and_fused(select_wrapping_ints, z, a, u, member="where")
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, select_wrapping_ints(z, a, u))


def select_into_x(z, y, x):
    return np.where(z > 0, x, y + 1.0)


def select_into_y(z, x, y):
    return np.where(z > 0, x + 1.0, y)


@pytest.mark.parametrize("tile", [7, 1000])
@pytest.mark.parametrize("fn", [select_into_x, select_into_y])
def test_an_out_buffer_that_is_an_operand_of_a_where_still_gives_numpys_result(monkeypatch, tile, fn):
    """The kernel fills ``out`` before it reads ``x`` and the condition: an ``out=`` that is one of
    them must not be overwritten before it is read (``y`` itself may be: it is read first). The
    group's inputs are the arguments in order; the last one is also ``out``."""
    monkeypatch.setattr(fused_runtime, "TILE_ELEMENTS", tile)
    rng = np.random.default_rng(9)
    inputs = [rng.standard_normal(30) for _ in range(3)]
    kernel = fused_kernel_of(fn, *inputs)
    expected = fn(*inputs)
    assert kernel(*inputs, out=inputs[2]) is inputs[2]
    assert inputs[2].tobytes() == expected.tobytes()


def relu_layer_gradient(x, w, b):
    h = np.maximum(x @ w + b, 0)
    return (h * h).mean()


def test_the_relu_adjoint_fused_with_where_matches_finite_differences():
    rng = np.random.default_rng(10)
    x, w, b = rng.standard_normal((64, 8)), rng.standard_normal((8, 8)), rng.standard_normal(8)
    x[0, :] = 0.0  # rows whose pre-activation is exactly the bias: ties only where b is 0
    grads = dy2st.grad(relu_layer_gradient, argnums=(1, 2))(x, w, b)
    for k, (grad, arg) in enumerate(zip(grads, (w, b))):
        numeric = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            step = np.zeros_like(arg)
            step[index] = 1e-6
            plus = [w + step, b] if k == 0 else [w, b + step]
            minus = [w - step, b] if k == 0 else [w, b - step]
            numeric[index] = (relu_layer_gradient(x, *plus) - relu_layer_gradient(x, *minus)) / 2e-6
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-7)


def test_a_group_with_where_runs_on_the_compiled_tier_and_matches_eager():
    """The compiled tier's loops take ufuncs only: a group with a select stays on the NumPy
    tier's tiled kernel there, and gives NumPy's bits."""
    pytest.importorskip("numba")
    z = special_values(np.float32, (300, 70), 11)
    g = special_values(np.float32, (300, 70), 12)
    static = dy2st.to_static(select_chain, backend="compiled")
    for _ in range(3):  # the tiered executor swaps compiled code in after the first calls
        assert_bit_identical(static(z, g, g * 2), select_chain(z, g, g * 2))
    graph = static.graph(z, g, g * 2)
    assert any(op.name == "fused" and not op.attrs.get("compiled_kernel") for op in graph.walk())


def relu_backward(z, g):
    return np.where(z > 0, g, np.where(z == 0, g * 0.5, 0.0))


def mixed_select(z, g, k):
    return np.where(z > 0, g, k) * 2


def test_selects_of_one_dtype_run_bitwise_and_mixed_dtypes_by_copying():
    """The ReLU adjoint's selects are integer ufuncs on bit views (a select with ``np.copyto``'s
    ``where=`` branches per element, about 9x slower on a random mask); a select that must cast
    an operand copies."""
    z = special_values(np.float32, (16,), 13)
    kernel = fused_kernel_of(relu_backward, z, z)
    assert "bitwise_and" in kernel.program.source and "copyto" not in kernel.program.source
    kernel = fused_kernel_of(mixed_select, z, z, np.arange(16))
    assert "copyto" in kernel.program.source and "bitwise" not in kernel.program.source


def where_on_carried_numbers(x, a, n):
    s, k = 0.5, 1000
    for _ in range(n):
        x = np.where(x > s, x, s) * 1.0
        a = np.where(a > 3, a, k) + 1
        s, k = s + 0.25, k + 1
    return x, a


def test_where_of_python_numbers_carried_by_a_loop_casts_as_numpy_does():
    """Loop-carried Python numbers are weak inputs of the group: ``s`` stays a Python float's
    promotion (float32 result), ``k`` an int wrapped into int8 as ``np.where`` wraps it."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal(50_000).astype(np.float32)
    a = rng.integers(-100, 100, 50_000).astype(np.int8)
    static = dy2st.to_static(where_on_carried_numbers)
    for _ in range(2):
        assert_bit_identical(static(x, a, np.array(3)), where_on_carried_numbers(x, a, np.array(3)))


def masked_softmax(x, mask):
    y = np.where(mask, x, -np.inf)
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_masked_softmax_fuses_the_select_with_its_row_reductions(tiny_tiles):
    rng = np.random.default_rng(15)
    x, mask = rng.standard_normal((9, 6)), rng.random((9, 6)) > 0.3
    plain, fused = unfused_and_fused(masked_softmax, x, mask, member="where")
    assert_bit_identical(fused, plain)
    assert_bit_identical(fused, (masked_softmax(x, mask),))


def select_then_add(x, y):
    return np.where(x > 0, x, y * 2.0) + 1.0


def test_where_in_a_group_of_symbolic_size_runs_small_vectors_inline_and_large_ones_tiled():
    static = dy2st.to_static(select_then_add, dynamic=True)
    rng = np.random.default_rng(16)
    for n in (10, 100, 5000, 70_000, 70_000, 70_001, 12):
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        assert_bit_identical((static(x, y),), (select_then_add(x, y),))
