"""Where a loop's stores and the views it carries fall, from one iteration to the next.

A recursive filter stores into column ``j`` and carries on a view of the column it stored into
(``y_prev = forward[:, j]``); the next iteration stores into column ``j + 1``. Whether that store
changes what the carried view holds decides whether the graph's value semantics (the carried view
keeps what it held) give eager NumPy's answer (the view shows the store). ``indices_apart`` answers
it from the index arithmetic alone: along some axis both index with an int, the store's index at an
iteration and the view's at the one before differ by a nonzero constant smaller than the axis. The
staging of a loop (``runtime/control_flow/loops.py``) and the compiled tier's overlap checks
(``backend/numba/carried_views.py``) both ask it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.core import Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, CONST
from dy2st.ir.opdefs import get_op
from dy2st.ops.indexing import TENSOR_SLOT

# Index arithmetic deeper than this is not followed (no constant difference is found).
_MOST_STEPS = 16
# The ufuncs of the Python operators an affine index is made of.
_OPERATOR_OF_UFUNC: dict[Any, str] = {np.add: "+", np.subtract: "-", np.negative: "-", np.multiply: "*"}


def literal_int(value: Value) -> int | None:
    """The value of a literal Python int, else None."""
    owner = value.owner
    if not isinstance(owner, Op) or owner.name != CONST or type(owner.attrs["value"]) is not int:
        return None
    return int(owner.attrs["value"])


def steps_by_one(loop: Op, index: int) -> bool:
    """Does the loop's carried value ``index`` go up by one at each iteration (``i = i + 1``)?
    The lowering marks such a counter ``counted_loop`` when nothing else reads the increment; an
    outer loop whose ``i + 1`` starts an inner range is not marked, and is a counter too."""
    if loop.attrs.get("counted_loop") == index:
        return True
    body = loop.regions[1].block
    step = body.ops[-1].operands[index]
    while isinstance(step.owner, Op) and step.owner.name == AS_PYTHON_NUMBER:
        step = step.owner.operands[0]
    op = step.owner
    if not isinstance(op, Op) or _python_operator(op) != "+" or len(op.operands) != 2:
        return False
    counter = body.args[index]
    others = [v for v in op.operands if v is not counter]
    return len(others) == 1 and literal_int(others[0]) == 1


def indices_apart(loop: Op, sizes: tuple, stored: tuple[tuple[Any, ...], list[Value]], view: Op) -> bool:
    """Is there an axis both index with an int, where the store's index at an iteration and the
    view's at the one before differ by a nonzero constant smaller than the axis (so that both,
    valid, are different positions)?

    Args:
        loop: the ``while_loop`` whose body holds the store and the view op.
        sizes: the shape of the array stored into.
        stored: the store's index template and its index operands.
        view: the op (in the body) taking the view the loop carries to the next iteration.
    """
    body = loop.regions[1].block
    counters = [arg for arg in body.args if arg.type.ndim == 0 and steps_by_one(loop, arg.index)]
    stored_items = _int_items(*stored)
    view_items = _int_items(view.attrs["template"], view.operands[1:])
    for axis in stored_items.keys() & view_items.keys():
        size = sizes[axis] if axis < len(sizes) else None
        if not isinstance(size, int):
            continue
        for counter in counters:
            now, before = _affine(stored_items[axis], counter), _affine(view_items[axis], counter)
            if now is None or before is None or now[0] != before[0]:
                continue
            # The store's index at iteration t + 1 less the view's at t: the counter went up by one.
            distance = now[0] + now[1] - before[1]
            if 0 < abs(distance) < size:
                return True
    return False


def _int_items(template: tuple[Any, ...], tensors: list[Value]) -> dict[int, Value | int]:
    """The axes an index picks one position of, each with its int or 0-d integer operand; axes
    up to the first item that is not an int or a slice (``None``, ``...``)."""
    found: dict[int, Value | int] = {}
    remaining = iter(tensors)
    for axis, item in enumerate(template):
        if isinstance(item, slice):
            for bound in (item.start, item.stop, item.step):
                if bound is TENSOR_SLOT:
                    next(remaining)
        elif item is TENSOR_SLOT:
            found[axis] = next(remaining)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)):
            found[axis] = int(item)
        else:
            break
    return found


def _affine(index: Value | int, counter: Value, steps: int = 0) -> tuple[int, int] | None:
    """``(a, b)`` where the Python int ``index`` is ``a * counter + b`` (``j``, ``j - 1``,
    ``n - 1 - j`` for a literal ``n``), else None."""
    if isinstance(index, int):
        return 0, index
    while isinstance(index.owner, Op) and index.owner.name == AS_PYTHON_NUMBER:
        index = index.owner.operands[0]
    if index is counter:
        return 1, 0
    literal = literal_int(index)
    if literal is not None:
        return 0, literal
    op = index.owner
    symbol = _python_operator(op) if isinstance(op, Op) else None
    if steps > _MOST_STEPS or not isinstance(op, Op) or symbol is None:
        return None
    if not all(v.type.weak and v.type.dtype.kind in "iu" for v in op.operands):
        return None  # Python's operators on Python ints: exact
    parts = [_affine(v, counter, steps + 1) for v in op.operands]
    if any(part is None for part in parts):
        return None
    return _combine(symbol, [p for p in parts if p is not None])


def _python_operator(op: Op) -> str | None:
    """The Python operator ``op`` computes (``+``, ``-``, ``*``): the one the lowering marked
    (``python_operator``), or, in a graph not lowered yet (a loop being staged), the one of its
    ufunc when its operands are all Python ints."""
    if "python_operator" in op.attrs:
        return op.attrs["python_operator"]
    if not op.operands or not all(v.type.weak and v.type.dtype.kind in "iu" for v in op.operands):
        return None
    return _OPERATOR_OF_UFUNC.get(get_op(op.name).ufunc)


def _combine(symbol: str, parts: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The affine form of a Python operator applied to affine forms, where it is one."""
    if symbol == "-" and len(parts) == 1:
        return -parts[0][0], -parts[0][1]
    if len(parts) != 2:
        return None
    (a, b), (c, d) = parts
    if symbol == "+":
        return a + c, b + d
    if symbol == "-":
        return a - c, b - d
    if symbol == "*" and (a == 0 or c == 0):
        return a * d + c * b, b * d
    return None
