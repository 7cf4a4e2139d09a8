"""Symbolic dimensions: sizes known only when a graph runs.

A dimension of a ``TensorType`` is either an ``int`` or a ``SymExpr``, a polynomial with integer
coefficients over ``Symbol``s (``n0``, ``n0 - 2``, ``3*n0*n1``). Polynomials are kept in one
canonical form, so two sizes that the shape rules derive the same way compare equal: ``x[1:-1]``
and ``y[2:]`` of two arguments of length ``n0`` both have size ``n0 - 2``, and adding them needs no
check. An expression without symbols is the ``int`` itself (``SymExpr`` never holds a constant).

A symbol stands for one argument dimension (every argument dimension whose size the first
building call gave the same value shares it: "duck sizing") and carries that call's size as its
*hint*. Shape rules that must decide something about a symbolic size (is ``n0 >= 3``, for the
length of ``x[:3]``?) decide it from the hints and record the decision as a *guard*; a later call
uses the graph only where every guard holds for its own sizes (``Guard.holds``). Every symbolic
size is assumed to be at least 2 (a guard of every dynamic graph), so broadcasting never has to
ask whether a symbolic size is 1: sizes 0 and 1 get graphs of their own, as in PyTorch.

Where a rule needs a concrete Python int (``range(n)``, ``int(n)``, a Python call), the build
raises ``SymbolicSizeNeeded`` naming the symbols, and the caller builds again with those
dimensions static.

A *data-dependent* symbol (``u0``, ``u1``...) has no hint: it is the size of a result whose length
depends on the values (``x[x > 0]``, ``np.nonzero``, ``x[:k]`` with a tensor ``k``), read from that
result when the graph runs. It is at least 0. A decision about it that does not hold for every
allowed size cannot be guarded (no later call could check it before running), so ``decide``
raises ``DataDependentSize``; an op's rule that meets one is run again *size-obliviously*
(``infer_size_obliviously``): the undecidable decisions take the answer under which the op is
valid (sizes equal, no size 1), NumPy checks them when the op runs, and every result size the
decisions could have changed becomes a fresh data-dependent symbol.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Union

MIN_SYMBOLIC_SIZE = 2
"""Every symbolic size is at least this; smaller sizes are specialised (see the module doc)."""


class SymbolicSizeNeeded(Exception):
    """A build needed a symbolic size as a concrete number; ``symbols`` must be made static."""

    def __init__(self, symbols: frozenset[Symbol], why: str):
        super().__init__(f"{why}: the size {', '.join(sorted(s.name for s in symbols))} is known only at run time")
        self.symbols = symbols
        self.why = why


class DataDependentSize(Exception):
    """A build needed a data-dependent size as a number, or a decision about it that is not true
    for every size it may have: no graph can be specialised on it (the caller cannot make it
    static), so this is the user's error unless an op's rule can do without (``oblivious``)."""

    def __init__(self, symbols: frozenset[Symbol], why: str):
        Exception.__init__(self, f"{why}: the size depends on the values in the arrays")
        self.symbols = symbols
        self.why = why


def size_needed(symbols: frozenset[Symbol], why: str) -> Exception:
    """The error for sizes needed as numbers: ``SymbolicSizeNeeded`` (the caller makes them
    static), or ``DataDependentSize`` when a symbol has no hint (nothing can make it static)."""
    if any(s.hint is None for s in symbols):
        return DataDependentSize(symbols, why)
    return SymbolicSizeNeeded(symbols, why)


@dataclass(frozen=True, eq=False)
class Symbol:
    """One run-time size. Symbols compare by identity; ``name`` is how the IR prints them.

    Attributes:
        name: ``n0``, ``n1``... (argument sizes) or ``u0``, ``u1``... (data-dependent sizes),
            unique within one graph.
        hint: the size in the call that built the graph (shape decisions read it); None for a
            data-dependent size, which no call fixes.
    """

    name: str
    hint: int | None

    @property
    def least(self) -> int:
        """The smallest size the symbol may stand for."""
        return 0 if self.hint is None else MIN_SYMBOLIC_SIZE

    def __repr__(self) -> str:
        return self.name


Monomial = tuple[Symbol, ...]  # sorted by name; () is the constant term


def _monomial_key(monomial: Monomial) -> tuple[int, tuple[str, ...]]:
    return (-len(monomial), tuple(s.name for s in monomial))


class SymExpr:
    """A polynomial over symbols with integer coefficients, in canonical form (immutable).

    Arithmetic with ints and other expressions gives a ``SymExpr`` or, when every symbol cancels,
    an ``int``. ``==`` holds for equal forms; for other forms, and for ordering comparisons and
    ``bool``, a build decides from the symbols' hints and records a guard (``decide``).
    """

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: Mapping[Monomial, int]):
        items = sorted(((m, c) for m, c in terms.items() if c), key=lambda mc: _monomial_key(mc[0]))
        self.terms: tuple[tuple[Monomial, int], ...] = tuple(items)
        self._hash = hash(tuple((tuple(s.name for s in m), c) for m, c in self.terms))

    # --- construction ------------------------------------------------------------------------
    @staticmethod
    def of(symbol: Symbol) -> SymExpr:
        return SymExpr({(symbol,): 1})

    @staticmethod
    def _normal(terms: dict[Monomial, int]) -> Dim:
        terms = {m: c for m, c in terms.items() if c}
        if not terms:
            return 0
        if set(terms) == {()}:
            return terms[()]
        return SymExpr(terms)

    def _terms(self) -> dict[Monomial, int]:
        return dict(self.terms)

    @property
    def symbols(self) -> frozenset[Symbol]:
        return frozenset(s for m, _ in self.terms for s in m)

    # --- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other: Any) -> Dim:
        other_terms = _as_terms(other)
        if other_terms is None:
            return NotImplemented
        terms = self._terms()
        for m, c in other_terms.items():
            terms[m] = terms.get(m, 0) + c
        return SymExpr._normal(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return SymExpr._normal({m: -c for m, c in self.terms})

    def __sub__(self, other: Any) -> Dim:
        other_terms = _as_terms(other)
        if other_terms is None:
            return NotImplemented
        return self + SymExpr._normal({m: -c for m, c in other_terms.items()})

    def __rsub__(self, other: Any) -> Dim:
        return (-self) + other

    def __mul__(self, other: Any) -> Dim:
        other_terms = _as_terms(other)
        if other_terms is None:
            return NotImplemented
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other_terms.items():
                m = tuple(sorted(m1 + m2, key=lambda s: s.name))
                terms[m] = terms.get(m, 0) + c1 * c2
        return SymExpr._normal(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other: Any) -> Dim:
        """Exact division by a nonzero int (``3*n0 // 3``) or by a single term (``3*n0*n1 // n0``);
        anything else needs the value."""
        if isinstance(other, int) and other and all(c % other == 0 for _, c in self.terms):
            return SymExpr._normal({m: c // other for m, c in self.terms})
        if isinstance(other, SymExpr) and len(other.terms) == 1:
            quotient = self._divided_by_term(*other.terms[0])
            if quotient is not None:
                return quotient
        raise size_needed(self.symbols | _symbols_of(other), f"dividing {self} by {other}")

    def _divided_by_term(self, monomial: Monomial, coefficient: int) -> Dim | None:
        """``self / (coefficient * monomial)`` when every term divides exactly, else None."""
        terms: dict[Monomial, int] = {}
        for m, c in self.terms:
            rest = list(m)
            for s in monomial:
                if s not in rest:
                    return None
                rest.remove(s)
            if c % coefficient:
                return None
            terms[tuple(rest)] = c // coefficient
        return SymExpr._normal(terms)

    def __rfloordiv__(self, other: Any) -> Dim:
        raise size_needed(self.symbols, f"dividing {other} by {self}")

    def __mod__(self, other: Any) -> Dim:
        if isinstance(other, int) and other and all(c % other == 0 for _, c in self.terms):
            return 0
        if isinstance(other, SymExpr) and len(other.terms) == 1 and self._divided_by_term(*other.terms[0]) is not None:
            return 0
        raise size_needed(self.symbols | _symbols_of(other), f"{self} modulo {other}")

    def __rmod__(self, other: Any) -> Dim:
        raise size_needed(self.symbols, f"{other} modulo {self}")

    # --- values ---------------------------------------------------------------------------------
    def evaluate(self, sizes: Mapping[Symbol, int]) -> int:
        """The size for concrete symbol values."""
        total = 0
        for m, c in self.terms:
            term = c
            for s in m:
                term *= sizes[s]
            total += term
        return total

    @property
    def hint(self) -> int:
        """The value in the call that built the graph (a data-dependent size has none)."""
        sizes = {s: s.hint for s in self.symbols}
        if any(size is None for size in sizes.values()):
            raise DataDependentSize(self.symbols, f"the size {self} has no value before the graph runs")
        return self.evaluate(sizes)  # type: ignore[arg-type]  # no None left

    @property
    def data_dependent(self) -> bool:
        """Does the size depend on the values in the arrays (a symbol without a hint)?"""
        return any(s.hint is None for s in self.symbols)

    def __index__(self) -> int:
        raise size_needed(self.symbols, f"a Python int was needed for the size {self}")

    __int__ = __index__

    def __float__(self) -> float:
        raise size_needed(self.symbols, f"a Python float was needed for the size {self}")

    # --- comparisons ----------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Equal in form, or (while a graph is built) equal for the building call's sizes, with a
        guard: user code's ``len(x) == 5`` must not be False for a later call where it holds.
        Outside a build, where nothing decides a graph, only equal forms are equal. A
        data-dependent size is equal to another form only where it is provably: while the user's
        code is staged anything else is ``decide``'s error, in passes it is not equal."""
        if isinstance(other, SymExpr) and self.terms == other.terms:
            return True
        if _as_terms(other) is None:
            return NotImplemented
        difference = self - other
        if not isinstance(difference, SymExpr):
            return difference == 0
        if not _recorders:
            return False
        if difference.data_dependent and not (_staging or _oblivious):
            # A pass or backend asks whether two sizes are the same: provably, or not.
            return bool(_proven(difference, operator.eq))
        return decide(difference, operator.eq)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Any) -> bool:
        return decide(self - other, operator.lt)

    def __le__(self, other: Any) -> bool:
        return decide(self - other, operator.le)

    def __gt__(self, other: Any) -> bool:
        return decide(self - other, operator.gt)

    def __ge__(self, other: Any) -> bool:
        return decide(self - other, operator.ge)

    def __bool__(self) -> bool:
        return decide(self, operator.ne)

    # --- printing --------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.format()

    def format(self, name: Callable[[Symbol], str] = lambda symbol: symbol.name) -> str:
        """``3*n0*n1 + n0 - 1``, each symbol written as ``name`` says (also Python source)."""
        parts: list[str] = []
        for m, c in self.terms:
            body = "*".join(name(s) for s in m)
            magnitude = abs(c)
            text = str(magnitude) if not body else body if magnitude == 1 else f"{magnitude}*{body}"
            if not parts:
                parts.append(text if c > 0 else f"-{text}")
            else:
                parts.append(f"+ {text}" if c > 0 else f"- {text}")
        return " ".join(parts)

    __repr__ = __str__


Dim = Union[int, SymExpr]  # noqa: UP007 (a runtime alias; `int | SymExpr` needs SymExpr defined)


def _as_terms(value: Any) -> dict[Monomial, int] | None:
    if isinstance(value, SymExpr):
        return dict(value.terms)
    if isinstance(value, int) and not isinstance(value, bool):
        return {(): value}
    if hasattr(value, "__index__") and not isinstance(value, bool):
        try:
            return {(): operator.index(value)}
        except TypeError:
            return None
    return None


def _symbols_of(value: Any) -> frozenset[Symbol]:
    return value.symbols if isinstance(value, SymExpr) else frozenset()


def is_symbolic(dim: Any) -> bool:
    return isinstance(dim, SymExpr)


def has_symbolic(shape: tuple[Any, ...]) -> bool:
    """Does any dimension of ``shape`` have a size known only at run time?"""
    return any(isinstance(d, SymExpr) for d in shape)


def symbols_in(value: Any) -> frozenset[Symbol]:
    """The symbols of a size, or of the sizes in a (nested) tuple such as a shape."""
    if isinstance(value, tuple):
        found: frozenset[Symbol] = frozenset()
        for item in value:
            found |= symbols_in(item)
        return found
    return _symbols_of(value)


def same_form(a: Any, b: Any) -> bool:
    """Are two sizes the same int or the same polynomial (no decision, no guard)?"""
    if isinstance(a, SymExpr) or isinstance(b, SymExpr):
        return isinstance(a, SymExpr) and isinstance(b, SymExpr) and a.terms == b.terms
    return bool(a == b)


def joined_shape(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...] | None:
    """The shape of a value that is an ``a``-shaped array on one path and a ``b``-shaped one on
    another (the two branches of a tensor ``if``): sizes of the same form stay, sizes that differ
    where one is data-dependent become a fresh data-dependent size (read from the value when the
    graph runs). None where ranks or other sizes differ."""
    if len(a) != len(b):
        return None
    joined: list[Dim] = []
    for x, y in zip(a, b):
        if same_form(x, y):
            joined.append(x)
        elif is_data_dependent(x) or is_data_dependent(y):
            joined.append(data_dependent_size())
        else:
            return None
    return tuple(joined)


def may_match(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    """Can two shapes be the same when the graph runs: the same forms except where either size
    is data-dependent (an op writing one into the other checks them then)?"""
    return len(a) == len(b) and all(
        same_form(x, y) or is_data_dependent(x) or is_data_dependent(y) for x, y in zip(a, b)
    )


def fits(shape: tuple[Dim, ...], joined: tuple[Dim, ...]) -> bool:
    """Can a value of ``shape`` stand where ``joined`` is expected (``joined_shape``)?"""
    return len(shape) == len(joined) and all(same_form(x, y) or is_data_dependent(y) for x, y in zip(shape, joined))


def same_forms(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    """Are two shapes the same, size by size in form (no decision, no guard)?"""
    return len(a) == len(b) and all(same_form(x, y) for x, y in zip(a, b))


def evaluate_dim(dim: Dim, sizes: Mapping[Symbol, int]) -> int:
    return dim.evaluate(sizes) if isinstance(dim, SymExpr) else dim


def hint_of(dim: Dim) -> int:
    return dim.hint if isinstance(dim, SymExpr) else dim


def dim_product(dims: Any) -> Dim:
    total: Dim = 1
    for d in dims:
        total = total * d
    return total


# --- guards ----------------------------------------------------------------------------------------
RELATION_SYMBOLS: dict[Callable[[Any, Any], bool], str] = {  # how guards print (and are saved)
    operator.lt: "<",
    operator.le: "<=",
    operator.gt: ">",
    operator.ge: ">=",
    operator.eq: "==",
    operator.ne: "!=",
}


@dataclass(frozen=True, eq=False)
class Guard:
    """A decision a graph was built on: ``expr <relation> 0`` held for the building call."""

    expr: SymExpr
    relation: Callable[[Any, Any], bool]

    def __eq__(self, other: object) -> bool:
        # By form: comparing the expressions with ``==`` would make a decision of its own.
        return isinstance(other, Guard) and (self.expr.terms, self.relation) == (other.expr.terms, other.relation)

    def __hash__(self) -> int:
        return hash((self.expr, self.relation))

    def holds(self, sizes: Mapping[Symbol, int]) -> bool:
        return bool(self.relation(self.expr.evaluate(sizes), 0))

    def __str__(self) -> str:
        return f"{self.expr} {RELATION_SYMBOLS[self.relation]} 0"


_recorders: list[list[Guard]] = []


@contextlib.contextmanager
def recording_guards() -> Iterator[list[Guard]]:
    """Collect the guards of the decisions made while a graph is built (staged, optimized,
    compiled): the graph is valid exactly where all of them hold."""
    guards: list[Guard] = []
    _recorders.append(guards)
    try:
        yield guards
    finally:
        _recorders.pop()


@contextlib.contextmanager
def attempt_guards() -> Iterator[None]:
    """Record the guards of one attempt at staging a graph apart, and keep them only if it
    succeeds: a failed attempt's decisions (about its own symbols) guard nothing."""
    with recording_guards() as guards:
        yield
    if _recorders:
        _recorders[-1].extend(g for g in guards if g not in _recorders[-1])


def decide(expr: Dim, relation: Callable[[Any, Any], bool]) -> bool:
    """``relation(expr, 0)`` for the building call's sizes, recorded as a guard.

    Facts that hold for every allowed size (each symbol at least its ``least``, and the
    expression a sum of such products with nonnegative coefficients) are answered without a guard.
    Any other decision about a data-dependent size raises ``DataDependentSize`` (size-obliviously,
    ``oblivious`` answers it instead).
    """
    if not isinstance(expr, SymExpr):
        return bool(relation(expr, 0))
    proven = _proven(expr, relation)
    if proven is not None:
        return proven
    if expr.data_dependent:
        return _decide_data_dependent(expr, relation)
    result = bool(relation(expr.hint, 0))
    if not _recorders:
        why = f"deciding whether {expr} {RELATION_SYMBOLS[relation]} 0 outside a build"
        raise SymbolicSizeNeeded(expr.symbols, why)
    guard = Guard(expr, relation if result else _NEGATION[relation])
    if guard not in _recorders[-1]:
        _recorders[-1].append(guard)
    return result


def _proven(expr: SymExpr, relation: Callable[[Any, Any], bool]) -> bool | None:
    """``relation(expr, 0)`` when it holds, or fails, for every allowed size; else None."""
    lowest = _lower_bound(expr)
    if lowest is not None:  # expr >= lowest
        if (relation in (operator.gt, operator.ne) and lowest > 0) or (relation is operator.ge and lowest >= 0):
            return True
        if (relation in (operator.le, operator.eq) and lowest > 0) or (relation is operator.lt and lowest >= 0):
            return False
    negated = -expr
    highest = _lower_bound(negated) if isinstance(negated, SymExpr) else None
    if highest is not None:  # expr <= -highest
        if (relation in (operator.lt, operator.ne) and highest > 0) or (relation is operator.le and highest >= 0):
            return True
        if (relation in (operator.ge, operator.eq) and highest > 0) or (relation is operator.gt and highest >= 0):
            return False
    return None


class _Oblivious:
    """The state of a size-oblivious rule (``oblivious``): were sizes compared by order?"""

    def __init__(self) -> None:
        self.ordered = False


_oblivious: list[_Oblivious] = []
_staging: list[bool] = []


@contextlib.contextmanager
def staging_user_code() -> Iterator[None]:
    """Mark the staging of the user's code: there ``==`` of a data-dependent size with another
    form must be decided (an error, or size-obliviously in an op's rule), never just False."""
    _staging.append(True)
    try:
        yield
    finally:
        _staging.pop()


# A data-dependent size is taken to be this large where a size-oblivious rule orders it.
_OBLIVIOUS_SIZE = 1 << 20


def _decide_data_dependent(expr: SymExpr, relation: Callable[[Any, Any], bool]) -> bool:
    if not _oblivious:
        raise DataDependentSize(expr.symbols, f"deciding whether {expr} {RELATION_SYMBOLS[relation]} 0")
    if relation in (operator.eq, operator.ne):
        # Sizes an op needs equal are taken as equal: NumPy checks them when the op runs.
        return relation is operator.eq
    _oblivious[-1].ordered = True
    sizes = {s: _OBLIVIOUS_SIZE if s.hint is None else s.hint for s in expr.symbols}
    return bool(relation(expr.evaluate(sizes), 0))


@contextlib.contextmanager
def oblivious() -> Iterator[_Oblivious]:
    """Run a shape rule size-obliviously: a data-dependent size counts as at least 2 (never the 1
    of broadcasting), undecidable equalities hold (the op checks them when it runs), and orderings
    are decided for a large size, which ``ordered`` records (every result size may then differ)."""
    state = _Oblivious()
    _oblivious.append(state)
    try:
        yield state
    finally:
        _oblivious.pop()


_NEGATION: dict[Callable[[Any, Any], bool], Callable[[Any, Any], bool]] = {
    operator.lt: operator.ge,
    operator.ge: operator.lt,
    operator.le: operator.gt,
    operator.gt: operator.le,
    operator.eq: operator.ne,
    operator.ne: operator.eq,
}


def _lower_bound(expr: SymExpr) -> int | None:
    """The least value over allowed sizes when every non-constant coefficient is nonnegative."""
    total = 0
    for m, c in expr.terms:
        if m and c < 0:
            return None
        term = c
        for symbol in m:
            term *= _least(symbol)
        total += term
    return total


def _least(symbol: Symbol) -> int:
    """The least size of a symbol; size-obliviously a data-dependent size is not 0 or 1."""
    return MIN_SYMBOLIC_SIZE if _oblivious else symbol.least


def size_holds(a: Dim, relation: Callable[[Any, Any], bool], b: Dim = 0) -> bool:
    """``relation(a, b)`` for a pass or backend choosing how to run an op: decided (and guarded)
    for argument sizes, and for a data-dependent size true only where it holds for every size it
    may have (a choice must never depend on what the data will be)."""
    difference = a - b
    if isinstance(difference, SymExpr) and difference.data_dependent:
        return bool(_proven(difference, relation))
    return decide(difference, relation)


def dims_equal(a: Dim, b: Dim) -> bool:
    """Are two sizes equal for this build (provably, or by the hints with a guard)?"""
    if a == b:
        return True
    if isinstance(a, SymExpr) or isinstance(b, SymExpr):
        return decide(a - b, operator.eq)
    return False


def is_one(dim: Dim) -> bool:
    """Is a size 1 for this build (a symbolic size decided by the hints, with a guard)?"""
    if not isinstance(dim, SymExpr):
        return dim == 1
    lowest = _lower_bound(dim)
    if lowest is not None and lowest >= 2:
        return False
    return decide(dim - 1, operator.eq)


# --- data-dependent sizes -----------------------------------------------------------------------
_data_dependent_counts: list[list[int]] = [[0]]


def data_dependent_size() -> SymExpr:
    """A fresh data-dependent size (``u0``, ``u1``... numbered within the graph being built)."""
    counter = _data_dependent_counts[-1]
    symbol = Symbol(f"u{counter[0]}", None)
    counter[0] += 1
    return SymExpr.of(symbol)


@contextlib.contextmanager
def numbering_data_dependent_sizes() -> Iterator[None]:
    """Number the data-dependent sizes created inside the ``with`` from ``u0`` (one graph)."""
    _data_dependent_counts.append([0])
    try:
        yield
    finally:
        _data_dependent_counts.pop()


def is_data_dependent(dim: Any) -> bool:
    return isinstance(dim, SymExpr) and dim.data_dependent


def infer_size_obliviously(rule: Callable[[], Any]) -> Any:
    """Run a shape rule that met an undecidable decision about a data-dependent size again,
    size-obliviously (``oblivious``). Result sizes that involve a data-dependent size (a
    broadcast of ``u0`` with ``u1`` is either, or raises), or every result size when the rule
    ordered sizes (``x[:3]`` of ``u0`` elements has 3 or fewer), become fresh data-dependent sizes,
    read from the result when the op runs."""
    with oblivious() as state:
        result = rule()

    def fresh(t: Any) -> Any:
        if not (state.ordered or any(is_data_dependent(d) for d in t.shape)):
            return t
        shape = tuple(data_dependent_size() if state.ordered or is_data_dependent(d) else d for d in t.shape)
        return dataclasses.replace(t, shape=shape)

    if isinstance(result, (list, tuple)):
        return type(result)(fresh(t) for t in result)
    return fresh(result)


def broadcast_shapes(*shapes: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """``np.broadcast_shapes`` for shapes with symbolic sizes (raises NumPy's own ValueError)."""
    if not any(has_symbolic(s) for s in shapes):
        import numpy as np

        return tuple(np.broadcast_shapes(*shapes))
    ndim = max(len(s) for s in shapes)
    result: list[Dim] = []
    for axis in range(ndim):
        size: Dim | None = None
        for shape in shapes:
            k = axis - (ndim - len(shape))
            if k < 0:
                continue
            d = shape[k]
            if size is None or d == size:
                # Of two sizes taken as equal, keep one known without the data where there is one.
                size = size if is_data_dependent(d) and size is not None else d
                continue
            if is_one(d):
                continue
            if is_one(size):
                size = d
            elif not dims_equal(size, d):
                raise ValueError(
                    "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                    f"between {_format_shapes(shapes)}"
                )
        result.append(1 if size is None else size)
    return tuple(result)


def _format_shapes(shapes: tuple[tuple[Dim, ...], ...]) -> str:
    return " and ".join("(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")" for s in shapes)
