"""``dy2st.save`` and ``dy2st.load``: a converted function's graph in one file, run without the
function's source (docs/deploy.md).

The file is a NumPy ``.npz`` archive (a zip of ``.npy`` members, read with
``allow_pickle=False``) holding:

- ``__dy2st__``: the JSON header, as bytes: format name and version, the graph
  (``graph_format``), the function's parameters and the structure of their values, the
  structure of its result, which arguments it updates;
- ``array{i}``: the graph's constants and index arrays; ``capture{i}``: the global and closure
  arrays the graph read, saved by value;
- ``__dy2st_digest__``: a SHA-256 digest of all of the above, so that a file changed by anything
  but ``save`` is refused before it is decoded.

The saved graph is the one the function's passes left before any backend lowering
(simplification, folding, CSE, loop-invariant code motion, dead code elimination); loading runs
fusion, in-place updates and memory planning for the backend that will run it.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from dy2st.backend.numba.executor import chosen_backend, make_executor, tier_passes
from dy2st.backend.numpy.lowering import numpy_passes
from dy2st.deploy.graph_format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    SavedGraphError,
    _Decoder,
    _Encoder,
    check_saved_graph,
    decode_graph,
    encode_graph,
)
from dy2st.errors import Dy2stError, public_api
from dy2st.ir.core import Graph
from dy2st.ir.opcodes import WRITES_BACK
from dy2st.ir.symbolic import RELATION_SYMBOLS, Guard, Symbol, SymExpr, recording_guards
from dy2st.ir.verifier import VerificationError, verify
from dy2st.passes import optimize
from dy2st.runtime.pytree import (
    CONSTANT,
    DICT,
    LEAF,
    LIST,
    PYTHON_NUMBER,
    TUPLE,
    Constant,
    TreeDef,
    flatten,
    unflatten,
)
from dy2st.runtime.staging import Program

_HEADER = "__dy2st__"
_DIGEST = "__dy2st_digest__"


class SignatureMismatchError(Dy2stError, TypeError):
    """A loaded function called with arguments its saved graph was not built for."""


# --- saving ----------------------------------------------------------------------------------------
def write_saved(
    path: str | os.PathLike[str],
    program: Program,
    graph: Graph,
    arguments: dict[str, Any],
    skip: int = 0,
    defaults: Sequence[str] = (),
) -> None:
    """Write a staged function to ``path``: ``graph`` (the program's graph after the cleanup
    passes), the structure of ``arguments`` (the bound call it was staged for, the first ``skip``
    of them bound by the caller and left out, a method's instance), its result's structure and its
    captured arrays, by value. ``defaults``: the parameters whose default value the call used; the
    loaded function has the same default where it holds no array."""
    check_saved_graph(graph)
    encoder = _Encoder()
    graph_form, arrays = encode_graph(graph)
    names = list(arguments)
    for name in names[:skip]:
        leaves: list[Any] = []
        flatten(arguments[name], leaves)
        if leaves:
            raise SavedGraphError(f"cannot save a graph whose bound argument {name!r} holds arrays; save a function")
    names = names[skip:]
    parameter_trees = {name: _tree_form(flatten(arguments[name], []), encoder, f"argument {name!r}") for name in names}
    _mark_symbolic_sizes(parameter_trees, names, program)
    captures = [np.asarray(source.read()) for source in program.capture_sources]
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "function": graph.name,
        "parameters": names,
        "defaults": [name for name in names if name in defaults and not _leaves_of(arguments[name])],
        "arguments": parameter_trees,
        "output": _tree_form(program.output_treedef, encoder, "the result"),
        "num_results": program.num_results,
        "writebacks": sorted(program.writebacks.values()),
        "num_arrays": len(arrays),
        "num_captures": len(captures),
        "tree_arrays": len(encoder.arrays),
        "graph": graph_form,
        # Each symbolic size of the arguments: where it is read (leaf, axis), and the decisions
        # about such sizes the graph was built on (each must hold for a call's sizes).
        "symbolic_sizes": {s.name: [list(p) for p in places] for s, places in program.symbols.items()},
        "size_guards": [
            {"size": encoder.size(g.expr), "relation": RELATION_SYMBOLS[g.relation]} for g in program.size_guards
        ],
    }
    graph_form["symbols"].update(encoder.symbols)
    members = {f"array{i}": a for i, a in enumerate(arrays)}
    members.update({f"tree{i}": a for i, a in enumerate(encoder.arrays)})
    members.update({f"capture{i}": a for i, a in enumerate(captures)})
    header_bytes = json.dumps(header, sort_keys=True).encode()
    members[_HEADER] = np.frombuffer(header_bytes, dtype=np.uint8)
    members[_DIGEST] = np.frombuffer(_digest(header_bytes, members), dtype=np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **members)  # type: ignore[arg-type]


_RELATIONS = {name: relation for relation, name in RELATION_SYMBOLS.items()}


def _mark_symbolic_sizes(trees: dict[str, dict[str, Any]], names: list[str], program: Program) -> None:
    """Write ``null`` for the argument sizes the graph leaves symbolic (any size fits there)."""
    leaves = [leaf for name in names for leaf in _leaf_forms(trees[name])]
    for places in program.symbols.values():
        for leaf, axis in places:
            leaves[leaf]["shape"][axis] = None


def _leaf_forms(form: dict[str, Any]) -> list[dict[str, Any]]:
    if form["kind"] == LEAF:
        return [form] if "shape" in form else []
    return [leaf for child in form.get("children", []) for leaf in _leaf_forms(child)]


def _leaves_of(value: Any) -> list[Any]:
    leaves: list[Any] = []
    flatten(value, leaves)
    return leaves


def _digest(header: bytes, members: dict[str, np.ndarray]) -> bytes:
    """SHA-256 of the header and of every array member (name, dtype, shape, bytes)."""
    digest = hashlib.sha256(header)
    for name in sorted(members):
        if name in (_HEADER, _DIGEST):
            continue
        array = np.ascontiguousarray(members[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.digest()


def _tree_form(tree: TreeDef, encoder: _Encoder, where: str) -> dict[str, Any]:
    """The JSON form of an argument's or result's structure."""
    kind = tree.kind
    if kind == LEAF:
        if tree.data is None:
            return {"kind": LEAF}
        shape, dtype, scalar = tree.data
        return {"kind": LEAF, "shape": list(shape), "dtype": encoder.dtype(dtype, where), "scalar": scalar}
    if kind == PYTHON_NUMBER:
        return {"kind": kind}
    if kind in (TUPLE, LIST, DICT):
        form: dict[str, Any] = {"kind": kind, "children": [_tree_form(c, encoder, where) for c in tree.children]}
        if kind == DICT:
            form["keys"] = [encoder.value(k, where) for k in tree.data]
        return form
    if kind == CONSTANT:
        return {"kind": kind, "value": encoder.value(tree.data.value, where)}
    raise SavedGraphError(
        f"{where} holds a {kind} ({tree.data!r}), which a saved graph cannot rebuild: "
        "use arrays, Python numbers, strings and tuples, lists or dicts of them"
    )


# --- loading ---------------------------------------------------------------------------------------
@public_api
def load(path: str | os.PathLike[str], backend: str | None = None) -> LoadedFunction:
    """The function saved at ``path``: it runs the saved graph without the original source, module
    or dy2st's transformer. Loading executes nothing from the file (see the module docstring).

    Args:
        path: a file written by ``dy2st.save``.
        backend: where the graph runs, as in ``to_static``.

    Raises:
        SavedGraphError: the file is not a saved graph this version of dy2st can read (truncated,
            corrupted, edited, from a newer format version, naming an unknown op).
    """
    members = _read_members(path)
    header_bytes = members.pop(_HEADER).tobytes()
    digest = members.pop(_DIGEST)
    if digest.tobytes() != _digest(header_bytes, members):
        raise SavedGraphError(f"{os.fspath(path)}: the file was changed after it was saved (its digest differs)")
    try:
        header = json.loads(header_bytes.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SavedGraphError(f"{os.fspath(path)}: the header is not valid JSON ({error})") from None
    try:
        return LoadedFunction(header, members, chosen_backend(backend))
    except SavedGraphError:
        raise
    except (VerificationError, ValueError, TypeError, KeyError, IndexError, AttributeError) as error:
        raise SavedGraphError(f"{os.fspath(path)}: not a valid saved graph ({type(error).__name__}: {error})") from None


def _read_members(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    try:
        with open(path, "rb") as file:
            data = file.read()
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files}
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except Exception as error:  # NumPy's and zipfile's complaints about a damaged archive vary
        raise SavedGraphError(f"{os.fspath(path)}: not a dy2st saved graph ({type(error).__name__}: {error})") from None
    if _HEADER not in members or _DIGEST not in members:
        raise SavedGraphError(f"{os.fspath(path)}: not a dy2st saved graph (no dy2st header)")
    for name in (_HEADER, _DIGEST):
        if members[name].dtype != np.uint8 or members[name].ndim != 1:
            raise SavedGraphError(f"{os.fspath(path)}: not a dy2st saved graph (a malformed header)")
    return members


class LoadedFunction:
    """A function loaded by ``dy2st.load``: call it like the saved function, with arguments of the
    saved shapes and dtypes.

    Attributes:
        graph: the graph it runs (after the backend's lowering passes).
        parameters: the names of its parameters, in order.
    """

    def __init__(self, header: Any, members: dict[str, np.ndarray], backend: str):
        if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
            raise SavedGraphError("not a dy2st saved graph (the header names another format)")
        version = header.get("version")
        if type(version) is not int or version > FORMAT_VERSION or version < 1:
            raise SavedGraphError(
                f"the file has format version {version!r}; this dy2st reads version {FORMAT_VERSION}",
                note="load it with the dy2st version that saved it, or a newer one",
            )
        arrays = [_member(members, f"array{i}") for i in range(_count(header, "num_arrays"))]
        tree_arrays = [_member(members, f"tree{i}") for i in range(_count(header, "tree_arrays"))]
        self.captures = [_member(members, f"capture{i}") for i in range(_count(header, "num_captures"))]
        graph, symbols = decode_graph(header.get("graph"), arrays)
        verify(graph)
        check_saved_graph(graph)
        if len(graph.captures) != len(self.captures) or any(
            c.shape != v.type.shape or c.dtype != v.type.exact_dtype for c, v in zip(self.captures, graph.captures)
        ):
            raise SavedGraphError("the saved captured arrays do not fit the graph")
        decoder = _Decoder(tree_arrays, {})
        decoder.symbols = symbols
        parameters = header.get("parameters")
        if not isinstance(parameters, list) or not all(isinstance(p, str) and p.isidentifier() for p in parameters):
            raise SavedGraphError("a malformed parameter list")
        self.parameters: list[str] = parameters
        trees = header.get("arguments")
        if not isinstance(trees, dict) or set(trees) != set(parameters):
            raise SavedGraphError("a malformed argument structure")
        self.argument_trees = [_tree(trees[p], decoder) for p in parameters]
        self.output_tree = _tree(header.get("output"), decoder)
        self.num_results = _count(header, "num_results")
        writes = header.get("writebacks")
        if not isinstance(writes, list) or not all(type(i) is int for i in writes):
            raise SavedGraphError("a malformed list of updated arguments")
        self.writes: list[int] = writes
        self.name = header.get("function") if isinstance(header.get("function"), str) else "loaded"
        self._check_inputs_fit(graph)
        self.symbol_places = _symbol_places(header.get("symbolic_sizes", {}), symbols, graph.num_inputs)
        self.size_guards = _size_guards(header.get("size_guards", []), decoder)
        defaults = header.get("defaults", [])
        if not isinstance(defaults, list) or not set(defaults) <= set(parameters):
            raise SavedGraphError("a malformed list of default arguments")
        self.signature = inspect.Signature(
            [
                inspect.Parameter(
                    p,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=tree.unflatten(iter(())) if p in defaults else inspect.Parameter.empty,
                )
                for p, tree in zip(parameters, self.argument_trees)
            ]
        )
        writebacks = _writebacks(graph)
        with recording_guards() as lowering_guards:  # decisions the backend's passes make on sizes
            self.graph = optimize(graph, passes=[*numpy_passes(), *tier_passes(backend)])
            self.executor = make_executor(self.graph, writebacks, backend)
        self.size_guards += lowering_guards

    def _check_inputs_fit(self, graph: Graph) -> None:
        leaves = [leaf for tree in self.argument_trees for leaf in _leaf_trees(tree)]
        if len(leaves) != graph.num_inputs:
            raise SavedGraphError("the argument structure does not fit the graph's inputs")
        for tree, value in zip(leaves, graph.inputs):
            shape, dtype, _ = tree.data
            fits = len(shape) == value.type.ndim and all(
                isinstance(d, int) and n == d if n is not None else isinstance(d, SymExpr)
                for n, d in zip(shape, value.type.shape)
            )
            if not fits or dtype != value.type.exact_dtype:
                raise SavedGraphError("the argument structure does not fit the graph's inputs")

    @public_api
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(args, kwargs)

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as error:
            raise SignatureMismatchError(f"{self.name}: {error}") from None
        bound.apply_defaults()
        leaves: list[Any] = []
        for name, expected in zip(self.parameters, self.argument_trees):
            got = flatten(bound.arguments[name], leaves)
            if not _fits(expected, got):
                raise SignatureMismatchError(f"{self.name}: argument {name!r}: {_difference(expected, got)}")
        self._check_sizes(leaves)
        inputs = [*leaves, *self.captures]
        for index in self.writes:
            if index < len(leaves) and not (isinstance(leaves[index], np.ndarray) and leaves[index].flags.writeable):
                raise SignatureMismatchError(f"{self.name}: an argument it updates in place is not a writable array")
        outputs = self.executor.run(*inputs)
        return unflatten(self.output_tree, outputs[: self.num_results])

    def _check_sizes(self, leaves: list[Any]) -> None:
        """Sizes the graph leaves symbolic: one value per symbol, at least its least size, and
        every decision the graph was built on true for them."""
        sizes: dict[Symbol, int] = {}
        for symbol, places in self.symbol_places.items():
            found = {leaves[leaf].shape[axis] for leaf, axis in places}
            if len(found) != 1:
                raise SignatureMismatchError(
                    f"{self.name}: sizes the saved graph takes as equal differ: {sorted(found)}"
                )
            (size,) = found
            if size < symbol.least:
                raise SignatureMismatchError(
                    f"{self.name}: the saved graph takes sizes of at least {symbol.least}, got {size}"
                )
            sizes[symbol] = size
        for guard in self.size_guards:
            if not guard.holds(sizes):
                raise SignatureMismatchError(
                    f"{self.name}: the saved graph was built for sizes where {guard} (with "
                    f"{', '.join(f'{s.name}={n}' for s, n in sizes.items())})",
                    note="save it again with arguments of these sizes",
                )

    def __repr__(self) -> str:
        return f"<dy2st.LoadedFunction {self.name}{self.signature}>"


def _writebacks(graph: Graph) -> dict[int, int]:
    ret = graph.body.ops[-1]
    marks = ret.attrs.get(WRITES_BACK, ())
    if not isinstance(marks, tuple) or len(marks) > len(ret.operands):
        raise SavedGraphError("a malformed list of updated arguments")
    writebacks = {}
    for output, argument in enumerate(marks):
        if argument is None:
            continue
        if type(argument) is not int or not 0 <= argument < len(graph.body.args):
            raise SavedGraphError("a malformed list of updated arguments")
        writebacks[output] = argument
    return writebacks


def _symbol_places(form: Any, symbols: dict[str, Symbol], num_leaves: int) -> dict[Symbol, list[tuple[int, int]]]:
    if not isinstance(form, dict):
        raise SavedGraphError("a malformed table of symbolic sizes")
    places: dict[Symbol, list[tuple[int, int]]] = {}
    for name, entries in form.items():
        if name not in symbols or not isinstance(entries, list) or not entries:
            raise SavedGraphError(f"a malformed symbolic size {name!r}")
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2 and all(type(n) is int and n >= 0 for n in entry)):
                raise SavedGraphError(f"a malformed place of the symbolic size {name!r}")
            if entry[0] >= num_leaves:
                raise SavedGraphError(f"a place of the symbolic size {name!r} outside the arguments")
        places[symbols[name]] = [(leaf, axis) for leaf, axis in entries]
    return places


def _size_guards(form: Any, decoder: _Decoder) -> list[Guard]:
    if not isinstance(form, list):
        raise SavedGraphError("a malformed list of size guards")
    guards = []
    for entry in form:
        if not isinstance(entry, dict) or entry.get("relation") not in _RELATIONS:
            raise SavedGraphError("a malformed size guard")
        size = decoder.size(entry.get("size"))
        if not isinstance(size, SymExpr):
            raise SavedGraphError("a malformed size guard")
        guards.append(Guard(size, _RELATIONS[entry["relation"]]))
    return guards


def _fits(expected: TreeDef, got: TreeDef) -> bool:
    """Does an argument's structure fit the saved one (``None`` sizes fitting any size)?"""
    if expected.kind == LEAF and got.kind == LEAF and expected.data is not None and got.data is not None:
        (shape, dtype, scalar), (got_shape, got_dtype, got_scalar) = expected.data, got.data
        return (
            dtype == got_dtype
            and scalar == got_scalar
            and len(shape) == len(got_shape)
            and all(n is None or n == m for n, m in zip(shape, got_shape))
        )
    if expected.kind != got.kind or len(expected.children) != len(got.children) or expected.kind == LEAF:
        return expected == got
    if expected.kind in (TUPLE, LIST, DICT):
        return expected.data == got.data and all(_fits(e, g) for e, g in zip(expected.children, got.children))
    return expected == got


def _count(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if type(value) is not int or not 0 <= value < 1 << 20:
        raise SavedGraphError(f"a malformed header field {key!r}")
    return value


def _member(members: dict[str, np.ndarray], name: str) -> np.ndarray:
    if name not in members:
        raise SavedGraphError(f"the file lacks its array {name!r}")
    return members[name]


def _tree(form: Any, decoder: _Decoder) -> TreeDef:
    if not isinstance(form, dict):
        raise SavedGraphError("a malformed structure")
    kind = form.get("kind")
    if kind == LEAF:
        return _leaf_tree(form, decoder)
    if kind == PYTHON_NUMBER:
        return TreeDef(PYTHON_NUMBER)
    if kind in (TUPLE, LIST, DICT):
        return _container_tree(kind, form, decoder)
    if kind == CONSTANT:
        return TreeDef(CONSTANT, (), Constant(decoder.value(form.get("value"))))
    raise SavedGraphError(f"a structure of an unknown kind {kind!r}")


def _leaf_tree(form: dict[str, Any], decoder: _Decoder) -> TreeDef:
    if "shape" not in form:
        return TreeDef(LEAF)
    shape, scalar = form["shape"], form.get("scalar")
    if not isinstance(shape, list) or not all(n is None or (type(n) is int and n >= 0) for n in shape):
        raise SavedGraphError("a malformed array in a structure")
    if type(scalar) is not bool:
        raise SavedGraphError("a malformed array in a structure")
    return TreeDef(LEAF, (), (tuple(shape), decoder.dtype(form.get("dtype")), scalar))


def _container_tree(kind: str, form: dict[str, Any], decoder: _Decoder) -> TreeDef:
    children = form.get("children")
    if not isinstance(children, list):
        raise SavedGraphError("a malformed structure")
    trees = tuple(_tree(c, decoder) for c in children)
    if kind != DICT:
        return TreeDef(kind, trees)
    keys = tuple(decoder.value(k) for k in _expect_list(form.get("keys")))
    if len(keys) != len(trees):
        raise SavedGraphError("a malformed structure")
    return TreeDef(DICT, trees, keys)


def _expect_list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise SavedGraphError("a malformed structure")
    return value


def _leaf_trees(tree: TreeDef) -> list[TreeDef]:
    if tree.kind == LEAF:
        return [tree]
    return [leaf for child in tree.children for leaf in _leaf_trees(child)]


def _difference(expected: TreeDef, got: TreeDef) -> str:
    """What differs between the saved structure of an argument and the one given."""
    if expected.kind == LEAF and got.kind == LEAF and expected.data and got.data:
        (shape, dtype, _), (got_shape, got_dtype, _) = expected.data, got.data
        dims = ["?" if n is None else n for n in shape]
        return f"the saved graph takes {dtype}{dims}, got {got_dtype}{list(got_shape)}"
    if expected.kind != got.kind or len(expected.children) != len(got.children):
        return f"the saved graph takes {_describe(expected)}, got {_describe(got)}"
    if expected.kind == CONSTANT:
        return f"the graph was saved for the value {expected.data.value!r}, got {got.data!r}"
    for e, g in zip(expected.children, got.children):
        if e != g:
            return _difference(e, g)
    return f"the saved graph takes {_describe(expected)}, got {_describe(got)}"


def _describe(tree: TreeDef) -> str:
    if tree.kind == LEAF and tree.data:
        shape, dtype, _ = tree.data
        return f"an array {dtype}{list(shape)}"
    if tree.kind == CONSTANT:
        return f"the value {tree.data.value!r}"
    return f"a {tree.kind} of {len(tree.children)}"
