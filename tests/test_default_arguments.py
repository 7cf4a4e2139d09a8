"""Default values that name globals, modules and functions (``eps=EPS``, ``dtype=np.float32``,
``mode=wrap``) convert: defaults are the original function's, evaluated where it was defined."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import dy2st

EPS = 1e-3


def wrap(v):
    return v - 1


def shifted(x, eps=EPS, dtype=np.float32, mode=wrap, *, scale=EPS * 2):
    return mode(x.astype(dtype) + eps) * scale


def test_defaults_naming_globals_modules_and_functions_match_eager():
    static = dy2st.to_static(shifted)
    x = np.arange(3.0)
    for args, kwargs in [((x,), {}), ((x, 0.5), {}), ((x,), {"dtype": np.float64, "scale": 3.0})]:
        expected, got = shifted(*args, **kwargs), static(*args, **kwargs)
        np.testing.assert_array_equal(got, expected)
        assert got.dtype == expected.dtype
    assert "def shifted(x, eps=EPS" in static.code


def test_dump_shows_such_a_function(tmp_path):
    script = tmp_path / "defaults_model.py"
    script.write_text("import numpy as np\nEPS = 1e-3\n\n\ndef f(x, eps=EPS, dtype=np.float32):\n    return x + eps\n")
    result = subprocess.run(
        [sys.executable, "-m", "dy2st", "dump", f"{script}::f", "--ir", "--arg", "x=f64[3]"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "add %x, 0.001" in result.stdout
