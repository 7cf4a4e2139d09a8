"""The array API standard's entry point on tensors: ``x.__array_namespace__()``.

Code written for any array library asks the array for its namespace (``xp =
x.__array_namespace__()``) and calls functions through it (``xp.sum(x)``). For a NumPy array that
namespace is the ``numpy`` module itself, so the calls made through it are the NumPy calls the other
families stage. No op is emitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ops.arguments import build_error
from dy2st.staging.handlers import method

# Any ndarray answers like every other one: the namespace does not depend on shape or dtype.
_ANY_ARRAY = np.empty(0)


@method("__array_namespace__")
def array_namespace(tensor: Any, *args: Any, **kwargs: Any) -> Any:
    """``ndarray.__array_namespace__(*, api_version=None)``: the ``numpy`` module, with NumPy's own
    errors for an unsupported ``api_version`` or a positional argument."""
    try:
        return _ANY_ARRAY.__array_namespace__(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise build_error("ndarray.__array_namespace__", e) from None
