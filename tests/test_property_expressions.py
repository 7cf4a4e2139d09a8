"""Property: random elementwise/broadcast/reduction expressions convert to the same result as eager NumPy.

Hypothesis composes an expression over up to three inputs of broadcast-compatible shapes and dtypes
(float32/float64/int64), Python and NumPy scalars, operators, ufuncs, ``np.where`` and reductions.
The expression becomes the body of a function in a real module file (dy2st reads source code), which
is converted and compared to eager NumPy: same shape, same dtype, values within rounding. Cases
where eager NumPy raises or warns (overflow, division by zero, invalid values) are discarded.
"""

from __future__ import annotations

import importlib.util
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dy2st

DTYPES = ["float32", "float64", "int64"]
INPUT_NAMES = ["a", "b", "c"]

UNARY = [
    "-{}",
    "abs({})",
    "np.exp({})",
    "np.tanh({})",
    "np.sin({})",
    "np.sqrt(np.abs({}))",
    "np.square({})",
    "np.negative({})",
    "np.log1p(np.abs({}))",
    "np.floor({})",
    "({} ** 2)",
    "(np.abs({}) ** 0.5)",
    "np.clip({}, -1, 1.5)",
    "np.round({}, 1)",
    "np.float32({})",
]
BINARY = [
    "({} + {})",
    "({} - {})",
    "({} * {})",
    "({} / {})",
    "({} // {})",
    "({} % {})",
    "np.maximum({}, {})",
    "np.minimum({}, {})",
    "np.where({0} > {1}, {0}, {1})",
    "np.where({0} < 0, {1}, 1.5)",
]
REDUCTIONS = ["sum", "mean", "max", "min"]
SCALARS = ["2", "-1", "0.5", "3.0", "np.float32(1.5)", "np.int64(2)", "True"]

_module_counter = itertools.count()


@st.composite
def input_shapes(draw) -> list[tuple[int, ...]]:
    """Shapes that broadcast together: suffixes of one base shape with some dimensions set to 1."""
    base = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    shapes = []
    for _ in INPUT_NAMES:
        rank = draw(st.integers(0, len(base)))
        suffix = base[len(base) - rank :]
        shapes.append(tuple(1 if draw(st.booleans()) and draw(st.booleans()) else d for d in suffix))
    return shapes


# Views and shape changes; the second property mixes them in (eager errors, e.g. shapes that no
# longer broadcast, are discarded like any other).
VIEWS = [
    "({}).T",
    "({})[::-1]",
    "({})[..., None]",
    "np.expand_dims({}, 0)",
    "np.squeeze({})",
    "np.sum({}, axis=0)",
    "({})[1:]",
    "np.broadcast_to({}, (2, 3, 4))",
    "np.concatenate([{0}, {0}], axis=-1)",
    "np.add.outer({0}, np.sum({0}, axis=0))",
    "np.maximum.outer({0}, 2)",
]


def expressions(depth: int, unary_forms: tuple[str, ...] = tuple(UNARY)) -> st.SearchStrategy[str]:
    leaves = st.sampled_from(INPUT_NAMES) | st.sampled_from(SCALARS)
    if depth == 0:
        return leaves
    inner = expressions(depth - 1, unary_forms)
    unary = st.tuples(st.sampled_from(unary_forms), inner).map(lambda t: t[0].format(t[1]))
    binary = st.tuples(st.sampled_from(BINARY), inner, inner).map(lambda t: t[0].format(t[1], t[2]))
    # keepdims=True keeps the result broadcastable against the other operands.
    reduction = st.tuples(st.sampled_from(REDUCTIONS), st.sampled_from(["-1", "None"]), inner).map(
        lambda t: f"np.{t[0]}({t[2]}, axis={t[1]}, keepdims=True)"
    )
    return st.one_of(leaves, unary, binary, binary, reduction)


def make_inputs(shapes, dtypes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in zip(shapes, dtypes):
        if dtype == "int64":
            arrays.append(rng.integers(-5, 6, size=shape).astype(dtype))
        else:
            arrays.append(np.asarray(rng.uniform(-2, 2, size=shape)).astype(dtype))
    return arrays


def load_function(directory, expression: str):
    """Write ``def f(a, b, c): return <expression>`` to a fresh module file and import it."""
    name = f"random_expression_{next(_module_counter)}"
    path = directory / f"{name}.py"
    path.write_text(f"import numpy as np\n\n\ndef f({', '.join(INPUT_NAMES)}):\n    return {expression}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # e.g. (2 / 2)[::-1], discarded when it runs
        spec.loader.exec_module(module)
    return module.f


def eager_or_none(fn, inputs):
    """The eager result, or None if NumPy raises or warns (overflow, invalid, division by zero)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            with np.errstate(all="raise"):
                return np.asarray(fn(*(x.copy() for x in inputs)))
        except (ArithmeticError, ValueError, TypeError, IndexError, AttributeError, RuntimeWarning):
            return None


def assert_matches(actual, expected, source: str) -> None:
    actual = np.asarray(actual)
    assert actual.shape == expected.shape, f"{source}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{source}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.kind == "f":
        # Fused or blocked evaluation may reorder a reduction's additions: allow a few ulp of the scale.
        resolution = np.finfo(expected.dtype).resolution
        scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
        np.testing.assert_allclose(
            actual, expected, rtol=100 * resolution, atol=100 * resolution * scale, err_msg=source
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=source)


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("expressions")


@settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    expression=expressions(3),
    shapes=input_shapes(),
    dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_random_expression_matches_eager_numpy(module_dir, expression, shapes, dtypes, seed):
    inputs = make_inputs(shapes, dtypes, seed)
    fn = load_function(module_dir, expression)
    expected = eager_or_none(fn, inputs)
    assume(expected is not None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        actual = dy2st.to_static(fn)(*inputs)
    assert_matches(actual, expected, f"{expression} with {list(zip(shapes, dtypes))}")


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    expression=expressions(3, tuple(UNARY + VIEWS + VIEWS)),
    shapes=input_shapes(),
    dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_random_expression_with_views_matches_eager_numpy(module_dir, expression, shapes, dtypes, seed):
    inputs = make_inputs(shapes, dtypes, seed)
    fn = load_function(module_dir, expression)
    expected = eager_or_none(fn, inputs)
    assume(expected is not None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        actual = dy2st.to_static(fn)(*inputs)
    assert_matches(actual, expected, f"{expression} with {list(zip(shapes, dtypes))}")
