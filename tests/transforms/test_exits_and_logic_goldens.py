"""Golden tests of the early-exit and logic converters: transformed source compared exactly.

Each ``golden_exits/<case>.py`` holds one function; ``<case>.expected.py`` is the source that the
``returns``, ``break_continue``, ``logical`` and ``asserts`` converters make of it (only those, so
a change in another converter does not touch these files). Refresh after an intended change with
``pytest tests/transforms --update-goldens`` and review the diff. Every case also runs against
eager Python in ``tests/test_control_flow_exits.py`` and ``tests/test_logical.py``.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from dy2st.frontend.codegen import to_source
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import asserts, break_continue, logical, returns

GOLDEN_DIR = pathlib.Path(__file__).parent / "golden_exits"
CASES = sorted(p for p in GOLDEN_DIR.glob("*.py") if not p.name.endswith(".expected.py"))
CONVERTERS = (returns, break_continue, logical, asserts)  # in PIPELINE order


def load_function(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"golden_exits_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def convert(fn) -> str:
    module, _, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    for converter in CONVERTERS:
        module = converter.transform(module, ctx)
    return to_source(module)


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_transformed_source_matches_golden(case, request):
    got = convert(load_function(case))
    expected_path = case.with_name(case.stem + ".expected.py")
    if request.config.getoption("--update-goldens") or not expected_path.exists():
        expected_path.write_text(got)
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"wrote the missing golden {expected_path.name}; review it and rerun")
    assert got == expected_path.read_text()


@pytest.mark.parametrize("case", CASES, ids=[p.stem for p in CASES])
def test_the_output_compiles_and_has_no_exit_left_but_the_final_return(case):
    source = case.with_name(case.stem + ".expected.py").read_text()
    compile(source, case.name, "exec")
    lines = [line.strip() for line in source.splitlines()]
    assert not any(line in ("break", "continue") for line in lines)
    assert sum(line.startswith("return") for line in lines) <= 1
