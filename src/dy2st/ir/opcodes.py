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

# The ``return`` op's attribute giving, for each 0-d result, what eager code returns there: a
# NumPy scalar or a 0-d array (None for the other results). Ops may give either kind for a 0-d
# value, and optimizing changes which (``y * 1.0`` of a 0-d array is a scalar, simplified to
# ``y`` an array), so backends convert to the kind named here.
RESULT_KINDS = "result_kinds"
NUMPY_SCALAR = "scalar"
ZERO_D_ARRAY = "array"
# Where the kind depends on the path a tensor ``if`` or loop took, the entry is
# ``(KIND_FROM_OUTPUT, j)``: return operand ``j`` is an int8 kind code computed on that path
# (``KIND_CODES``), and the backend converts result ``i`` to it when the graph runs.
# Python numbers have a code per type: a zero-trip loop returns the ``0`` it started from as an
# int although the loop would have made it a float.
KIND_FROM_OUTPUT = "kind from output"
KIND_CODES = {ZERO_D_ARRAY: 0, NUMPY_SCALAR: 1, bool: 2, int: 3, float: 4, complex: 5}

# The ``return`` op's attribute giving, for each output, the index of the graph argument (input or
# capture) whose array the executor overwrites with it after the call, because the eager function
# updates that argument in place (None for the function's own results). Passes read it: the
# argument's buffer may then be updated in place during the call, as eager code does.
WRITES_BACK = "writes_back"

# The ``return`` op's attribute giving, for each of the function's results, the index of the graph
# argument (input or capture) whose very array object eager code returns there (``return C``
# after updating ``C`` in place, ``return x``), else None. The executor returns the caller's
# array itself (written back first), as eager code does, instead of a copy of its value.
RETURNS_CALLER_ARRAY = "returns_caller_array"

# The attribute the ``in-place-updates`` pass sets on an op whose result it writes into the buffer
# of an operand that is dead afterwards: the index of that operand. The result is that buffer. A
# functional update (``setitem``: its ``OpDef.updates_operand``) then runs
# ``OpDef.in_place_kernel``, an elementwise ufunc its ``out=`` form.
IN_PLACE_UPDATE = "in_place_update"

# The attributes the ``update-destinations`` pass sets on an elementwise op whose result an
# in-place update stores into a view of the updated array (the op writes it there with ``out=``),
# and on that update (its value is already in place: it does nothing).
WRITES_UPDATE = "writes_update"
VALUE_IN_PLACE = "value_in_place"
# Set besides ``writes_update`` where an operand of the op may share memory with the view it
# writes, other than as that very view: a tiled kernel then checks for overlap when it runs.
UPDATE_MAY_OVERLAP = "update_may_overlap"

# Opcodes the tracer emits itself (defined in ``dy2st.ops.python_numbers``): a Python number
# carried as a 0-d value, and the size of an argument's axis read when the graph runs (a symbolic
# size used as a number, ``GraphBuilder.size_value``).
AS_PYTHON_NUMBER = "as_python_number"
DIM = "dim"
