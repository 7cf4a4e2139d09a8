"""The runtime: helpers that converted code calls (through the ``_dy2st`` alias).

Each helper dispatches on its operands: Python values keep Python semantics (the helper just runs
the code), symbolic tensors are staged into graph ops.
"""

from dy2st.runtime.calls import convert_call, convert_print

__all__ = ["convert_call", "convert_print"]
