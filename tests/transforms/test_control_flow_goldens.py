"""Golden tests of the if/else and loop converters: transformed source compared exactly.

Each ``golden/<case>.py`` holds one function; ``golden/<case>.expected.py`` is the source the
static analysis plus the ``ifelse`` and ``loops`` converters make of it (only those, so a change
in another converter does not touch these files). Refresh after an intended change with
``pytest tests/transforms --update-goldens`` and review the diff.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from dy2st.frontend.codegen import to_source
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import ifelse, loops

GOLDEN_DIR = pathlib.Path(__file__).parent / "golden"
CASES = sorted(p for p in GOLDEN_DIR.glob("*.py") if not p.name.endswith(".expected.py"))


def load_function(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"golden_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    functions = [v for v in vars(module).values() if callable(v) and getattr(v, "__module__", "") == module.__name__]
    assert len(functions) == 1, f"{path.name} must define exactly one function"
    return functions[0]


def convert(fn) -> str:
    module, _, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    for converter in (ifelse, loops):
        module = converter.transform(module, ctx)
    return to_source(module)


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_transformed_source_matches_golden(case, request):
    fn = load_function(case)
    got = convert(fn)
    expected_path = case.with_name(case.stem + ".expected.py")
    if request.config.getoption("--update-goldens") or not expected_path.exists():
        expected_path.write_text(got)
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"wrote the missing golden {expected_path.name}; review it and rerun")
    assert got == expected_path.read_text()


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_conversion_is_deterministic(case):
    fn = load_function(case)
    assert convert(fn) == convert(fn)


def test_every_golden_output_compiles():
    for case in CASES:
        compile(case.with_name(case.stem + ".expected.py").read_text(), case.name, "exec")
