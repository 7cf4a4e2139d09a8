"""The structural opcodes: the IR's own vocabulary.

Constants, structured control flow and block terminators are run by every backend itself rather
than through a kernel. Code outside ir/ and ops/ names them through these constants (re-exported
by ``dy2st.ir.core``); every other op is described by the traits of its OpDef
(``dy2st.ir.opdefs``), never by its name.
"""

CONST = "const"
COND = "cond"
WHILE_LOOP = "while_loop"
YIELD = "yield"
RETURN = "return"
TERMINATORS = frozenset({YIELD, RETURN})
