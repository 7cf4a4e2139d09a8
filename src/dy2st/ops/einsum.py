"""``np.einsum`` with a subscripts string: the shape rule parses the subscripts like NumPy does.

Explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``: the labels seen once, in alphabetical order)
outputs are supported, with ``...`` for broadcast dimensions and size-1 dimensions broadcasting
against their label. The sublist form (``einsum(a, [0, 1], b, [1, 2])``) is refused.

Before (user code)::

    scores = np.einsum("bqd,bkd->bqk", q, k)

After (IR)::

    %scores = einsum %q, %k {subscripts='bqd,bkd->bqk'} : f32[2,8,8]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, UnsupportedOpError, user_location
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.symbolic import broadcast_shapes
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents
from dy2st.ops.arguments import reject_unsupported
from dy2st.ops.shape import broadcast_like
from dy2st.staging.handlers import handles
from dy2st.staging.tensor import apply

_ELLIPSIS = "."  # "..." is collapsed to one character while parsing


def _split_subscripts(subscripts: str, num_operands: int) -> tuple[list[str], str | None]:
    text = subscripts.replace(" ", "")
    inputs_text, arrow, output = text.partition("->")
    inputs = inputs_text.split(",")
    if len(inputs) != num_operands:
        raise ValueError(f"{len(inputs)} subscript terms were given for {num_operands} operands")
    terms = [term.replace("...", _ELLIPSIS) for term in inputs]
    for term in terms + [output.replace("...", _ELLIPSIS)]:
        if term.count(_ELLIPSIS) > 1 or any(not (c.isalpha() or c == _ELLIPSIS) for c in term):
            raise ValueError(f"invalid subscripts {subscripts!r}")
    return terms, (output.replace("...", _ELLIPSIS) if arrow else None)


def _label_sizes(terms: list[str], shapes: list[tuple[int, ...]]) -> tuple[dict[str, int], tuple[int, ...]]:
    """The size of each label and the broadcast shape of the ellipsis dimensions."""
    sizes: dict[str, int] = {}
    ellipsis_shapes = []
    for term, shape in zip(terms, shapes):
        labels = term.replace(_ELLIPSIS, "")
        extra = len(shape) - len(labels)
        if extra < 0 or (extra > 0 and _ELLIPSIS not in term):
            written = term.replace(_ELLIPSIS, "...")
            raise ValueError(f"operand of shape {shape} does not match its subscripts {written!r}")
        dims = list(shape)
        if _ELLIPSIS in term:
            at = term.index(_ELLIPSIS)
            ellipsis_shapes.append(tuple(dims[at : at + extra]))
            del dims[at : at + extra]
        for label, size in zip(labels, dims):
            known = sizes.get(label, size)
            if known != size and 1 not in (known, size):
                raise ValueError(f"label {label!r} has size {known} in one operand and {size} in another")
            sizes[label] = size if known == 1 else known
    return sizes, tuple(int(d) for d in broadcast_shapes(*ellipsis_shapes)) if ellipsis_shapes else ()


def einsum_shape(subscripts: str, shapes: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The result shape of ``np.einsum(subscripts, *operands)`` for operands of these shapes."""
    terms, output = _split_subscripts(subscripts, len(shapes))
    sizes, ellipsis_shape = _label_sizes(terms, shapes)
    if output is None:
        counts = {label: sum(term.count(label) for term in terms) for label in sizes}
        output = _ELLIPSIS + "".join(sorted(label for label, n in counts.items() if n == 1))
    labels = output.replace(_ELLIPSIS, "")
    if len(set(labels)) != len(labels):
        raise ValueError(f"output subscript {output.replace(_ELLIPSIS, '...')!r} repeats a label")
    shape: list[int] = []
    for label in output:
        if label == _ELLIPSIS:
            shape.extend(ellipsis_shape)
        elif label not in sizes:
            raise ValueError(f"output subscript {label!r} does not appear in the input subscripts")
        else:
            shape.append(sizes[label])
    return tuple(shape)


def _einsum_rule(types, subscripts, optimize=False):
    dtype = np.result_type(*(t.dtype for t in types))
    return TensorType(einsum_shape(subscripts, [t.shape for t in types]), dtype)


def _einsum_kernel(*operands, subscripts, optimize=False):
    return np.einsum(subscripts, *operands, optimize=optimize)


def _einsum_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """The cotangent of operand ``k`` is the einsum of the result's cotangent with the other
    operands, into operand ``k``'s labels; labels that only operand ``k`` has and the output
    sums over come back by broadcasting (each element adds into every result the same way)."""
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    terms, output = _split_subscripts(op.attrs["subscripts"], len(op.operands))
    if output is None:
        counts = {label: "".join(terms).count(label) for label in set("".join(terms)) - {_ELLIPSIS}}
        output = (_ELLIPSIS if any(_ELLIPSIS in t for t in terms) else "") + "".join(
            sorted(label for label, n in counts.items() if n == 1)
        )
    if any(_ELLIPSIS in term for term in [*terms, output]):
        raise DifferentiationError("the gradient of np.einsum with '...' subscripts", op.loc)
    grads: list[Value | None] = []
    for k, (operand, term) in enumerate(zip(op.operands, terms)):
        if len(set(term)) != len(term):
            raise DifferentiationError(f"the gradient of np.einsum through a repeated label ({term!r})", op.loc)
        others = [(t, v) for j, (t, v) in enumerate(zip(terms, op.operands)) if j != k]
        seen = set(output).union(*(t for t, _ in others))
        kept = "".join(label for label in term if label in seen)
        subscripts = ",".join([output, *(t for t, _ in others)]) + "->" + kept
        grad = e.op("einsum", g, *(v for _, v in others), subscripts=subscripts)
        if kept != term:  # labels summed only here: broadcast back over them
            missing = tuple(k for k, label in enumerate(term) if label not in seen)
            grad = broadcast_like(e, e.op("expand_dims", grad, axes=missing), operand)
        grads.append(grad)
    return grads


register(OpDef("einsum", _einsum_rule, _einsum_kernel, doc="np.einsum with a subscripts string", vjp=_einsum_vjp))


@handles(np.einsum)
def einsum(*operands, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """Staged ``np.einsum(subscripts, *operands)``; ``optimize`` is passed through to NumPy."""
    if not operands or not isinstance(operands[0], str):
        raise UnsupportedOpError(
            "np.einsum in the sublist form (operand, [axes], ...) is not supported",
            user_location(),
            "write the subscripts as a string: np.einsum('ij,jk->ik', a, b)",
        )
    reject_unsupported("np.einsum", out=(out, None), dtype=(dtype, None), order=(order, "K"), casting=(casting, "safe"))
    if not isinstance(optimize, (bool, str)):
        raise UnsupportedOpError(
            "np.einsum: an explicit contraction path for optimize= is not supported",
            user_location(),
            "use optimize=True, False, 'greedy' or 'optimal'",
        )
    subscripts, *arrays = operands
    options = {"optimize": optimize} if optimize is not False else {}  # NumPy's default stays implicit
    return apply("einsum", *arrays, subscripts=subscripts, **options)
