"""Every script in examples/ runs to completion as a script (each checks itself against NumPy)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))


def test_the_foundation_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {"demo.py", "add_and_relu.py", "two_branch_model.py"} <= names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_exits_0(script, tmp_path):
    # From a scratch directory, so an example cannot depend on the working directory.
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{script.name} printed nothing"


def test_demo_shows_source_ir_and_checks():
    result = subprocess.run([sys.executable, str(EXAMPLES_DIR / "demo.py")], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "=== 1. transformed source" in out and "_dy2st.convert_call" in out
    assert "=== 2. IR before the passes" in out and "func @" in out
    assert "=== 3. IR after the passes" in out
    assert "converted == eager NumPy" in out
