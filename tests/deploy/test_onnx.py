"""dy2st.export_onnx: the examples and the W1-W3 workloads exported and run in onnxruntime give
eager NumPy's results; an op without an ONNX form names itself and the user's line."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st
from example_modules import EXAMPLE_CALLS, load_example

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

ROOT = pathlib.Path(__file__).resolve().parents[2]
rng = np.random.default_rng(0)


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def _run(path, args):
    session = ort.InferenceSession(str(path))
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})


def _assert_close(got, want):
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        # float32 matrix products sum in another order than NumPy's BLAS: a few ulp per term
        scale = float(np.max(np.abs(w), initial=1.0))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale)


EXAMPLES = EXAMPLE_CALLS


@pytest.mark.parametrize("name, function, make_args", EXAMPLES, ids=[f"{m}.{f}" for m, f, _ in EXAMPLES])
def test_an_example_runs_in_onnxruntime(name, function, make_args, tmp_path):
    fn = getattr(load_example(name), function)
    args = make_args()
    dy2st.export_onnx(fn, tmp_path / "model.onnx", *args)
    _assert_close(_run(tmp_path / "model.onnx", args), getattr(fn, "fn", fn)(*args))


def test_both_branches_of_a_cond_export(tmp_path):
    fn = load_example("seed_flag_model").model
    x = _f32(512)
    dy2st.export_onnx(fn, tmp_path / "m.onnx", x, np.array(1))
    for flag in (np.array(1), np.array(-1)):
        _assert_close(_run(tmp_path / "m.onnx", (x, flag)), fn.fn(x, flag))


@pytest.fixture(scope="module")
def workloads():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import workloads as module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    module._setup_seed(True)
    module._setup_rnn(True)
    return module


@pytest.mark.parametrize("name", ["gelu_chain", "seed_model", "rnn", "newton_sqrt"])
def test_the_w1_to_w3_workloads_run_in_onnxruntime(workloads, name, tmp_path):
    make = {
        "gelu_chain": lambda: (_f32(1 << 12),),
        "seed_model": lambda: workloads._seed_args(True),
        "rnn": lambda: workloads._rnn_args(True)[:2] + (20,),
        "newton_sqrt": lambda: (np.array(1000.0),),
    }[name]
    fn = getattr(workloads, name)
    args = make()
    dy2st.export_onnx(fn, tmp_path / "w.onnx", *args)
    _assert_close(_run(tmp_path / "w.onnx", args), fn(*args))


def test_data_dependent_trip_counts_run_in_the_exported_loop(tmp_path):
    fn = load_example("newton_sqrt").newton_sqrt
    dy2st.export_onnx(fn, tmp_path / "n.onnx", np.array(2.0), 1e-12)
    for a in (2.0, 1e6, 0.25):
        _assert_close(_run(tmp_path / "n.onnx", (np.array(a), 1e-12)), fn.fn(np.array(a), 1e-12))


def update_row(x):
    y = x * 1.0
    y[1] = 0.0
    return y


def test_an_op_without_an_onnx_form_names_itself_and_the_line(tmp_path):
    with pytest.raises(dy2st.OnnxExportError, match="cannot export setitem") as info:
        dy2st.export_onnx(update_row, tmp_path / "u.onnx", np.ones(3))
    assert "test_onnx.py" in str(info.value) and "y[1] = 0.0" in str(info.value)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def test_a_dynamic_function_exports_named_dimensions(tmp_path):
    dy2st.to_static(gelu, dynamic=True).export_onnx(tmp_path / "g.onnx", _f32(8))
    model = onnx.load(str(tmp_path / "g.onnx"))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n0"
    for n in (3, 8, 1000):
        x = _f32(n)
        _assert_close(_run(tmp_path / "g.onnx", (x,)), gelu(x))
