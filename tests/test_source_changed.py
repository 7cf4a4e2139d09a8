"""A module's file edited after it was imported: the live function runs the old code, so converting
the new text would give other results. dy2st compares the source it finds with the function's code
object and refuses with a ConversionError that says so; unchanged files of every shape convert."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import dy2st
from dy2st.errors import ConversionError
from eager_parity import assert_like_eager

MODEL = """\
import numpy as np


def scale(x):
    return x * 2.0


def model(x):
    if x.sum() > 0:
        return scale(x) + 1.0
    return -x
"""


@pytest.fixture
def load(tmp_path, monkeypatch):
    """Write a module to a file and import it the way Python imports a module from a file."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def load(name: str, source: str):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, module)
        spec.loader.exec_module(module)
        return module, path

    return load


def test_a_function_whose_file_changed_after_import_is_refused(load):
    module, path = load("edited_model", MODEL)
    path.write_text(MODEL.replace("return -x", "return -x * 10.0"))
    static = dy2st.to_static(module.model)
    with pytest.raises(ConversionError) as info:
        static(np.ones(3))
    error = info.value
    assert error.loc.filename == str(path) and error.loc.lineno == 8
    assert error.message == (
        "edited_model.py changed since module 'edited_model' was imported: the source of 'model' found "
        "there is not the code that runs"
    )
    assert "importlib.reload(edited_model)" in error.note


def test_after_a_reload_the_new_code_converts(load):
    module, path = load("reloaded_model", MODEL)
    path.write_text(MODEL.replace("return -x", "return -x * 10.0"))
    module = importlib.reload(module)
    assert_like_eager(module.model, np.full(3, -1.0))
    np.testing.assert_array_equal(dy2st.to_static(module.model)(np.full(3, -1.0)), np.full(3, 10.0))


def test_code_replaced_in_place_by_a_reloader_is_converted_anew(load):
    # IPython's autoreload recompiles the edited file and assigns each function its new __code__.
    module, path = load("autoreloaded_model", MODEL)
    x = np.full(3, -1.0)
    np.testing.assert_array_equal(dy2st.to_static(module.model)(x), -x)
    path.write_text(MODEL.replace("return -x", "return -x * 10.0"))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    module.model.__code__ = namespace["model"].__code__
    assert_like_eager(module.model, x)


def test_a_helper_whose_file_changed_is_refused_at_the_call(load):
    helpers, path = load("edited_helpers", "def double(v):\n    return v * 2.0\n")
    main, _ = load("uses_helpers", "from edited_helpers import double\n\ndef f(x):\n    return double(x) + 1\n")
    path.write_text("def double(v):\n    return v * 3.0 + 0.0\n")
    with pytest.raises(ConversionError, match="edited_helpers.py changed since module 'edited_helpers' was imported"):
        dy2st.to_static(main.f)(np.ones(2))


def test_lines_inserted_above_the_function_are_a_change(load):
    module, path = load("shifted_model", MODEL)
    path.write_text(MODEL.replace("import numpy as np\n", "import numpy as np\n\nEPS = 1e-9\n"))
    with pytest.raises(ConversionError, match="changed since module 'shifted_model' was imported"):
        dy2st.to_static(module.model)(np.ones(3))


def test_a_file_that_no_longer_parses_is_a_change(load):
    module, path = load("broken_model", MODEL)
    path.write_text(MODEL.replace("return -x", "return -x +"))
    with pytest.raises(ConversionError, match="broken_model.py changed since module 'broken_model' was imported"):
        dy2st.to_static(module.model)(np.ones(3))


def test_a_lambda_whose_file_changed_is_refused(load):
    module, path = load("edited_lambda", "import numpy as np\n\nact = lambda x: np.tanh(x) * 2.0\n")
    path.write_text("import numpy as np\n\nact = lambda x: np.tanh(x) * 3.0 + 1.0\n")
    with pytest.raises(ConversionError, match="edited_lambda.py changed since module 'edited_lambda' was imported"):
        dy2st.to_static(module.act)(np.ones(2))


def test_edits_below_the_function_do_not_matter(load):
    module, path = load("appended_model", MODEL)
    path.write_text(MODEL + "\n\ndef later(x):\n    return x\n")
    assert_like_eager(module.model, np.ones(3))


UNCHANGED = """\
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

RNG_SEEDS = {"a": 1}


def closure_maker(k):
    def scaled(x):
        return np.tanh(x) * k + math.pi

    return scaled


class Base:
    def forward(self, x):
        return x + 1.0


class Net(Base):
    def __init__(self):
        self.__bias = 0.5

    def forward(self, x):
        y = super().forward(x)
        if y.sum() > 0:
            y = y + self.__bias
        return y


def factory():
    class Inner:
        def __call__(self, x):
            return x * 2.0

    return Inner()


def with_defaults(x, key=lambda v: v * 2.0, *, fraction=Fraction(1, 4)):
    half = float(Fraction.from_float(0.5))
    return key(x) * half + RNG_SEEDS.get("a") * float(fraction)
"""


def test_unchanged_files_convert_whatever_the_scope(load):
    module, _ = load("unchanged_shapes", UNCHANGED)
    x = np.linspace(-1.0, 1.0, 4)
    assert_like_eager(module.closure_maker(3.0), x)
    assert_like_eager(module.Net().forward, x)  # super() and a private name
    assert_like_eager(module.factory(), x)
    assert_like_eager(module.with_defaults, x)
