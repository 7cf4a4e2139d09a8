"""Byte-identical functions at the same lines of two files: each error names its own file."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import dy2st
from dy2st.errors import Dy2stError

SOURCE = "import numpy as np\n\n\ndef f(x):\n    return x @ np.ones((5, 2))\n"


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def test_each_file_is_named_in_its_own_errors(tmp_path):
    first, second = tmp_path / "first_model.py", tmp_path / "second_model.py"
    first.write_text(SOURCE)
    second.write_text(SOURCE)
    for path in (first, second):
        with pytest.raises(Dy2stError) as caught:
            dy2st.to_static(load(path))(np.ones(3))
        assert f"{path.name}:5" in str(caught.value)
