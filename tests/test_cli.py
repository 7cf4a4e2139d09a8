"""The ``dy2st`` command line, run as users run it: ``python -m dy2st`` in a subprocess."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dy2st.cli import ArgumentMaker, UsageError, load_module, pipeline_pass_names

MODEL_SOURCE = """\
import numpy as np
import dy2st

W = np.ones((4, 4), np.float32)


def scale(v, k):
    return v * k


@dy2st.to_static
def model(x, k=2):
    y = x @ W
    return np.maximum(scale(y, k), 0)


def plain(pair, n):
    a, b = pair
    return a + b * n


def generator(x):
    yield x


def mismatch(x, y):
    return x + y


class Net:
    def forward(self, x):
        return x + 1
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "model.py").write_text(MODEL_SOURCE)
    return tmp_path


def run_cli(cwd, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dy2st", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_dump_prints_transformed_source(workdir):
    result = run_cli(workdir, "dump", "model.py::model")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def model(x, k=2):\n")
    assert "_dy2st.convert_call(scale)(y, k)" in result.stdout
    assert "//" not in result.stdout  # a single section has no header


def test_dump_plain_function_without_decorator(workdir):
    result = run_cli(workdir, "dump", "model.py::plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def plain(pair, n):")


def test_dump_source_of_a_method(workdir):
    result = run_cli(workdir, "dump", "model.py::Net.forward")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "def forward(self, x):\n    return x + 1\n"


def test_ir_before_passes_for_a_signature_with_locations(workdir):
    result = run_cli(workdir, "dump", "model.py::model", "--before", "--locs", "--arg", "x=float32[4]")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "func @model(%x: f32[4])"
    assert lines[1] == "    captures(%W: f32[4,4]) -> f32[4] {"
    assert lines[2].endswith(" = matmul %x, %W : f32[4]  # model.py:13")
    assert lines[3].endswith(", 2 : f32[4]  # model.py:8")  # the helper's own line
    assert lines[4].endswith(", 0 : f32[4]  # model.py:14")
    assert lines[-1] == "}"


def test_ir_of_nested_arguments_and_python_constant(workdir):
    result = run_cli(workdir, "dump", "model.py::plain", "--before", "--arg", "pair=(f32[3], f64[3])", "--arg", "n=3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("func @plain(%pair_0: f32[3], %pair_1: f64[3]) -> f64[3] {")
    assert "multiply %pair_1, 3 : f64[3]" in result.stdout


def test_zero_d_argument_and_python_constant_change_the_signature(workdir):
    result = run_cli(
        workdir, "dump", "model.py::plain", "--before", "--arg", "pair=[i64[], bool[2]]", "--arg", "n=True"
    )
    assert result.returncode == 0, result.stderr
    assert "func @plain(%pair_0: i64[], %pair_1: bool[2]) -> i64[2]" in result.stdout
    assert "True" in result.stdout


def test_optimized_ir_has_the_same_signature(workdir):
    result = run_cli(workdir, "dump", "model.py::plain", "--ir", "--arg", "pair=(f32[3], f64[3])", "--arg", "n=3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("func @plain(%pair_0: f32[3], %pair_1: f64[3]) -> f64[3] {")
    assert result.stdout.endswith("}\n")


def test_executor_and_source_sections_have_headers(workdir):
    result = run_cli(
        workdir, "dump", "model.py::model", "--source", "--ir", "--executor", "--arg", "x=f32[4]", "--arg", "k=3"
    )
    assert result.returncode == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith("// ----")]
    assert headers == [
        "// ---- transformed source of model",
        "// ---- IR after all passes",
        "// ---- generated executor",
    ]
    assert "def run(" in result.stdout


def test_passes_prints_the_ir_after_every_pass(workdir):
    names = pipeline_pass_names()
    result = run_cli(workdir, "dump", "model.py::model", "--passes", "--before", "--arg", "x=f32[4]")
    assert result.returncode == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith("// ----")]
    if names:
        expected = ["// ---- IR before passes"] + [f"// ---- IR after {n} " for n in names]
        assert [h if h == expected[0] else h[: h.index("(")] for h in headers] == expected
    else:  # only the IR before passes: a single section, printed without a header
        assert headers == []
        assert result.stdout.startswith("func @model(")


def test_after_a_named_pass(workdir):
    names = pipeline_pass_names()
    if not names:
        pytest.skip("the default pipeline has no passes yet")
    result = run_cli(workdir, "dump", "model.py::model", "--after", names[-1], "--arg", "x=f32[4]")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("func @model(%x: f32[4])")


def test_passes_subcommand_lists_the_pipeline(workdir):
    result = run_cli(workdir, "passes")
    assert result.returncode == 0
    names = pipeline_pass_names()
    expected = "".join(f"{i}. {n}\n" for i, n in enumerate(names, 1)) or "the default pipeline has no passes\n"
    assert result.stdout == expected


@pytest.mark.parametrize(
    "args, message",
    [
        (["dump", "missing.py::model"], "dy2st dump: error: no such file: missing.py\n"),
        (
            ["dump", "model.py::nothing"],
            "dy2st dump: error: model.py has no function 'nothing'; functions defined there: "
            "generator, mismatch, model, plain, scale\n",
        ),
        (
            ["dump", "model.py"],
            "dy2st dump: error: expected FILE::FUNC (for example model.py::model), got 'model.py'\n",
        ),
        (["dump", "model.py::model", "--ir"], "dy2st dump: error: missing --arg for parameter 'x' of model(x, k=2)\n"),
        (
            ["dump", "model.py::model", "--ir", "--arg", "x=f32[4]", "--arg", "z=1"],
            "dy2st dump: error: model(x, k=2) has no parameter 'z'\n",
        ),
        (
            ["dump", "model.py::model", "--ir", "--arg", "x"],
            "dy2st dump: error: malformed --arg 'x': expected NAME=VALUE, for example x=f32[512]\n",
        ),
        (
            ["dump", "model.py::model", "--arg", "x=f32[4]"],
            "dy2st dump: error: --arg needs an IR option: --ir, --before, --after, --passes or --executor\n",
        ),
        (
            ["dump", "model.py::Net.forward", "--ir", "--arg", "x=f32[4]"],
            "dy2st dump: error: Net.forward is a method: its graph needs an instance, so only its "
            "transformed source can be dumped\n",
        ),
        (["dump", "model.py::model", "--after", "no-such-pass", "--arg", "x=f32[4]"], None),
    ],
)
def test_usage_errors_exit_2_with_a_message(workdir, args, message):
    result = run_cli(workdir, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    if message is None:
        assert result.stderr.startswith("dy2st dump: error: unknown pass 'no-such-pass'; the default pipeline runs: ")
    else:
        assert result.stderr == message


def test_malformed_array_type_is_a_usage_error(workdir):
    result = run_cli(workdir, "dump", "model.py::model", "--ir", "--arg", "x=f33[4]")
    assert result.returncode == 2
    assert result.stderr.startswith("dy2st dump: error: malformed --arg 'x=f33[4]': unknown dtype 'f33'")


def test_argparse_errors_exit_2(workdir):
    assert run_cli(workdir).returncode == 2
    assert run_cli(workdir, "dump", "model.py::model", "--no-such-option").returncode == 2


def test_conversion_error_exits_1_naming_the_users_line(workdir):
    result = run_cli(workdir, "dump", "model.py::generator")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[:2] == [
        "model.py:23:5: error: 'yield' (generator functions) cannot be converted",
        "        yield x",
    ]


def test_graph_build_error_exits_1_naming_the_users_line(workdir):
    result = run_cli(workdir, "dump", "model.py::mismatch", "--ir", "--arg", "x=f32[3]", "--arg", "y=f32[4]")
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("model.py:27:")
    assert "add(f32[3], f32[4])" in first


def test_import_error_in_the_users_file_exits_1(tmp_path):
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n")
    result = run_cli(tmp_path, "dump", "broken.py::f")
    assert result.returncode == 1
    assert result.stderr.startswith("broken.py:1:1: error: importing broken.py raised RuntimeError: boom\n")


def test_import_error_is_one_error_at_the_line_that_raised(tmp_path):
    (tmp_path / "broken.py").write_text(
        textwrap.dedent("""\
        import numpy as np

        def normalise(v):
            return v / np.linalg.norm(v, ord="fro")

        UNIT = normalise(np.ones(3))

        def f(x):
            return x * UNIT
    """)
    )
    result = run_cli(tmp_path, "dump", "broken.py::f")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("broken.py:4:16: error: importing broken.py raised ValueError: ")
    assert lines[1] == '        return v / np.linalg.norm(v, ord="fro")'
    assert lines[3] == "note: dy2st dump imports the file to find the function, so its top-level code runs"
    assert len(lines) == 4


def test_syntax_error_in_the_users_file_names_its_line(tmp_path):
    (tmp_path / "typo.py").write_text("def f(x):\n    return x +\n")
    result = run_cli(tmp_path, "dump", "typo.py::f")
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        "typo.py:2:15: error: importing typo.py raised SyntaxError: invalid syntax",
        "        return x +",
    ]


def test_a_script_exiting_at_import_is_reported(tmp_path):
    (tmp_path / "script.py").write_text("import sys\n\ndef f(x):\n    return x\n\nsys.exit(3)\n")
    result = run_cli(tmp_path, "dump", "script.py::f")
    assert result.returncode == 1
    assert result.stderr.startswith("script.py:6:1: error: importing script.py raised SystemExit: 3\n")


def test_what_the_module_prints_at_import_goes_to_stderr(tmp_path):
    (tmp_path / "chatty.py").write_text(
        textwrap.dedent("""\
        import numpy as np

        print("loading weights")

        def f(x):
            return x + 1

        if __name__ == "__main__":
            print("running as a script")
    """)
    )
    result = run_cli(tmp_path, "dump", "chatty.py::f", "--ir", "--arg", "x=f32[2]")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("func @f(%x: f32[2]) -> f32[2] {")
    assert "loading weights" not in result.stdout
    assert result.stderr == "loading weights\n"


def test_huge_arrays_are_stand_ins_that_allocate_nothing(tmp_path):
    (tmp_path / "update.py").write_text(
        textwrap.dedent("""\
        def update(x, row):
            x += 1
            x[0] = row
            return x * 2
    """)
    )
    result = run_cli(
        tmp_path,
        "dump",
        "update.py::update",
        "--ir",
        "--executor",
        "--memory",
        "--arg",
        "x=f32[200000,200000]",  # 149 GiB if it were allocated
        "--arg",
        "row=f32[200000]",
    )
    assert result.returncode == 0, result.stderr
    assert "func @update(%x: f32[200000,200000], %row: f32[200000])" in result.stdout
    headers = [line for line in result.stdout.splitlines() if line.startswith("// ----")]
    assert headers == ["// ---- IR after all passes", "// ---- generated executor", "// ---- memory"]


def test_dynamic_prints_symbolic_sizes(tmp_path):
    (tmp_path / "diff.py").write_text("def diff(x, y):\n    z = x * 2.0 + y\n    return z[1:] - z[:-1]\n")
    result = run_cli(tmp_path, "dump", "diff.py::diff", "--ir", "--dynamic", "--arg", "x=f64[8]", "--arg", "y=f64[8]")
    assert result.returncode == 0, result.stderr
    assert "func @diff(%x: f64[n0], %y: f64[n0]) -> f64[n0 - 1]" in result.stdout
    executor = run_cli(
        tmp_path, "dump", "diff.py::diff", "--executor", "--dynamic", "--arg", "x=f64[8]", "--arg", "y=f64[8]"
    )
    assert executor.returncode == 0, executor.stderr


def test_help_is_complete_with_examples(workdir):
    top = run_cli(workdir, "--help")
    assert top.returncode == 0
    for word in ("dump", "passes", "examples:"):
        assert word in top.stdout
    dump = run_cli(workdir, "dump", "--help").stdout
    for option in (
        "--arg",
        "--ir",
        "--before",
        "--after",
        "--passes",
        "--executor",
        "--locs",
        "--dynamic",
        "examples:",
    ):
        assert option in dump
    assert "FILE is imported to find FUNC: its top-level code runs" in dump
    assert "exit codes:" in dump
    assert "dy2st passes" in run_cli(workdir, "passes", "--help").stdout


def test_sibling_modules_of_the_file_are_importable(tmp_path):
    (tmp_path / "helpers.py").write_text("def double(v):\n    return v * 2\n")
    (tmp_path / "main.py").write_text(
        textwrap.dedent("""\
        from helpers import double

        def f(x):
            return double(x) + 1
    """)
    )
    result = run_cli(tmp_path, "dump", "main.py::f", "--before", "--arg", "x=i64[2]")
    assert result.returncode == 0, result.stderr
    assert "multiply %x, 2 : i64[2]" in result.stdout


# --- the signature parser, in process -------------------------------------------------------
def test_argument_maker_builds_arrays_and_literals():
    maker = ArgumentMaker()
    name, x = maker.parse("x=float32[2,3]")
    assert name == "x" and x.shape == (2, 3) and x.dtype.name == "float32"
    _, flag = maker.parse("flag=int64[]")
    assert flag.shape == () and flag.dtype.name == "int64" and type(flag).__name__ == "ndarray"
    _, mask = maker.parse("m=bool[5]")
    assert mask.dtype.name == "bool"
    assert maker.parse("n=-3") == ("n", -3)
    assert maker.parse("act='relu'") == ("act", "relu")
    _, tree = maker.parse("t={'w': f32[2], 'b': (i64[1], None)}")
    assert tree["w"].dtype.name == "float32" and tree["b"][0].dtype.name == "int64" and tree["b"][1] is None


@pytest.mark.parametrize("spec", ["x=f64[8]", "x=int8[3,4]", "x=bool[]", "x=c64[2,2]"])
def test_array_arguments_are_read_only_stand_ins(spec):
    _, x = ArgumentMaker().parse(spec)
    assert type(x) is np.ndarray
    assert all(stride == 0 for stride in x.strides)  # one element, whatever the shape
    assert not x.flags.writeable  # a write would raise, not change every element


def test_a_huge_array_argument_allocates_nothing():
    _, x = ArgumentMaker().parse("x=f32[200000,200000]")
    assert x.shape == (200000, 200000) and x.dtype == np.float32
    assert x.base is not None and x.base.nbytes == 4


@pytest.mark.parametrize("spec", ["x=f32[-1]", "x=f32[2.5]", "x=np.float32[3]", "x=f32[", "x=foo(1)", "=3"])
def test_argument_maker_rejects_malformed_specs(spec):
    with pytest.raises(UsageError, match="malformed --arg"):
        ArgumentMaker().parse(spec)


def test_console_script_is_installed(workdir):
    script = pathlib.Path(sys.executable).with_name("dy2st")
    if not script.exists():
        pytest.skip("dy2st is not installed next to this interpreter")
    result = subprocess.run(
        [str(script), "dump", "model.py::model"], cwd=workdir, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def model(x, k=2):")


def test_a_file_named_like_a_library_module_does_not_replace_it(tmp_path, monkeypatch):
    import json

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    (tmp_path / "json.py").write_text("def f(x):\n    return x + 1\n")
    module = load_module(str(tmp_path / "json.py"))
    assert sys.modules["json"] is json
    assert module.f.__module__ == "_dy2st_target_json"
