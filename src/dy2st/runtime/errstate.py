"""``with np.errstate(...)`` inside converted code: applied when the ops inside it run.

While a graph is built, ``np.errstate(divide="raise")`` in the user's function gives a
``StagedErrstate`` instead: entering it records the settings on the graph builder, which marks every
op emitted inside (``ERRSTATE_ATTR``); the generated executor runs each marked op inside
``with np.errstate(...)``, so ``FloatingPointError`` is raised (or a warning silenced) at run time
as eagerly. The settings also apply while the graph is built, so values computed then agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.staging.builder import GraphBuilder

_CATEGORIES = tuple(np.geterr())  # divide, over, under, invalid
_SETTINGS = ("all", *_CATEGORIES)


class StagedErrstate:
    """A ``np.errstate`` context manager for converted code (see the module docstring)."""

    def __init__(self, builder: GraphBuilder, settings: dict[str, str]):
        self.builder = builder
        self.settings = _expanded(settings)
        self.eager = np.errstate(**settings)  # type: ignore[arg-type]  # NumPy checks the values

    def __enter__(self) -> StagedErrstate:
        self.builder.errstates.append(self.settings)
        self.eager.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.eager.__exit__(*exc)
        self.builder.errstates.pop()


def _expanded(settings: dict[str, str]) -> dict[str, str]:
    """``all=`` spelled out per category (a later ``divide=`` in an inner block overrides it)."""
    unknown = set(settings) - set(_SETTINGS) - {"call"}
    if unknown or "call" in settings:
        raise UnsupportedOpError(
            f"np.errstate({', '.join(sorted(unknown | ({'call'} & set(settings))))}=...) is not supported in a "
            "converted function",
            user_location(),
            "use the categories all, divide, over, under and invalid",
        )
    expanded = {name: settings["all"] for name in _CATEGORIES} if "all" in settings else {}
    expanded.update({name: value for name, value in settings.items() if name != "all"})
    return expanded


def staged_errstate(builder: GraphBuilder):
    """What ``np.errstate`` is inside a function staged by ``builder``."""

    def errstate(**settings: str) -> StagedErrstate:
        return StagedErrstate(builder, settings)

    return errstate
