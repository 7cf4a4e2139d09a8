"""Names the frontend writes into converted code and the runtime reads back.

Both layers import them from here (the frontend never imports the runtime): the alias converted
code reaches the runtime helpers by, and the stem of the variable a lowered ``return`` assigns,
which error messages call "the return value".
"""

RUNTIME_ALIAS = "_dy2st"
RETURN_VALUE_STEM = "retval"
