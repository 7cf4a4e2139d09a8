"""The runtime of converted ``if``/``while``/``for``, and the public ``cond`` and ``while_loop``.

Each helper keeps Python semantics when the condition or iterable is a Python value (the code
simply runs) and stages a graph op when it is a symbolic tensor:

  * ``convert_ifelse`` / ``cond``: a ``cond`` op with one region per branch (``cond.py``);
  * ``convert_while_loop`` / ``while_loop``: a ``while_loop`` op (``loops.py``);
  * ``convert_for`` with ``for_range``/``for_enumerate``/``for_zip``: a ``while_loop`` over a
    counter when the bound or the iterable is a tensor (``iterables.py``);
  * ``Undefined``: what a variable holds on a path that has not assigned it (``undefined.py``);
  * the run-time check of a variable a tensor loop may never have assigned (``assigned.py``), and
    the refusal of Python containers a tensor loop changes in place (``containers.py``).
"""

from dy2st.runtime.control_flow.cond import cond, convert_ifelse, convert_ifexp
from dy2st.runtime.control_flow.iterables import (
    convert_for,
    for_enumerate,
    for_range,
    for_zip,
    iterate_until,
    python_bool,
    python_iterable,
)
from dy2st.runtime.control_flow.loops import convert_while_loop, while_loop
from dy2st.runtime.control_flow.undefined import Undefined
from dy2st.runtime.control_flow.values import returned

__all__ = [
    "Undefined",
    "cond",
    "convert_for",
    "convert_ifelse",
    "convert_ifexp",
    "convert_while_loop",
    "for_enumerate",
    "for_range",
    "for_zip",
    "iterate_until",
    "python_bool",
    "python_iterable",
    "returned",
    "while_loop",
]
