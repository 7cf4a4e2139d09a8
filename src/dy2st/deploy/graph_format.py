"""The saved-graph format: a graph as JSON, with its arrays kept apart (docs/deploy.md).

Encoding turns a ``Graph`` into a JSON-compatible dict and a list of arrays (constants, concrete
index arrays); decoding turns them back into a ``Graph`` without executing anything from the
file: op names are looked up in the op table, attribute values are rebuilt from a fixed set of
tagged forms (numbers, strings, tuples, slices, dtypes, arrays, symbolic sizes...), and anything
else is a ``SavedGraphError``. The decoded graph is checked by the IR verifier (every op's types
against its rule), so a tampered file that decodes is still a well-typed graph.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from dy2st.errors import Dy2stError, SourceLocation
from dy2st.ir.core import COND, WHILE_LOOP, Block, Graph, Op, Region, Value
from dy2st.ir.opdefs import OPS
from dy2st.ir.symbolic import Symbol, SymExpr
from dy2st.ir.types import TensorType
from dy2st.ops.generic import NUMPY_CALL, SLOT, is_public_callable_name
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.ops.structural import Formatted, Literal

FORMAT_NAME = "dy2st-graph"
FORMAT_VERSION = 1

# dtypes a saved graph may name: plain numbers, booleans and strings (no objects, no records).
_DTYPE_KINDS = frozenset("biufcSU")
_PYTHON_TYPES = {"bool": bool, "int": int, "float": float, "complex": complex}
# NumPy functions a loaded graph never calls through the generic layer: they read or write files
# or memory outside the arrays they are given.
_REFUSED_CALLS = frozenset(
    {
        "np.save", "np.savez", "np.savez_compressed", "np.savetxt", "np.load", "np.loadtxt",
        "np.genfromtxt", "np.fromfile", "np.fromregex", "np.memmap", "np.frombuffer", "np.info",
        "np.source", "np.lookfor", "np.show_config", "np.show_runtime", "np.setbufsize",
        "np.seterr", "np.seterrcall", "np.set_printoptions", "np.ctypeslib", "ndarray.tofile",
        "ndarray.dump", "ndarray.dumps", "ndarray.setflags", "ndarray.resize", "call",
        "np.lib.stride_tricks.as_strided", "ndarray.view", "ndarray.getfield", "ndarray.setfield",
        "ndarray.byteswap", "ndarray.put", "ndarray.itemset",
    }
)  # fmt: skip


class SavedGraphError(Dy2stError):
    """A saved graph that cannot be saved, or a file that is not a valid saved graph (truncated,
    corrupted, edited, from a newer format version, naming an unknown op)."""


# --- attribute values ----------------------------------------------------------------------
_SINGLETONS = ((Ellipsis, "$ellipsis"), (TENSOR_SLOT, "$index_slot"), (SLOT, "$call_slot"))


def _python_type_name(v: type, where: str) -> str:
    if _PYTHON_TYPES.get(v.__name__) is not v:
        raise SavedGraphError(f"{where}: the type {v.__name__} cannot be saved")
    return v.__name__


class _Encoder:
    """Encodes values into JSON forms; arrays go to ``arrays`` and are referred to by index."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.symbols: dict[str, int | None] = {}

    def value(self, v: Any, where: str) -> Any:
        if v is None or type(v) in (bool, int, str):
            return v
        for singleton, tag in _SINGLETONS:
            if v is singleton:
                return {tag: None}
        encode = self._by_type.get(type(v))
        if encode is not None:
            return encode(self, v, where)
        if isinstance(v, np.dtype):
            return {"$dtype": self.dtype(v, where)}
        if isinstance(v, (np.ndarray, np.generic)):
            return self.array(v, where)
        raise SavedGraphError(f"{where}: a value of type {type(v).__name__} cannot be saved ({v!r})")

    def number(self, v: float, where: str) -> Any:
        return v if math.isfinite(v) else {"$float": repr(v)}

    def items(self, tag: str, items: Any, where: str) -> dict[str, Any]:
        return {tag: [self.value(x, where) for x in items]}

    def array(self, v: np.ndarray | np.generic, where: str) -> dict[str, int]:
        array = np.asarray(v)
        self.dtype(array.dtype, where)
        self.arrays.append(array)
        return {"$array" if isinstance(v, np.ndarray) else "$scalar": len(self.arrays) - 1}

    _by_type: dict[type, Any] = {
        float: number,
        complex: lambda self, v, where: self.items("$complex", (v.real, v.imag), where),
        tuple: lambda self, v, where: self.items("$tuple", v, where),
        list: lambda self, v, where: self.items("$list", v, where),
        slice: lambda self, v, where: self.items("$slice", (v.start, v.stop, v.step), where),
        type: lambda self, v, where: {"$type": _python_type_name(v, where)},
        SymExpr: lambda self, v, where: {"$size": self.size(v)},
        TensorType: lambda self, v, where: {"$tensor_type": self.tensor_type(v, where)},
        SourceLocation: lambda self, v, where: {"$loc": [v.filename, v.lineno, v.col]},
        Formatted: lambda self, v, where: {"$formatted": self.value(v.pieces, where)},
        Literal: lambda self, v, where: {"$literal": self.value(v.value, where)},
    }

    def dtype(self, dtype: np.dtype, where: str) -> str:
        if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None:
            raise SavedGraphError(f"{where}: arrays of dtype {dtype} cannot be saved")
        return dtype.str

    def size(self, size: SymExpr) -> list[Any]:
        for symbol in size.symbols:
            self.symbols[symbol.name] = symbol.hint
        return [[[s.name for s in monomial], coefficient] for monomial, coefficient in size.terms]

    def tensor_type(self, t: TensorType, where: str) -> dict[str, Any]:
        shape = [d if isinstance(d, int) else {"$size": self.size(d)} for d in t.shape]
        return {"shape": shape, "dtype": self.dtype(t.exact_dtype, where), "weak": t.weak}


class _Decoder:
    """Rebuilds values from their JSON forms, refusing any form it does not know."""

    def __init__(self, arrays: list[np.ndarray], symbols: dict[str, Any]):
        self.arrays = arrays
        self.symbols: dict[str, Symbol] = {}
        for name, hint in _expect(symbols, dict, "symbols").items():
            if not isinstance(name, str) or not (hint is None or type(hint) is int):
                raise SavedGraphError(f"a malformed symbolic size {name!r}")
            self.symbols[name] = Symbol(name, hint)

    def value(self, form: Any) -> Any:
        if form is None or type(form) in (bool, int, float, str):
            return form
        if not isinstance(form, dict) or len(form) != 1:
            raise SavedGraphError(f"an attribute value in an unknown form: {_short(form)}")
        ((tag, body),) = form.items()
        for singleton, name in _SINGLETONS:
            if tag == name:
                return singleton
        decode = self._by_tag.get(tag)
        if decode is None:
            raise SavedGraphError(f"an attribute value in an unknown form: {_short(tag)}")
        return decode(self, body)

    def special_float(self, body: Any) -> float:
        if body not in ("inf", "-inf", "nan"):
            raise SavedGraphError(f"a malformed float {_short(body)}")
        return float(body)

    def complex_number(self, body: Any) -> complex:
        parts = _expect(body, list, "complex number")
        if len(parts) != 2:
            raise SavedGraphError("a malformed complex number")
        return complex(self.number(parts[0]), self.number(parts[1]))

    def slice_of(self, body: Any) -> slice:
        parts = _expect(body, list, "slice")
        if len(parts) != 3:
            raise SavedGraphError("a malformed slice")
        return slice(*(self.value(x) for x in parts))

    def python_type(self, body: Any) -> type:
        if body not in _PYTHON_TYPES:
            raise SavedGraphError(f"an unknown Python type {_short(body)}")
        return _PYTHON_TYPES[body]

    def location(self, body: Any) -> SourceLocation:
        parts = _expect(body, list, "location")
        if len(parts) != 3:
            raise SavedGraphError("a malformed source location")
        filename, lineno, col = parts
        if not isinstance(filename, str) or type(lineno) is not int or not (col is None or type(col) is int):
            raise SavedGraphError("a malformed source location")
        return SourceLocation(filename, lineno, col)

    def formatted(self, body: Any) -> Formatted:
        pieces = self.value(body)
        if not isinstance(pieces, tuple) or not all(_printable_piece(p) for p in pieces):
            raise SavedGraphError("a malformed formatted string")
        return Formatted(pieces)

    _by_tag: dict[str, Any] = {
        "$float": special_float,
        "$complex": complex_number,
        "$tuple": lambda self, body: tuple(self.value(x) for x in _expect(body, list, "tuple")),
        "$list": lambda self, body: [self.value(x) for x in _expect(body, list, "list")],
        "$slice": slice_of,
        "$dtype": lambda self, body: self.dtype(body),
        "$type": python_type,
        "$array": lambda self, body: self.array(body),
        "$scalar": lambda self, body: self.array(body)[()],
        "$size": lambda self, body: self.size(body),
        "$tensor_type": lambda self, body: self.tensor_type(body),
        "$loc": location,
        "$formatted": formatted,
        "$literal": lambda self, body: Literal(self.value(body)),
    }

    def number(self, form: Any) -> float:
        value = self.value(form)
        if type(value) not in (int, float):
            raise SavedGraphError("a malformed number")
        return value

    def dtype(self, name: Any) -> np.dtype:
        if not isinstance(name, str) or len(name) > 8:
            raise SavedGraphError(f"a malformed dtype {_short(name)}")
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise SavedGraphError(f"an unknown dtype {_short(name)}") from None
        if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None:
            raise SavedGraphError(f"a dtype a saved graph may not hold: {dtype}")
        return dtype

    def array(self, index: Any) -> np.ndarray:
        if type(index) is not int or not 0 <= index < len(self.arrays):
            raise SavedGraphError(f"a reference to a missing array ({_short(index)})")
        return self.arrays[index]

    def size(self, terms: Any) -> Any:
        total: Any = 0
        for term in _expect(terms, list, "size"):
            names, coefficient = _expect(term, list, "size term")
            if type(coefficient) is not int:
                raise SavedGraphError("a malformed symbolic size")
            product: Any = coefficient
            for name in _expect(names, list, "size term"):
                if name not in self.symbols:
                    raise SavedGraphError(f"an undeclared symbolic size {_short(name)}")
                product = product * SymExpr.of(self.symbols[name])
            total = total + product
        return total

    def tensor_type(self, form: Any) -> TensorType:
        form = _expect(form, dict, "type")
        shape = []
        for d in _expect(form.get("shape"), list, "shape"):
            size = self.value(d) if isinstance(d, dict) else d
            if not (type(size) is int and size >= 0) and not isinstance(size, SymExpr):
                raise SavedGraphError(f"a malformed dimension {_short(d)}")
            shape.append(size)
        weak = form.get("weak")
        if type(weak) is not bool:
            raise SavedGraphError("a malformed type")
        return TensorType(tuple(shape), self.dtype(form.get("dtype")), weak)


def _printable_piece(piece: Any) -> bool:
    """Literal text, or a format spec that cannot ask for a huge width or precision."""
    if isinstance(piece, str):
        return True
    if not (isinstance(piece, tuple) and len(piece) == 1 and isinstance(piece[0], str)):
        return False
    spec = piece[0]
    return len(spec) <= 16 and "{" not in spec and not re.search(r"\d{4}", spec)


def _expect(value: Any, kind: type, what: str) -> Any:
    if not isinstance(value, kind):
        raise SavedGraphError(f"a malformed {what}: {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- graphs --------------------------------------------------------------------------------------
def encode_graph(graph: Graph) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The JSON form of ``graph`` and the arrays it refers to."""
    encoder = _Encoder()
    ids: dict[Value, int] = {}

    def value_form(v: Value) -> dict[str, Any]:
        ids[v] = len(ids)
        return {"id": ids[v], "type": encoder.tensor_type(v.type, graph.name), "name": v.name_hint}

    def block_form(block: Block) -> dict[str, Any]:
        args = [value_form(a) for a in block.args]
        return {"args": args, "ops": [op_form(op) for op in block.ops]}

    def op_form(op: Op) -> dict[str, Any]:
        where = f"{op.name} at {op.loc}" if op.loc else op.name
        attrs = {k: encoder.value(v, where) for k, v in op.attrs.items()}
        operands = [ids[v] for v in op.operands]
        regions = [block_form(r.block) for r in op.regions]
        results = [value_form(r) for r in op.results]
        loc = encoder.value(op.loc, where) if op.loc is not None else None
        return {"op": op.name, "operands": operands, "results": results, "attrs": attrs, "regions": regions, "loc": loc}

    body = block_form(graph.body)
    form = {"name": graph.name, "num_inputs": graph.num_inputs, "body": body, "symbols": encoder.symbols}
    return form, encoder.arrays


def decode_graph(form: Any, arrays: list[np.ndarray]) -> tuple[Graph, dict[str, Symbol]]:
    """The graph of ``encode_graph``'s form, built only from known ops and value forms, and the
    symbols of its sizes by name."""
    form = _expect(form, dict, "graph")
    num_inputs, name = form.get("num_inputs"), form.get("name")
    if type(num_inputs) is not int or not isinstance(name, str):
        raise SavedGraphError("a malformed graph header")
    decoder = _Decoder(arrays, form.get("symbols", {}))
    body = _GraphDecoder(decoder).block(form.get("body"))
    if not 0 <= num_inputs <= len(body.args):
        raise SavedGraphError("a malformed graph header")
    return Graph(name, body, num_inputs), decoder.symbols


class _GraphDecoder:
    """Rebuilds blocks and ops; every value is defined once and used after its definition."""

    def __init__(self, decoder: _Decoder):
        self.decoder = decoder
        self.values: dict[int, Value] = {}

    def define(self, v: Value, entry: Any) -> None:
        key = _expect(entry, dict, "value").get("id")
        if type(key) is not int or key in self.values:
            raise SavedGraphError(f"a malformed or repeated value id {_short(key)}")
        self.values[key] = v
        name = entry.get("name")
        v.name_hint = name if isinstance(name, str) else None

    def types(self, entries: Any, what: str) -> list[TensorType]:
        return [self.decoder.tensor_type(_expect(e, dict, "value").get("type")) for e in _expect(entries, list, what)]

    def block(self, entry: Any) -> Block:
        entry = _expect(entry, dict, "block")
        block = Block(self.types(entry.get("args"), "block arguments"))
        for v, a in zip(block.args, entry["args"]):
            self.define(v, a)
        for op_entry in _expect(entry.get("ops"), list, "op list"):
            block.append(self.op(op_entry))
        return block

    def op(self, entry: Any) -> Op:
        entry = _expect(entry, dict, "op")
        name = entry.get("op")
        if not isinstance(name, str) or name not in OPS:
            raise SavedGraphError(f"an unknown op {_short(name)}")
        attrs = {k: self.decoder.value(v) for k, v in _expect(entry.get("attrs"), dict, "attributes").items()}
        if name == NUMPY_CALL:
            _check_numpy_call(attrs)
        operands = [self.operand(key, name) for key in _expect(entry.get("operands"), list, "operands")]
        regions = [Region(self.block(r)) for r in _expect(entry.get("regions"), list, "regions")]
        if name in (COND, WHILE_LOOP) and len(regions) != 2:
            raise SavedGraphError(f"{name}: a malformed region list")
        loc = self.decoder.value(entry.get("loc"))
        if loc is not None and not isinstance(loc, SourceLocation):
            raise SavedGraphError(f"{name}: a malformed source location")
        new = Op(name, operands, self.types(entry.get("results"), "results"), attrs, regions, loc)
        for v, r in zip(new.results, entry["results"]):
            self.define(v, r)
        return new

    def operand(self, key: Any, op_name: str) -> Value:
        if type(key) is not int or key not in self.values:
            raise SavedGraphError(f"{op_name}: an operand that is not defined before it ({_short(key)})")
        return self.values[key]


def _check_numpy_call(attrs: dict[str, Any]) -> None:
    """A generic call may only name a public NumPy callable that computes on its arguments."""
    function = attrs.get("function")
    if not isinstance(function, str) or function in _REFUSED_CALLS:
        raise SavedGraphError(f"a call of {_short(function)}, which a loaded graph may not make")
    if not is_public_callable_name(function):
        raise SavedGraphError(f"a call of {_short(function)}, which is not a public NumPy callable")


def check_saved_graph(graph: Graph) -> None:
    """Refuse a graph that names a call a loaded graph may not make."""
    for op in graph.walk():
        if op.name == NUMPY_CALL:
            _check_numpy_call(op.attrs)
