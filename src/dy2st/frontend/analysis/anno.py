"""Annotations: analysis facts stored on AST nodes under one namespaced attribute.

Converters read what the analyses wrote (``anno.get(node, LIVE_OUT)``) instead of recomputing it;
the facts stay attached to the node objects even after other converters rewrite their children.
"""

from __future__ import annotations

from typing import Any

_FIELD = "_dy2st_anno"

# Names each key maps to (all sets of variable names):
MODIFIED = "modified"  # written anywhere in the statement's blocks (if: both branches; loops: body)
LIVE_OUT = "live_out"  # live right after the statement
LIVE_HEAD = "live_head"  # loops: live at the loop head (before the test / the next item)


def set(node: Any, key: str, value: Any) -> None:  # noqa: A001 (mirrors dict vocabulary)
    """Attach ``value`` to ``node`` under ``key`` (analyses re-run may refresh a fact)."""
    facts = node.__dict__.setdefault(_FIELD, {})
    facts[key] = value


def get(node: Any, key: str, default: Any = None) -> Any:
    return node.__dict__.get(_FIELD, {}).get(key, default)


def has(node: Any, key: str) -> bool:
    return key in node.__dict__.get(_FIELD, {})
