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
# A NumPy scalar or 0-d array of one of these dtypes has a negative code naming its dtype too:
# the graph may carry it in a wider slot (``s = 0.0`` before a loop doing ``s = max(s, x[0])``
# with float32 ``x`` carries ``s`` as float64), and eager code returns ``np.float32`` there.
# Codes 1 and 0 remain "a NumPy scalar (a 0-d array) of the result's own dtype".
KIND_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip
_SCALAR_CODE_BASE = -1
_ARRAY_CODE_BASE = -33


def numpy_kind_code(dtype_name: str, scalar: bool) -> int:
    """The kind code of a NumPy scalar (``scalar``) or 0-d array of the dtype named ``dtype_name``."""
    if dtype_name not in KIND_DTYPE_NAMES:
        return KIND_CODES[NUMPY_SCALAR if scalar else ZERO_D_ARRAY]
    return (_SCALAR_CODE_BASE if scalar else _ARRAY_CODE_BASE) - KIND_DTYPE_NAMES.index(dtype_name)


def numpy_kind_of_code(code: int) -> tuple[str, bool] | None:
    """The dtype name and whether it is a scalar that a negative kind code names, else None."""
    for base, scalar in ((_SCALAR_CODE_BASE, True), (_ARRAY_CODE_BASE, False)):
        index = base - code
        if 0 <= index < len(KIND_DTYPE_NAMES):
            return KIND_DTYPE_NAMES[index], scalar
    return None


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

# A ``RETURNS_CALLER_ARRAY`` entry for a result that is one of several array objects, which one
# known only when the graph runs (a variable a tensor loop rotated through buffers, ``a, b = b,
# a``): ``(CALLER_ARRAY_FROM_OUTPUT, j, candidates)``, where return operand ``j`` is a 0-d int
# and ``candidates[k]`` the graph argument eager code returns when it is ``k``, or None for an
# array of the function's own (the result's value is then returned, as a new array).
CALLER_ARRAY_FROM_OUTPUT = "caller array from output"

# The attribute the ``in-place-updates`` pass sets on an op whose result it writes into the buffer
# of an operand that is dead afterwards: the index of that operand. The result is that buffer. A
# functional update (``setitem``: its ``OpDef.updates_operand``) then runs
# ``OpDef.in_place_kernel``, an elementwise ufunc its ``out=`` form. A fused group holds a tuple
# instead, one entry per result: the operand that result is written into, or None
# (``opdefs.in_place_results`` reads both forms).
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

# Opcodes of the tape a differentiated loop records its iterations on (defined in
# ``dy2st.ops.tape``; ``dy2st.autodiff`` emits them): a new empty tape, a push of the values an
# iteration starts from, a pop of the last pushed values, and whether any are left.
TAPE_NEW = "tape_new"
TAPE_PUSH = "tape_push"
TAPE_POP = "tape_pop"
TAPE_NONEMPTY = "tape_nonempty"
# The tape of a loop whose trip count is known when it starts (a rolled ``for ... in range``): one
# array per saved value, a row per iteration, allocated before the loop (``dy2st.ops.tape``); the
# iterations write and read their rows with ordinary indexing.
TAPE_ROWS_NEW = "tape_rows_new"
