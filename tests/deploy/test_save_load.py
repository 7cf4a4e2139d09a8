"""dy2st.save and dy2st.load: the examples round-trip through a file into a fresh interpreter that
cannot import their modules; wrong arguments and damaged files give clear errors (docs/deploy.md)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dy2st
from dy2st.deploy.saving import _DIGEST, _HEADER, _digest
from example_modules import EXAMPLE_CALLS, load_example

rng = np.random.default_rng(0)
_example = load_example


def _f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# (example module, function, positional arguments of the saved signature)
ROUND_TRIPS = [
    *EXAMPLE_CALLS,
    ("seed_flag_model", "model", lambda: (_f32(512), np.array(-2))),
    ("gradients", "relax", lambda: (np.sin(np.linspace(0.0, 3.0, 8)) + 0.2,)),
]


def _unwrapped(fn):
    return getattr(fn, "fn", fn)


@pytest.mark.parametrize(
    "module_name, function, make_args", ROUND_TRIPS, ids=[f"{m}.{f}-{i}" for i, (m, f, _) in enumerate(ROUND_TRIPS)]
)
def test_an_example_runs_from_its_file_in_a_fresh_interpreter(module_name, function, make_args, tmp_path):
    module = _example(module_name)
    fn = getattr(module, function)
    args = make_args()
    expected = _unwrapped(fn)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    dy2st.save(fn, tmp_path / "saved.dy2st", *args)
    arrays = {f"arg{i}": a for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    np.savez(tmp_path / "args.npz", **arrays)
    python_args = {i: a for i, a in enumerate(args) if not isinstance(a, np.ndarray)}
    script = textwrap.dedent(
        f"""
        import importlib.util, pickle, sys
        import numpy as np
        import dy2st
        assert importlib.util.find_spec({module_name!r}) is None, "the example module is importable"
        loaded = dy2st.load("saved.dy2st")
        stored = np.load("args.npz")
        python_args = {python_args!r}
        args = [python_args[i] if i in python_args else stored[f"arg{{i}}"] for i in range({len(args)})]
        result = loaded(*args)
        with open("result.pickle", "wb") as f:
            pickle.dump(result, f)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    import pickle

    got = pickle.loads((tmp_path / "result.pickle").read_bytes())
    _assert_same(got, expected)


def _assert_same(got, expected):
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    assert type(got) is type(expected), (type(got), type(expected))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    assert np.asarray(got).dtype == np.asarray(expected).dtype


def model(x, flag, scale=2.0):
    if flag > 0:
        y = np.tanh(x) * scale
    else:
        y = x * x
    return y.sum(axis=0), {"n": 3}


def test_wrong_arguments_name_the_argument(tmp_path):
    dy2st.save(model, tmp_path / "m.dy2st", np.ones((2, 3)), np.array(1))
    loaded = dy2st.load(tmp_path / "m.dy2st")
    got = loaded(np.ones((2, 3)), np.array(1))
    np.testing.assert_array_equal(got[0], model(np.ones((2, 3)), np.array(1))[0])
    assert got[1] == {"n": 3}
    with pytest.raises(dy2st.SignatureMismatchError, match=r"argument 'x'.*float64\[2, 3\], got float32\[2, 3\]"):
        loaded(np.ones((2, 3), np.float32), np.array(1))
    with pytest.raises(dy2st.SignatureMismatchError, match=r"argument 'x'.*got float64\[3\]"):
        loaded(np.ones(3), np.array(1))
    with pytest.raises(dy2st.SignatureMismatchError, match=r"argument 'scale'.*saved for the value 2.0, got 3.0"):
        loaded(np.ones((2, 3)), np.array(1), 3.0)
    with pytest.raises(TypeError, match="missing a required argument: 'flag'"):
        loaded(np.ones((2, 3)))


def update_rows(A, v):
    for i in range(A.shape[0]):
        A[i] = A[i] * 0.5 + v
    return A.sum()


def test_a_loaded_function_updates_its_arguments_as_eager_code_does(tmp_path):
    A, v = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0])
    dy2st.to_static(update_rows).save(tmp_path / "u.dy2st", A.copy(), v)
    loaded = dy2st.load(tmp_path / "u.dy2st")
    mine, theirs = A.copy(), A.copy()
    assert loaded(mine, v) == update_rows(theirs, v)
    np.testing.assert_array_equal(mine, theirs)


def test_global_arrays_are_saved_by_value(tmp_path):
    module = _example("two_branch_model")
    X1, X2 = _f32(32, 128), _f32(32, 128)
    dy2st.save(module.model, tmp_path / "t.dy2st", X1, X2)
    expected = module.model.fn(X1, X2)
    module.W1[:] = 0.0  # changing the module's array after saving changes nothing in the file
    np.testing.assert_array_equal(dy2st.load(tmp_path / "t.dy2st")(X1, X2), expected)


def test_methods_save_without_their_instance(tmp_path):
    class Scaler:
        def __init__(self):
            self.w = np.array([2.0, 3.0])

        def __call__(self, x):
            return self.w * x

    dy2st.to_static(Scaler()).save(tmp_path / "s.dy2st", np.ones(2))
    np.testing.assert_array_equal(dy2st.load(tmp_path / "s.dy2st")(np.array([1.0, 2.0])), [2.0, 6.0])


# --- damaged files ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("saved") / "m.dy2st"
    dy2st.save(_example("newton_sqrt").newton_sqrt, path, np.array(2.0), 1e-12)
    return path.read_bytes()


def _load_bytes(data: bytes, path: pathlib.Path):
    path.write_bytes(data)
    return dy2st.load(path)


def test_flipped_and_truncated_files_give_clear_errors(saved_bytes, tmp_path):
    path = tmp_path / "damaged.dy2st"
    fuzz = np.random.default_rng(7)
    for trial in range(1500):
        data = bytearray(saved_bytes)
        if trial % 3 == 0:
            data = data[: fuzz.integers(0, len(data))]
        else:
            for _ in range(fuzz.integers(1, 5)):
                data[fuzz.integers(0, len(data))] ^= 1 << int(fuzz.integers(0, 8))
        try:
            _load_bytes(bytes(data), path)
        except dy2st.SavedGraphError:
            continue
        # A flip in bytes the zip reader ignores (the archive's comment, padding) leaves the
        # saved content intact: it must then load and run.
        assert _load_bytes(bytes(data), path)(np.array(2.0), 1e-12) == _example("newton_sqrt").newton_sqrt.fn(
            np.array(2.0), 1e-12
        )


def _members(data: bytes) -> dict[str, np.ndarray]:
    import io

    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _rewrite(members: dict[str, np.ndarray], header: dict, path: pathlib.Path) -> None:
    """The file with an edited header and a correct digest (a deliberate edit, not corruption)."""
    header_bytes = json.dumps(header).encode()
    members = dict(members)
    members[_HEADER] = np.frombuffer(header_bytes, dtype=np.uint8)
    members[_DIGEST] = np.frombuffer(_digest(header_bytes, members), dtype=np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **members)


def _edit_once(node, fuzz) -> object:
    """``node`` with one field somewhere inside it replaced, deleted or retyped."""
    if isinstance(node, dict) and node:
        key = list(node)[fuzz.integers(0, len(node))]
        node = dict(node)
        if fuzz.random() < 0.3:
            del node[key]
        else:
            node[key] = _edit_once(node[key], fuzz)
        return node
    if isinstance(node, list) and node and fuzz.random() < 0.8:
        node = list(node)
        k = int(fuzz.integers(0, len(node)))
        node[k] = _edit_once(node[k], fuzz)
        return node
    choices = [None, True, -1, 0, 7, 10**30, 1.5, "x", "add", "np.save", [], {}, [1, 2], {"$tuple": 3}, {"$array": 99}]
    return choices[fuzz.integers(0, len(choices))]


def test_edited_headers_give_clear_errors(saved_bytes, tmp_path):
    members = _members(saved_bytes)
    header = json.loads(members[_HEADER].tobytes())
    fuzz = np.random.default_rng(11)
    path = tmp_path / "edited.dy2st"
    loaded = 0
    for _ in range(1500):
        try:
            _rewrite(members, _edit_once(header, fuzz), path)
            dy2st.load(path)
            loaded += 1
        except dy2st.SavedGraphError:
            pass
    assert loaded < 1500  # most edits break the graph; a few (a value's name) change nothing


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda h: h.update(version=2), "format version 2"),
        (lambda h: h["graph"]["body"]["ops"][0].update(op="no_such_op"), "unknown op 'no_such_op'"),
        (lambda h: h.update(format="zip"), "another format"),
    ],
)
def test_newer_versions_and_unknown_ops_are_named(saved_bytes, tmp_path, edit, message):
    members = _members(saved_bytes)
    header = json.loads(members[_HEADER].tobytes())
    edit(header)
    _rewrite(members, header, tmp_path / "e.dy2st")
    with pytest.raises(dy2st.SavedGraphError, match=message):
        dy2st.load(tmp_path / "e.dy2st")


def test_a_changed_file_is_refused_by_its_digest(saved_bytes, tmp_path):
    members = _members(saved_bytes)
    header = json.loads(members[_HEADER].tobytes())
    header["function"] = "renamed"
    members[_HEADER] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(tmp_path / "c.dy2st", "wb") as file:
        np.savez(file, **members)
    with pytest.raises(dy2st.SavedGraphError, match="digest"):
        dy2st.load(tmp_path / "c.dy2st")


def test_loading_never_calls_file_or_memory_functions(tmp_path):
    def f(x):
        return np.linalg.inv(x)

    dy2st.save(f, tmp_path / "r.dy2st", np.eye(3))
    members = _members((tmp_path / "r.dy2st").read_bytes())
    text = members[_HEADER].tobytes().decode()
    assert "np.linalg.inv" in text
    header = json.loads(text.replace("np.linalg.inv", "np.save"))
    _rewrite(members, header, tmp_path / "r2.dy2st")
    with pytest.raises(dy2st.SavedGraphError, match="np.save"):
        dy2st.load(tmp_path / "r2.dy2st")


def noisy(x):
    total = x.sum()
    print(f"total={total:.2f}", x.shape)
    assert total > 0, "the total must be positive"
    return total * 2.0


def test_prints_and_asserts_run_in_a_loaded_graph(tmp_path, capsys):
    dy2st.save(noisy, tmp_path / "p.dy2st", np.ones(3))
    loaded = dy2st.load(tmp_path / "p.dy2st")
    assert loaded(np.array([1.0, 2.0, 0.5])) == 7.0
    assert capsys.readouterr().out == "total=3.50 (3,)\n"
    with pytest.raises(AssertionError, match="the total must be positive"):
        loaded(np.array([-1.0, 0.0, 0.0]))


def centre_rows(A, v):
    centred = (A - A.mean(axis=1, keepdims=True)) @ v
    if A.shape[0] > 3:
        centred = centred * 2.0
    return centred, A[:2].sum()


def test_a_dynamic_function_saves_symbolic_sizes_and_their_decisions(tmp_path):
    dy2st.to_static(centre_rows, dynamic=True).save(tmp_path / "d.dy2st", np.ones((5, 3)), np.ones(3))
    loaded = dy2st.load(tmp_path / "d.dy2st")
    for rows, cols in [(5, 3), (7, 4), (40, 2)]:
        A, v = rng.standard_normal((rows, cols)), rng.standard_normal(cols)
        got, want = loaded(A, v), centre_rows(A, v)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert got[1] == want[1]
    with pytest.raises(dy2st.SignatureMismatchError, match=r"built for sizes where n0 - 3 > 0"):
        loaded(np.ones((3, 3)), np.ones(3))  # the if took the other way at 3 rows
    with pytest.raises(dy2st.SignatureMismatchError, match="as equal differ"):
        loaded(np.ones((5, 3)), np.ones(4))
    with pytest.raises(dy2st.SignatureMismatchError, match="at least 2"):
        loaded(np.ones((5, 1)), np.ones(1))
