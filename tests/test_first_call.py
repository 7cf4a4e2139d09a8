"""What the first-call shortcuts rely on: they change how fast a function converts, never the result.

* ``run_pipeline`` skips a converter when the tree has none of the node types it rewrites; on every
  golden function (and on functions where one converter creates the nodes a later one needs) the
  transformed source is exactly that of running every converter.
* ``ConvertedCode.source`` is generated only when read, and is then the exact transformed source.
* The parser reads the source through ``linecache`` and parses it at the user's line numbers, so
  errors still name the user's file and line, also for methods and nested functions.
"""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import gast
import numpy as np
import pytest

import dy2st
from dy2st.errors import GraphBuildError
from dy2st.frontend import convert as convert_module
from dy2st.frontend.codegen import to_source
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import PIPELINE, node_types, run_pipeline

TRANSFORMS = pathlib.Path(__file__).parent / "transforms"
GOLDEN_CASES = sorted(
    p for d in ("golden", "golden_exits") for p in (TRANSFORMS / d).glob("*.py") if not p.name.endswith(".expected.py")
)


def _load_function(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"first_call_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions = [v for v in vars(module).values() if callable(v) and getattr(v, "__module__", "") == module.__name__]
    assert len(functions) == 1, f"{path.name} must define exactly one function"
    return functions[0]


def _transformed_source(fn, skip_absent: bool) -> str:
    module, _, info = parse_function(fn)
    return to_source(run_pipeline(module, Context(info, Namer.for_tree(module)), skip_absent=skip_absent))


def _every_converter_source(fn) -> str:
    module, _, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    for converter in PIPELINE:
        module = converter.transform(module, ctx)
    return to_source(module)


# --- functions whose conversion depends on nodes an earlier converter creates -----------------------
def early_return_only(x):
    if x.sum() > 0:
        return x * 2
    return -x


def return_inside_loop(x, n):
    i = 0
    while i < n:
        if x[i] > 5:
            return x[i]
        i += 1
    return x[0]


def break_in_for(x):
    s = x[0] * 0
    for i in range(4):
        if x[i] < 0:
            break
        s = s + x[i]
    return s


def straight_line(x):
    return np.maximum(x * 2 + 1, 0)


def ternary_and_assert(x):
    assert x.ndim == 1, "a vector"
    return x if x.sum() > 0 else -x


CREATING_FUNCTIONS = [early_return_only, return_inside_loop, break_in_for, straight_line, ternary_and_assert]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[f"{p.parent.name}/{p.stem}" for p in GOLDEN_CASES])
def test_skipping_absent_converters_keeps_golden_source(case):
    fn = _load_function(case)
    assert _transformed_source(fn, skip_absent=True) == _every_converter_source(fn)


@pytest.mark.parametrize("fn", CREATING_FUNCTIONS, ids=lambda f: f.__name__)
def test_skipping_follows_nodes_created_by_earlier_converters(fn):
    assert _transformed_source(fn, skip_absent=True) == _every_converter_source(fn)
    assert _transformed_source(fn, skip_absent=False) == _every_converter_source(fn)


@pytest.mark.parametrize(
    "fn, args",
    [
        (early_return_only, (np.arange(4.0),)),
        (early_return_only, (-np.arange(4.0),)),
        (return_inside_loop, (np.arange(10.0), np.array(10))),
        (break_in_for, (np.array([1.0, 2.0, -1.0, 4.0]),)),
        (straight_line, (np.linspace(-1, 1, 5, dtype=np.float32),)),
        (ternary_and_assert, (np.arange(3.0) - 2,)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_converted_functions_match_eager_numpy(fn, args):
    got, want = dy2st.to_static(fn)(*args), fn(*args)
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_node_types_sees_every_node_including_string_lists():
    def uses_global_names(x):
        global SOME_NAME  # noqa: F824 - only parsed, never run
        return [y + 1 for y in x] if x else None

    module, _, _ = parse_function(uses_global_names)
    assert node_types(module) == {type(node) for node in gast.walk(module)}


def test_code_is_generated_lazily_and_equals_the_transformed_source():
    def scaled(x):
        if x.sum() > 0:
            y = x * 2
        else:
            y = x - 1
        return y

    static = dy2st.to_static(scaled)
    x = np.arange(3.0)
    np.testing.assert_array_equal(static(x), scaled(x))
    converted = convert_module.convert_code(scaled)
    assert "source" not in vars(converted), "running must not generate the source text"
    assert static.code == _every_converter_source(scaled)
    assert "_dy2st.convert_ifelse(" in static.code


class Scaler:
    def __init__(self, factor):
        self.factor = factor

    @dy2st.to_static
    def apply(self, x):
        y = x * self.factor
        return y[np.array([5])]  # out of bounds for 3 elements: fails while building


def test_method_build_error_names_the_users_line_and_column():
    with pytest.raises(GraphBuildError) as info:
        Scaler(2.0).apply(np.arange(3.0))
    line = Scaler.apply.fn.__code__.co_firstlineno + 3
    # Column 16: the method body is indented 8, and ``y[...]`` starts after ``return ``.
    assert f"test_first_call.py:{line}:16: error: gather(f64[3]): index 5 is out of bounds" in str(info.value)
    assert "return y[np.array([5])]" in str(info.value)


def test_import_leaves_numpy_random_and_astor_unloaded():
    """``import dy2st`` stays lean; ``np.random`` calls are still refused (tests/ops)."""
    script = "import sys, dy2st; print(sorted(m for m in ('numpy.random', 'astor') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
