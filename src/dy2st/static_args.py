"""``to_static(static_argnums=..., static_argnames=...)``: the parameters whose values specialise
the graph (docs/daily-use.md, "Python numbers as graph inputs").

A call's Python floats and int64-sized ints are graph inputs by default, so that one graph
serves every value of a learning rate or a step count. A parameter named here is a compile-time
value instead: each new value builds (or finds) a graph of its own, and the function may use it
where a graph needs a value while it is built (a shape, an axis, ``math.exp(t)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

_NAMED_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def static_parameters(
    signature: inspect.Signature, argnums: int | Iterable[int] | None, argnames: str | Iterable[str] | None
) -> frozenset[str]:
    """The names of the parameters ``argnums`` (positions among the named positional parameters,
    negative from the last) and ``argnames`` designate; a clear error for one the signature lacks."""
    parameters = list(signature.parameters.values())
    positional = [p.name for p in parameters if p.kind in _NAMED_POSITIONAL]
    names = set()
    for position in _as_tuple(argnums, int, "static_argnums"):
        if not -len(positional) <= position < len(positional):
            raise ValueError(
                f"static_argnums={position}: the function has {len(positional)} named positional "
                f"parameter(s) ({', '.join(positional) or 'none'})"
            )
        names.add(positional[position])
    known = {p.name for p in parameters}
    for name in _as_tuple(argnames, str, "static_argnames"):
        if name not in known:
            raise ValueError(f"static_argnames={name!r}: the function has no parameter {name!r} ({', '.join(known)})")
        names.add(name)
    return frozenset(names)


def _as_tuple(given: Any, kind: type, option: str) -> tuple[Any, ...]:
    if given is None:
        return ()
    items = (given,) if isinstance(given, kind) else tuple(given)
    if not all(isinstance(item, kind) and not isinstance(item, bool) for item in items):
        raise TypeError(f"{option} takes {kind.__name__}s or a sequence of them, not {given!r}")
    return items


def shifted_past_self(argnums: int | Iterable[int] | None) -> int | tuple[int, ...] | None:
    """``static_argnums`` of a bound method converted as ``to_static(obj.method)``, which count
    the parameters after ``self``, as positions in the function's own signature."""
    if argnums is None:
        return None
    items = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    return tuple(k + 1 if isinstance(k, int) and not isinstance(k, bool) and k >= 0 else k for k in items)
