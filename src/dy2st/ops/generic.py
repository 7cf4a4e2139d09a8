"""The generic staged NumPy call: any NumPy function, ndarray method or ufunc method dy2st has no
precise rule for becomes one ``numpy_call`` op that calls the real NumPy function when the graph
runs.

``np.linalg.solve(A, b)`` inside a converted function stages as::

    %x = numpy_call %A, %b {function='np.linalg.solve', arguments=(%, %), ...} : f64[4]

What the op needs to know while the graph is built, its results' dtypes and ranks, comes from
calling the function once on *stand-ins*: small arrays of the operands' dtypes and shapes with
values most functions accept (a symmetric positive definite matrix where the last two axes are
square, distinct positive floats, zero indices). The result sizes are:

- static where every operand size is, the stand-ins could have those sizes, the function's
  result sizes never depend on the values (``VALUE_SIZED`` lists those that do: ``np.unique``...),
  and a second call with other values in the integer and boolean stand-ins gives the same sizes
  (``np.roll(x, k)`` does, ``np.pad(x, n)`` does not);
- data-dependent otherwise (``u0``, read from the result when the graph runs, docs/shapes.md).

When the graph runs, the op checks that NumPy returned what the graph was built for (the number of
results, each one's dtype, rank and static sizes): a function whose result type depends on the
values (``np.linalg.eig`` of a matrix with complex eigenvalues) raises a clear error at the user's
line rather than hand a wrong type on.

Keyword arguments and Python values are attributes; tensors nested in lists and tuples
(``np.block([[A, B]])``) are operands. A result that may be a view of an operand (``np.flip``) is
marked as possibly sharing its operands' memory: reading it is fine, and an in-place update of
either is refused (``Tensor._shares``), never silently wrong. Functions that write into an argument
(``np.add.at(a, i, v)``, ``np.copyto(dst, src)``, ``out=``, ``x.sort()``) write into a copy of it,
which becomes the argument's new contents (a functional update, as ``setitem`` is). Fusion and
memory planning treat the op as a barrier.
"""

from __future__ import annotations

import functools
import math
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dy2st.errors import (
    DifferentiationError,
    GraphBuildError,
    TensorValueError,
    UnsupportedOpError,
    build_error,
    user_location,
)
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import SymExpr, data_dependent_size, has_symbolic, is_data_dependent
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import zeros
from dy2st.ops.join import array_from_nested, contains_tensor
from dy2st.staging.handlers import CREATION_HANDLERS, FALLBACKS, RUNTIME_QUERIES
from dy2st.staging.tensor import Tensor, apply

NUMPY_CALL = "numpy_call"


class _Slot:
    """Where an operand stands in an argument template."""

    def __repr__(self) -> str:
        return "%"

    def __reduce__(self) -> str:
        return "SLOT"


SLOT = _Slot()


# --- naming NumPy callables ------------------------------------------------------------------
_PUBLIC_MODULES = ("", "linalg", "fft", "lib.stride_tricks", "lib.scimath")
"""NumPy's namespaces whose callables the generic layer names (looked up on first use: importing
``numpy.fft`` eagerly would import ``numpy.random`` with dy2st)."""
_UFUNC_METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")


@functools.cache
def _public_names() -> dict[int, str]:
    """id of each public NumPy callable -> its spelling (``np.linalg.inv``)."""
    names: dict[int, str] = {}
    for path in _PUBLIC_MODULES:
        module: Any = np
        for part in filter(None, path.split(".")):
            module = getattr(module, part)
        prefix = f"np.{path}" if path else "np"
        for attribute in dir(module):
            if attribute.startswith("_"):
                continue
            obj = getattr(module, attribute, None)
            if callable(obj) and not isinstance(obj, type):
                names.setdefault(id(obj), f"{prefix}.{attribute}")
    return names


@functools.cache
def _public_spellings() -> frozenset[str]:
    return frozenset(_public_names().values())


def is_public_callable_name(name: str) -> bool:
    """Does ``name`` spell, in ``callable_name``'s forms, a public NumPy callable, a ufunc method
    or an ndarray method? Answered from the tables, without looking ``name`` up in NumPy."""
    head, _, rest = name.partition(".")
    if head == "ndarray":
        return rest.isidentifier() and not rest.startswith("_") and callable(vars(np.ndarray).get(rest))
    if head != "np":
        return False
    owner, _, method = rest.rpartition(".")
    if method in _UFUNC_METHODS and owner.isidentifier():
        return isinstance(vars(np).get(owner), np.ufunc)
    return name in _public_spellings()


def callable_name(func: Any) -> str | None:
    """How the attributes name ``func``: ``np.linalg.inv``, ``np.add.accumulate``,
    ``ndarray.sort``; None for anything not public NumPy."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, np.ufunc) and getattr(func, "__name__", None) in _UFUNC_METHODS:
        return f"np.{owner.__name__}.{func.__name__}"
    if getattr(func, "__objclass__", None) is np.ndarray:
        return f"ndarray.{func.__name__}"
    return _public_names().get(id(func))


@functools.cache
def resolve(name: str) -> Callable[..., Any]:
    """The NumPy callable ``name`` spells (the inverse of ``callable_name``). An ndarray method
    is called on its first argument, which may also be a NumPy scalar (``x.sum().item()``)."""
    if name == CALL_OBJECT:
        return _call_object
    head, _, rest = name.partition(".")
    if head == "ndarray":
        return _method_caller(rest)
    obj: Any = np
    for part in rest.split("."):
        obj = getattr(obj, part)
    return obj


CALL_OBJECT = "call"
"""The spelling of a call of a NumPy callable object made in the program (``np.vectorize(f)``,
``np.frompyfunc(f, 2, 1)``): the object is the call's first argument."""


def _call_object(obj: Any, *args: Any, **kwargs: Any) -> Any:
    return obj(*args, **kwargs)


def is_numpy_object(func: Any) -> bool:
    """A callable NumPy object the program made (``np.vectorize(f)``, ``np.frompyfunc(f, 2, 1)``):
    it runs Python per element when the graph runs."""
    return isinstance(func, np.vectorize) or (isinstance(func, np.ufunc) and callable_name(func) is None)


def _method_caller(method: str) -> Callable[..., Any]:
    def call(array: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(array, method)(*args, **kwargs)

    call.__name__ = method
    return call


# --- argument templates ------------------------------------------------------------------------
def split_arguments(args: tuple, kwargs: dict[str, Any]) -> tuple[list[Tensor], tuple, tuple]:
    """The tensors among the arguments (in lists and tuples too), and the arguments with each
    tensor replaced by ``SLOT``: positional, then keyword ``(name, value)`` pairs."""
    tensors: list[Tensor] = []
    arguments = tuple(_template(a, tensors) for a in args)
    keywords = tuple((k, _template(v, tensors)) for k, v in kwargs.items())
    return tensors, arguments, keywords


def _template(value: Any, tensors: list[Tensor]) -> Any:
    if isinstance(value, Tensor):
        tensors.append(value)
        return SLOT
    if type(value) in (list, tuple):
        return type(value)(_template(v, tensors) for v in value)
    return value


def fill(template: Any, operands: Iterator[Any]) -> Any:
    """``template`` with each ``SLOT`` the next operand."""
    if template is SLOT:
        return next(operands)
    if type(template) in (list, tuple):
        return type(template)(fill(v, operands) for v in template)
    return template


def _call(function: str, arguments: tuple, keywords: tuple, operands: list[Any]) -> Any:
    values = iter(operands)
    args = fill(arguments, values)
    kwargs = {k: fill(v, values) for k, v in keywords}
    return resolve(function)(*args, **kwargs)


# --- results -----------------------------------------------------------------------------------
_PYTHON_NUMBERS = (bool, int, float, complex)


def result_leaves(result: Any, mutated: list[Any]) -> list[Any]:
    """The arrays, NumPy scalars and Python numbers a call returned, in order, in its tuples,
    lists and named tuples (a Python number as the NumPy scalar of it); a mutated argument
    returned (``out=``) is not one of them."""
    if isinstance(result, (np.ndarray, np.generic)):
        return [] if any(result is m for m in mutated) else [result]
    if type(result) in _PYTHON_NUMBERS:
        return [np.asarray(result)[()]]
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in result_leaves(item, mutated)]
    return []


def _structure(result: Any, mutated: list[Any], counter: Iterator[int]) -> Any:
    """How to rebuild a result from its leaves: ``('leaf', k)``, ``('python', k)`` (a Python
    number), ``('mutated', j)``, ``('none',)``, ``(container type, [parts])``."""
    for j, m in enumerate(mutated):
        if result is m:
            return ("mutated", j)
    if isinstance(result, (np.ndarray, np.generic)):
        return ("leaf", next(counter))
    if type(result) in _PYTHON_NUMBERS:
        return ("python", next(counter))
    if result is None:
        return ("none",)
    if isinstance(result, (tuple, list)):
        return (type(result), [_structure(item, mutated, counter) for item in result])
    raise TypeError(type(result).__name__)


def _rebuild(structure: Any, leaves: list[Any], mutated: list[Tensor]) -> Any:
    kind = structure[0]
    if kind == "leaf":
        return leaves[structure[1]]
    if kind == "python":  # a Python number in eager code: one in the graph too
        return RUNTIME_QUERIES["python_number"](leaves[structure[1]])
    if kind == "mutated":
        return mutated[structure[1]]
    if kind == "none":
        return None
    container, parts = structure
    items = [_rebuild(part, leaves, mutated) for part in parts]
    if hasattr(container, "_fields"):  # a named tuple (np.linalg.svd's SVDResult)
        return container(*items)
    return container(items)


# --- the op ------------------------------------------------------------------------------------
def _numpy_call_rule(types, *, function, arguments, keywords, mutated, result_types):
    """The result types the stand-ins gave (``result_types``: dtype, shape with None for each
    data-dependent size, scalar), then the mutated operands' own types."""
    results = [
        TensorType(tuple(data_dependent_size() if d is None else d for d in shape), np.dtype(dtype))
        for dtype, shape, _ in result_types
    ]
    return results + [types[i].strong() for i in mutated]


def _numpy_call_kernel(*operands, function, arguments, keywords, mutated, result_types):
    """Call the NumPy function on the operands (a copy of each mutated one) and check it returned
    what the graph was built for."""
    values = list(operands)
    for i in mutated:
        values[i] = np.array(values[i], copy=True, order="K")
    copies = [values[i] for i in mutated]
    return _checked_outputs(function, result_types, _call(function, arguments, keywords, values), copies)


def _checked_outputs(function: str, result_types: tuple, result: Any, copies: list[Any]) -> Any:
    """The op's outputs from what NumPy returned: its arrays, then the written copies; raises
    where they are not what the graph was built for."""
    leaves = result_leaves(result, copies)
    if len(leaves) != len(result_types):
        raise TypeError(
            f"{function} returned {len(leaves)} arrays where the graph was built for {len(result_types)}: "
            "how many depends on the values, which a graph cannot follow"
        )
    for k, (leaf, (dtype, shape, _)) in enumerate(zip(leaves, result_types)):
        _check_result(function, k, leaf, dtype, shape)
    outputs = (*leaves, *copies)
    return outputs[0] if len(outputs) == 1 else outputs  # one result is the value itself


def _check_result(function: str, k: int, leaf: Any, dtype: str, shape: tuple) -> None:
    actual_shape = np.shape(leaf)
    fits = leaf.dtype == np.dtype(dtype) and len(actual_shape) == len(shape)
    if not fits or any(d is not None and d != n for d, n in zip(shape, actual_shape)):
        expected = f"{np.dtype(dtype)}{list(d if d is not None else '?' for d in shape)}"
        raise TypeError(
            f"{function} returned {leaf.dtype}{list(actual_shape)} as result {k} where the graph was "
            f"built for {expected}: its result type depends on the values, which a graph cannot follow"
        )


def _kernel_for(*, function, arguments, keywords, mutated, result_types) -> Callable[..., Any]:
    """The kernel of one ``numpy_call`` op: a generated function that calls NumPy with the
    arguments written out and checks a single array or scalar result inline, so that the generic
    layer costs a function call over calling NumPy directly. Other calls (several results,
    written arguments) take ``_numpy_call_kernel``."""
    attrs = dict(function=function, arguments=arguments, keywords=keywords, mutated=mutated, result_types=result_types)
    if mutated or len(result_types) != 1:
        return functools.partial(_numpy_call_kernel, **attrs)
    namespace: dict[str, Any] = {"f": resolve(function), "general": functools.partial(_numpy_call_kernel, **attrs)}
    operands = iter(f"o{k}" for k in range(1 << 30))

    def source(template: Any) -> str:
        if template is SLOT:
            return next(operands)
        if type(template) in (list, tuple):
            items = "".join(f"{source(item)}, " for item in template)
            return f"[{items}]" if type(template) is list else f"({items})"
        name = f"c{len(namespace)}"
        namespace[name] = template
        return name

    call = [source(a) for a in arguments] + [f"{k}={source(v)}" for k, v in keywords]
    params = ", ".join(f"o{k}" for k in range(sum(1 for _ in _slots(arguments, keywords))))
    dtype, shape, _ = result_types[0]
    namespace.update(D=np.dtype(dtype), ndarray=np.ndarray, generic=np.generic)
    namespace["finish"] = functools.partial(_checked_outputs, function, result_types)
    shape_test = "".join(f" or r.shape[{k}] != {d}" for k, d in enumerate(shape) if d is not None)
    lines = [
        f"def call({params}):",
        f"    r = f({', '.join(call)})",
        "    if not isinstance(r, (ndarray, generic)) or (r.dtype is not D and r.dtype != D) or "
        f"r.ndim != {len(shape)}{shape_test}:",
        "        return finish(r, [])  # a structure, or a result the check names",
        "    return r",
    ]
    exec(compile("\n".join(lines) + "\n", f"<dy2st numpy_call {function}>", "exec"), namespace)
    return namespace["call"]


def _slots(arguments: tuple, keywords: tuple) -> Iterator[None]:
    def walk(template: Any) -> Iterator[None]:
        if template is SLOT:
            yield None
        elif type(template) in (list, tuple):
            for item in template:
                yield from walk(item)

    for a in arguments:
        yield from walk(a)
    for _, v in keywords:
        yield from walk(v)


# --- adjoint rules (dy2st.autodiff) ------------------------------------------------------------
NUMPY_CALL_ADJOINTS: dict[str, Callable[..., list[Any]]] = {}
"""The adjoint rule of a NumPy function the generic layer calls, by its name (``np.linalg.solve``);
the families whose functions they are register them (``ops/linalg.py``). A rule is only used for
a call of the plain form ``f(a, b, ...)``: operands as the positional arguments, no keywords."""


def emit_numpy_call(e: Emitter, function: str, *operands: Value, result: TensorType) -> Value:
    """Append a generic call ``function(*operands)`` with one array result of type ``result``."""
    result_types = ((result.dtype.str, tuple(int(d) for d in result.shape), result.ndim == 0),)
    attrs = dict(
        function=function, arguments=(SLOT,) * len(operands), keywords=(), mutated=(), result_types=result_types
    )
    return e.op(NUMPY_CALL, *operands, **attrs)


def _numpy_call_vjp(e: Emitter, op: Op, cts: list[Value | None]) -> list[Any]:
    rule = NUMPY_CALL_ADJOINTS.get(op.attrs["function"])
    if rule is None:
        raise DifferentiationError(
            f"cannot differentiate through {op.attrs['function']}: dy2st has no adjoint rule for it", op.loc
        )
    return rule(e, op, cts)


def require_plain_call(op: Op) -> None:
    """Refuse to differentiate a generic call other than ``f(a, b, ...)`` of its operands (keyword
    arguments, constants among the arguments, written arguments): its rule assumes that form."""
    if op.attrs["arguments"] != (SLOT,) * len(op.operands) or op.attrs["keywords"] or op.attrs["mutated"]:
        raise DifferentiationError(
            f"the gradient of {op.attrs['function']} called with other arguments than its arrays", op.loc
        )


def plain_call_rule(rule: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """``rule``, for the plain form ``f(a, b, ...)`` of a generic call only (others refused)."""

    def checked(e: Emitter, op: Op, cts: list[Value | None]) -> list[Any]:
        require_plain_call(op)
        return rule(e, op, cts)

    return checked


def _item_vjp(e: Emitter, op: Op, cts: list[Value | None]) -> list[Any]:
    """``x.item()``, ``x.item(k)``, ``x.item(i, j)``: the cotangent goes to that element."""
    (g,) = cts
    x = op.operands[0]
    arguments = op.attrs["arguments"]
    if g is None:
        return [None]
    if len(op.operands) != 1 or op.attrs["keywords"] or has_symbolic(x.type.shape):
        raise DifferentiationError(
            "the gradient of ndarray.item with array arguments or of a size known only at run time", op.loc
        )
    shape = tuple(int(n) for n in x.type.shape)
    where = arguments[1:]
    if len(where) == 1 and isinstance(where[0], tuple):
        where = where[0]
    if not where:
        index: tuple[int, ...] = (0,) * len(shape)
    elif len(where) == 1:
        index = tuple(int(k) for k in np.unravel_index(int(where[0]) % math.prod(shape), shape))
    else:
        index = tuple(int(k) for k in where)
    return [e.op("index_add", zeros(e, x), g, template=index)]


NUMPY_CALL_ADJOINTS["ndarray.item"] = _item_vjp


register(
    OpDef(
        NUMPY_CALL,
        _numpy_call_rule,
        _numpy_call_kernel,
        num_results=-1,
        views_any_operand=True,
        raises_when_run=True,
        kernel_factory=_kernel_for,
        doc="a NumPy function called when the graph runs (the generic layer)",
        vjp=_numpy_call_vjp,
    )
)


# --- stand-ins ---------------------------------------------------------------------------------
PROBE_ELEMENTS = 1 << 16
"""Stand-ins take the operands' sizes when these hold at most this many elements in all; else
small sizes (and the results get data-dependent sizes)."""

_SMALL = 3

VALUE_SIZED = frozenset(
    {
        *("np.unique", "np.unique_all", "np.unique_counts", "np.unique_inverse", "np.unique_values"),
        *("np.nonzero", "np.flatnonzero", "np.argwhere", "np.extract", "np.compress", "np.trim_zeros"),
        *("np.intersect1d", "np.union1d", "np.setdiff1d", "np.setxor1d", "np.repeat", "np.bincount"),
        *("np.delete", "np.insert", "np.histogram", "np.histogram_bin_edges", "np.histogram2d"),
        *("np.histogramdd", "np.select", "np.resize", "np.lib.stride_tricks.as_strided", "np.polyfit"),
        *("np.roots", "np.polydiv", "np.polymul", "np.polyadd", "np.polysub", "np.polyder", "np.polyint"),
        *("ndarray.nonzero", "ndarray.repeat", "ndarray.compress", "np.add.reduceat", "np.linalg.lstsq"),
        "np.arange",
    }
)
"""Functions whose result sizes may depend on the values (not only on the operands' sizes)."""


FILLINGS = ("typical", "positive", "random")
"""The stand-in values tried in turn, until the call on them succeeds: ``typical`` (zero integer
indices, alternating booleans, distinct floats, a Hermitian positive definite matrix where the
last two axes are square, full rank otherwise, complex values with imaginary parts), then
``positive`` (integers 1, 2, 3... and all-true booleans, identity boolean matrices: nonzero weights, increasing bins,
nonsingular integer matrices), then ``random`` (seeded normal floats and small integers: what a
reshaped or sliced positive definite matrix no longer is)."""


DECIDED_BY_TYPES = frozenset({"np.common_type", "np.min_scalar_type", "np.einsum_path", "np.can_cast", "np.iterable"})
"""Functions whose result the operands' dtypes and shapes alone decide: answered while the graph is
built, from the call on stand-ins, as a value of the graph (``np.common_type(x, y)`` is a type)."""
_VALUE_OF_0D = frozenset({"np.min_scalar_type"})  # of a 0-d array, it reads the value


def _stand_in(t: TensorType, shape: tuple[int, ...], scalar: bool, filling: str = "typical") -> Any:
    """An array (or Python number, for a weakly typed operand) most functions accept."""
    dtype = t.dtype
    if t.weak:
        return {"b": True, "i": 1, "u": 1, "f": 1.5, "c": 1.5 + 0.5j}[dtype.kind]
    size = math.prod(shape)
    if filling == "random":
        values = np.random.default_rng(0).standard_normal(shape) * 2.0
        if dtype.kind == "c":
            values = values + 1j * np.random.default_rng(1).standard_normal(shape)
        if dtype.kind == "b":
            array = values > 0
        else:
            array = (np.round(values) + 1 if dtype.kind in "iu" else values).astype(dtype)
        return array[()] if scalar and not shape else array
    if dtype.kind == "b" and filling == "positive" and _square(shape):
        array = np.broadcast_to(np.eye(shape[-1], dtype=bool), shape).copy()  # nonsingular
    elif dtype.kind == "b":
        array = np.ones(shape, bool) if filling == "positive" else (np.arange(size) % 2 == 0).reshape(shape)
    elif dtype.kind in "iu" and filling == "positive":
        array = (_square_dominant(shape) if _square(shape) else np.arange(1, size + 1).reshape(shape)).astype(dtype)
    elif dtype.kind in "iu":
        array = np.zeros(shape, dtype)
    elif dtype.kind in "fc":
        array = _floats(shape, complex_parts=dtype.kind == "c").astype(dtype)
    else:
        array = np.zeros(shape, dtype)
    return array[()] if scalar and not shape else array


def _square(shape: tuple[int, ...]) -> bool:
    return len(shape) >= 2 and shape[-1] == shape[-2]


def _square_dominant(shape: tuple[int, ...]) -> np.ndarray:
    """``(k + 2) * I + 1`` over the last two axes: symmetric, positive definite, integer."""
    k = shape[-1]
    return np.broadcast_to((k + 1) * np.eye(k, dtype=np.int64) + 1, shape)


def _floats(shape: tuple[int, ...], complex_parts: bool) -> np.ndarray:
    size = math.prod(shape)
    if _square(shape):
        k = shape[-1]
        matrix: Any = (k + 1) * np.eye(k) + 1.0
        if complex_parts:  # Hermitian: the imaginary part antisymmetric
            matrix = matrix + 0.25j * (np.triu(np.ones((k, k)), 1) - np.tril(np.ones((k, k)), -1))
        return np.broadcast_to(matrix, shape)
    values: Any = np.linspace(1.0, 2.0, size).reshape(shape)
    if len(shape) >= 2:  # full rank: a diagonal that dominates
        values = values + (max(shape[-2:]) + 1) * np.eye(shape[-2], shape[-1])
    if complex_parts:
        values = values + 0.5j * np.linspace(2.0, 1.0, size).reshape(shape)
    return values


def _copies(template: Any) -> Any:
    """``template`` with every array in it copied."""
    if isinstance(template, np.ndarray):
        return template.copy()
    if type(template) in (list, tuple):
        return type(template)(_copies(item) for item in template)
    return template


def _stand_in_shapes(operand_types: list[TensorType]) -> tuple[list[tuple[int, ...]], bool]:
    """The stand-ins' shapes, and whether those are the operands' own (static) sizes."""
    static = all(type(d) is int for t in operand_types for d in t.shape)
    sizes = [tuple(_hint(d) for d in t.shape) for t in operand_types]
    known: list[tuple[int, ...]] = [tuple(d for d in shape if d is not None) for shape in sizes]
    every_size_known = [len(s) for s in known] == [len(s) for s in sizes]  # no data-dependent one
    if every_size_known and sum(math.prod(shape) for shape in known) <= PROBE_ELEMENTS:
        return known, static
    return [tuple(d if d in (0, 1) else _SMALL for d in shape) for shape in sizes], False


def _hint(d: Any) -> int | None:
    if isinstance(d, SymExpr):
        return None if is_data_dependent(d) else d.hint
    return d


def _call_on_stand_ins(function: str, arguments: tuple, keywords: tuple, values: list[Any]) -> Any:
    """The call on stand-in operands, quietly (NumPy's warnings about stand-in values are not the
    user's). Arrays in the arguments are copies: the call must not write into a global array the
    function passes (``np.putmask(GLOBAL, ...)``)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return _call(function, _copies(arguments), _copies(keywords), values)


def _probe(function: str, arguments: tuple, keywords: tuple, tensors: list[Tensor], mutated: list[int]):
    """Call the function on stand-ins: (result, the stand-ins it was called with, whether they
    had the operands' own sizes). NumPy's complaint about the call is the user's error."""
    operand_types = [t.type for t in tensors]
    shapes, exact = _stand_in_shapes(operand_types)
    first_error: Exception | None = None
    for filling in FILLINGS:
        values = [_stand_in(t.type, shape, t._scalar, filling) for t, shape in zip(tensors, shapes)]
        for i in mutated:
            values[i] = np.array(values[i], copy=True)
        try:
            return _call_on_stand_ins(function, arguments, keywords, values), values, exact
        except Exception as error:
            first_error = first_error or error
    assert first_error is not None
    message = f"{function}: {type(first_error).__name__}: {first_error}"
    raise build_error(first_error, message, user_location(3)) from first_error


# --- staging -----------------------------------------------------------------------------------
# Functions that write into an argument, by the position of the argument they write.
_WRITES_ARGUMENT = {
    **dict.fromkeys(("np.put", "np.place", "np.copyto", "np.fill_diagonal", "np.put_along_axis"), 0),
    **dict.fromkeys(("ndarray.sort", "ndarray.fill", "ndarray.put", "ndarray.partition", "ndarray.itemset"), 0),
}


def _written_position(name: str) -> int | None:
    """The position of the argument ``name`` writes into (``np.add.at(a, ...)`` writes ``a``)."""
    if name.endswith(".at") and isinstance(getattr(resolve(name), "__self__", None), np.ufunc):
        return 0
    return _WRITES_ARGUMENT.get(name)


def stage_numpy_call(func: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Stage ``func(*args, **kwargs)`` as a ``numpy_call`` op (see the module docstring)."""
    name = callable_name(func)
    if name is None and is_numpy_object(func):
        name, args = CALL_OBJECT, (func, *args)
    if name is None:
        raise UnsupportedOpError(f"{_spelling(func)} is not a NumPy function dy2st can call", user_location(2))
    tensors, arguments, keywords = split_arguments(args, kwargs)
    mutated = _mutated(name, arguments, keywords)
    result, stand_ins, exact = _probe(name, arguments, keywords, tensors, mutated)
    mutated_stand_ins = [stand_ins[i] for i in mutated]
    if name in DECIDED_BY_TYPES and not any(t.ndim == 0 and name in _VALUE_OF_0D for t in tensors):
        return result  # a Python value the dtypes and shapes alone decide: the graph's constant
    leaves = result_leaves(result, mutated_stand_ins)
    _refuse_python_values(name, result, mutated_stand_ins)
    value_sized = (
        name in VALUE_SIZED or not exact or _sizes_follow_values(name, arguments, keywords, stand_ins, mutated, leaves)
    )
    result_types = tuple(
        (
            np.asarray(leaf).dtype.str,
            tuple(None if value_sized else int(d) for d in np.shape(leaf)),
            bool(np.ndim(leaf) == 0),
        )
        for leaf in leaves
    )
    outputs = apply(
        NUMPY_CALL,
        *tensors,
        function=name,
        arguments=arguments,
        keywords=keywords,
        mutated=tuple(mutated),
        result_types=result_types,
    )
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    results = outputs[: len(leaves)]
    for tensor, leaf in zip(results, leaves):
        # What the result may share memory with: the operands it shared memory with in the call
        # on stand-ins (np.flip gives a view, np.cumprod a new array, a NumPy scalar nothing).
        tensor._shares = tuple(
            pair for t, v in zip(tensors, stand_ins) if _may_share(leaf, v) for pair in t._shared_arrays()
        )
        tensor._scalar = isinstance(leaf, np.generic)
    for i, new in zip(mutated, outputs[len(leaves) :]):
        tensors[i]._assign(new, name)
    structure = _structure(result, mutated_stand_ins, iter(range(len(leaves))))
    return _rebuild(structure, results, [tensors[i] for i in mutated])


def _mutated(name: str, arguments: tuple, keywords: tuple) -> list[int]:
    """The operand positions the call writes into: its written argument, and ``out=``."""
    slots = _slot_positions(arguments, keywords)
    written = []
    position = _written_position(name)
    if position is not None and position < len(arguments) and arguments[position] is SLOT:
        written.append(slots[("arg", position)])
    for key, value in keywords:
        if key == "out" and value is not None:
            outs = value if type(value) is tuple else (value,)
            if any(v is not SLOT for v in outs):
                raise UnsupportedOpError(f"{name}: out= must be an array of the function", user_location(3))
            written.extend(slots[("out", k)] for k in range(len(outs)))
    return written


def _slot_positions(arguments: tuple, keywords: tuple) -> dict[tuple[str, int], int]:
    """Operand index of each positional argument that is a tensor, and of each ``out=`` tensor."""
    positions: dict[tuple[str, int], int] = {}
    counter = iter(range(1 << 30))

    def walk(value: Any, key: tuple[str, int] | None) -> None:
        if value is SLOT:
            index = next(counter)
            if key is not None:
                positions[key] = index
        elif type(value) in (list, tuple):
            for item in value:
                walk(item, None)

    for k, a in enumerate(arguments):
        walk(a, ("arg", k))
    for name, value in keywords:
        if name == "out" and type(value) is tuple:
            for k, item in enumerate(value):
                walk(item, ("out", k))
        else:
            walk(value, ("out", 0) if name == "out" else None)
    return positions


def _sizes_follow_values(
    name: str, arguments: tuple, keywords: tuple, stand_ins: list[Any], mutated: list[int], leaves: list[Any]
) -> bool:
    """Could the values of an integer or boolean operand set the sizes of the result
    (``np.pad(x, n)``, ``np.tile(x, reps)``, ``np.ix_(mask)``)? The call is made again with those
    operands changed (``_changed_value``): where a result size changes, or the call fails, the
    results get data-dependent sizes. Where none changes (``np.roll(x, k)``,
    ``np.take(x, idx)``), they keep static ones, which the op checks when the graph runs."""
    changed = [_changed_value(v) if _may_give_sizes(v) else v for v in stand_ins]
    if all(c is v for c, v in zip(changed, stand_ins)):
        return False
    changed = [np.array(v, copy=True) if k in mutated else v for k, v in enumerate(changed)]
    try:
        result = _call_on_stand_ins(name, arguments, keywords, changed)
    except Exception:
        return True
    again = result_leaves(result, [changed[k] for k in mutated])
    return [np.shape(leaf) for leaf in again] != [np.shape(leaf) for leaf in leaves]


def _may_give_sizes(stand_in: Any) -> bool:
    return np.asarray(stand_in).dtype.kind in "biu"


def _changed_value(stand_in: Any) -> Any:
    """Other values of an integer or boolean stand-in: each integer one more; booleans all true
    (all false where they were all true already), so that the count of true ones changes."""
    if np.asarray(stand_in).dtype.kind != "b":
        return stand_in + 1
    if not isinstance(stand_in, np.ndarray):
        return not stand_in
    return np.zeros_like(stand_in) if stand_in.all() else np.ones_like(stand_in)


def _may_share(result: Any, stand_in: Any) -> bool:
    return isinstance(result, np.ndarray) and isinstance(stand_in, np.ndarray) and np.may_share_memory(result, stand_in)


def _refuse_python_values(name: str, result: Any, mutated: list[Any]) -> None:
    """A result holding a string, a type or another object that is neither an array nor a number
    (``np.array2string``'s text): refused, naming the function and the object."""
    try:
        _structure(result, mutated, iter(range(1 << 30)))
    except TypeError as error:
        raise UnsupportedOpError(
            f"{name} returns a Python {error} here, which is neither an array nor a number: a converted "
            "function cannot hold it in its graph",
            user_location(3),
            "call it outside the function, or on values known when the function is converted",
        ) from None


def _spelling(func: Any) -> str:
    module = getattr(func, "__module__", None) or ""
    return f"{module}.{getattr(func, '__qualname__', repr(func))}".lstrip(".")


def stage_method(name: str, tensor: Tensor, args: tuple, kwargs: dict[str, Any]) -> Any:
    """``tensor.name(*args, **kwargs)`` for an ndarray method with no precise handler."""
    return stage_numpy_call(getattr(np.ndarray, name), (tensor, *args), kwargs)


def stage_ufunc_method(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict[str, Any]) -> Any:
    """``ufunc(...)`` with keywords dy2st has no rule for, or ``ufunc.method(...)``."""
    func = ufunc if method == "__call__" else getattr(ufunc, method)
    return stage_numpy_call(func, inputs, kwargs)


def _is_ndarray_method(name: str) -> bool:
    return isinstance(getattr(np.ndarray, name, None), types.MethodDescriptorType)


def _calling_numpy_with_tensors(func: Any) -> Callable[..., Any]:
    """``func`` as a converted function calls it: the generic layer where an argument is a
    tensor (NumPy functions that turn their argument into an array before any dispatch, such as
    ``np.ascontiguousarray``, would ask the tensor for its values), NumPy's own otherwise."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return stage_numpy_call(func, args, kwargs) if _holds_tensors(args, kwargs) else func(*args, **kwargs)

    call.__name__ = getattr(func, "__name__", "call")
    return call


def _holds_tensors(args: tuple, kwargs: dict[str, Any]) -> bool:
    """Is an argument a tensor, or a list or tuple holding one?"""
    return any(contains_tensor(a) for a in (*args, *kwargs.values()))


# NumPy functions that make an array of their argument, test its flags or iterate it before any
# dispatch could reach dy2st.
_EARLY_ARRAY_FUNCTIONS: tuple[Any, ...] = (
    *(np.ascontiguousarray, np.asfortranarray, np.require, np.asarray_chkfinite, np.isfortran, np.iterable),
    *(np.poly, np.roots, np.ravel_multi_index),
)
for _early in _EARLY_ARRAY_FUNCTIONS:
    CREATION_HANDLERS[_early] = _calling_numpy_with_tensors(_early)


def _isscalar(element: Any) -> bool:
    """``np.isscalar``: a NumPy scalar or a Python number in eager code (a 0-d result of an
    operation, ``x[0, 0]``) is one; an array, a 0-d one included, is not."""
    if isinstance(element, Tensor):
        return bool(element._scalar or element.type.weak)
    return bool(np.isscalar(element))


CREATION_HANDLERS[np.isscalar] = _isscalar


def _staged_numpy_callable(func: Any) -> Callable[..., Any] | None:
    """How a converted function calls ``func``, if it is NumPy's: a callable object the program
    made (``np.vectorize(f)``) through the generic layer where an argument is a tensor; a NumPy
    function, ufunc or ufunc method so that tensors in lists reach dy2st (``np.mean([a, b])``);
    None for any other callable."""
    if is_numpy_object(func):
        return _calling_numpy_with_tensors(func)
    if callable_name(func) is None:
        return None
    return _taking_tensors_in_lists(func)


def _taking_tensors_in_lists(func: Any) -> Callable[..., Any]:
    """``func`` called so that tensors inside list arguments reach dy2st. NumPy dispatches on an
    argument that is a tensor, and on the items of the lists some functions take
    (``np.stack([a, b])``), but makes an array of any other list first (``np.mean([a, b])``,
    ``np.exp([t, 1.0])``), asking each tensor in it for its values. Where it did, the call is made
    again with each positional list holding tensors staged as ``np.array(...)`` (what NumPy made
    of it), and where that is refused, through the generic layer, which passes NumPy the lists."""
    name = callable_name(func) or "np.asarray"

    def call(*args: Any, **kwargs: Any) -> Any:
        if not any(contains_tensor(a) and not isinstance(a, Tensor) for a in (*args, *kwargs.values())):
            return func(*args, **kwargs)
        try:
            return func(*args, **kwargs)
        except TensorValueError as error:
            if not error.array_protocol:
                raise
        try:
            arrays = [_staged_array(name, a) for a in args]
            return func(*arrays, **kwargs)
        except GraphBuildError:
            return stage_numpy_call(func, args, kwargs)

    call.__name__ = getattr(func, "__name__", "call")
    return call


def _staged_array(func_name: str, argument: Any) -> Any:
    """A positional argument as NumPy makes an array of it: a list or tuple holding tensors as
    staged ``np.array(...)``; anything else unchanged."""
    if type(argument) in (list, tuple) and contains_tensor(argument):
        return array_from_nested(func_name, argument)
    return argument


class _StagedVectorize(np.vectorize):
    """``np.vectorize(f)`` made in a converted function: called with tensors, a ``numpy_call``
    that runs it when the graph runs (``np.vectorize(f)(x)`` is one expression, so the call of
    the object does not pass ``convert_call``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _holds_tensors(args, kwargs):
            return stage_numpy_call(self, args, kwargs)
        return super().__call__(*args, **kwargs)


CREATION_HANDLERS[np.vectorize] = _StagedVectorize


def writes_argument(func: Any, kwargs: dict[str, Any]) -> bool:
    """Does calling ``func`` with these keywords write into one of its arguments (``out=``,
    ``np.add.at``, ``np.copyto``, ``ndarray.sort``...)?"""
    if kwargs.get("out") is not None:
        return True
    name = callable_name(func)
    return name is not None and _written_position(name) is not None


FALLBACKS["function"] = stage_numpy_call
FALLBACKS["writes_argument"] = writes_argument
FALLBACKS["object"] = _staged_numpy_callable
FALLBACKS["method"] = stage_method
FALLBACKS["ufunc"] = stage_ufunc_method
FALLBACKS["is_method"] = _is_ndarray_method
