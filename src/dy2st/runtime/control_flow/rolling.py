"""Which ``for`` loops over a Python ``range`` roll into a ``while_loop``, and which unroll.

``for t in range(T)`` with ``T`` a Python int used to run ``T`` times while the graph was built,
leaving ``T`` copies of its body in the graph: build time and op count grew with the trip count.
Now such a loop is staged once as a ``while_loop`` whose counter is a tensor (``t`` is a 0-d int64
tensor that behaves like a Python int, as in a loop over a tensor range), so a stencil stepped a
thousand times builds as fast as one stepped ten times.

Rolling is speculative. A body may need the counter as a concrete Python value (indexing a Python
list of arrays, ``np.zeros(t)``, a slice ``A[i, :i]`` whose size would change with the counter), or
code after the loop may need a Python value the loop computed. That surfaces as an exception while
the graph is built; the build then starts again with that loop unrolled (``trace`` retries, see
``runtime/staging.py``). The loop to unroll is the innermost rolled loop the exception passed
through, or, for an exception raised after the loops, every loop rolled so far. Each retry unrolls
at least one more loop, so the build ends: in the worst case every loop is unrolled, which is how
every Python-range loop was built before, and a genuine error in the user's code is raised from
that build as it always was.

A loop over the rows of a tensor of static length (``for row in X``, ``enumerate(X)``, ``zip``)
is always rolled (no decision is printed for it); when an exception leaves its body and it has at
most ``UNROLL_ROWS_AT_MOST`` rows, the next attempt unrolls it over the rows (a Python list
appended to in the body), else the exception is raised as it is.

Loops of at most ``UNROLL_AT_MOST`` iterations stay unrolled: a loop over three axes or two
halves gains nothing from a loop op, and constant indices keep their static shapes. Every decision
is kept per build (``RollingPolicy.decisions``); ``dy2st dump --ir`` prints them above the graph,
and the ``dy2st`` logger reports them at DEBUG level.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from dy2st.errors import SourceLocation

UNROLL_AT_MOST = 4  # a loop over a Python range of at most this many iterations stays unrolled
UNROLL_ROWS_AT_MOST = 1024  # a failing loop over more rows raises at once, not after unrolling them
_MAX_ATTEMPTS = 64  # builds of one graph; each retry unrolls at least one more loop

logger = logging.getLogger("dy2st")
_state = threading.local()


@dataclass(frozen=True)
class LoopDecision:
    """How one ``for`` loop over a Python range was built.

    Attributes:
        loc: the loop's line in the user's source.
        rolled: staged as one ``while_loop`` op (True) or unrolled while the graph was built.
        iterations: the loop's trip count the first time it ran.
        reason: why it was unrolled ("" when rolled).
    """

    loc: SourceLocation
    rolled: bool
    iterations: int
    reason: str = ""

    def __str__(self) -> str:
        where = f"{self.loc.short}" + (f":{self.loc.col + 1}" if self.loc.col is not None else "")
        if self.rolled:
            return f"loop at {where}: rolled into a while_loop ({self.iterations} iterations)"
        return f"loop at {where}: unrolled ({self.iterations} iterations): {self.reason}"


class RollingPolicy:
    """The rolling decisions of one attempt at building a graph.

    Attributes:
        unrolled: loops to unroll in this attempt, and why (what failed when they were rolled).
        decisions: the first decision taken for each loop in this attempt, in the order taken.
        rolled: the loops staged as ``while_loop`` ops in this attempt.
        blamed: the innermost rolled loop an exception passed through, if any.
    """

    def __init__(self, unrolled: dict[SourceLocation, str], enabled: bool = True):
        self.unrolled = unrolled
        self.enabled = enabled
        self.decisions: dict[SourceLocation, LoopDecision] = {}
        self.rolled: list[SourceLocation] = []
        self.blamed: SourceLocation | None = None

    def should_roll(self, iterations: int, loc: SourceLocation | None) -> bool:
        """Roll this loop (``loc`` is its line; None only outside user code)?"""
        if loc is None:
            return False
        if iterations <= UNROLL_AT_MOST:
            reason = f"loops of at most {UNROLL_AT_MOST} iterations stay unrolled"
            self._decide(LoopDecision(loc, False, iterations, reason))
            return False
        if loc in self.unrolled or not self.enabled:
            reason = self.unrolled.get(loc, "too many attempts at rolling the loops of this function")
            self._decide(LoopDecision(loc, False, iterations, reason))
            return False
        self._decide(LoopDecision(loc, True, iterations))
        if loc not in self.rolled:
            self.rolled.append(loc)
        return True

    def should_roll_rows(self, iterations: int, loc: SourceLocation | None) -> bool:
        """Roll this loop over a tensor of a static length (``for row in X``)? Always, unless
        rolling it failed in an earlier attempt (a Python list appended to in its body): then
        it unrolls over the rows, as eager Python iterates them."""
        if loc is not None and loc in self.unrolled:
            self._decide(LoopDecision(loc, False, iterations, self.unrolled[loc]))
            return False
        return True

    def _decide(self, decision: LoopDecision) -> None:
        if decision.loc not in self.decisions:
            self.decisions[decision.loc] = decision
            logger.debug("%s", decision)

    def blame(self, loc: SourceLocation) -> None:
        """An exception is leaving the rolled loop at ``loc``: the innermost such loop is blamed."""
        if self.blamed is None:
            self.blamed = loc

    def unroll_after(self, error: BaseException) -> bool:
        """After ``error`` ended this attempt, mark the loops to unroll in the next one.

        Returns False when no rolled loop is left to unroll: the error is the user's, as it was
        before loops rolled, and must be raised.
        """
        if not self.enabled:
            return False
        what = _first_line(error)
        if self.blamed is not None and self.blamed not in self.unrolled:
            self.unrolled[self.blamed] = f"its body needs the counter or a value as a Python value ({what})"
            return True
        pending = [loc for loc in self.rolled if loc not in self.unrolled]
        for loc in pending:
            self.unrolled[loc] = f"code after the loop needs a value it computes as a Python value ({what})"
        return bool(pending)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def current_policy() -> RollingPolicy | None:
    """The policy of the graph being built on this thread, if any."""
    policies = getattr(_state, "policies", None)
    return policies[-1] if policies else None


@contextlib.contextmanager
def rolling(policy: RollingPolicy) -> Iterator[RollingPolicy]:
    """Make ``policy`` the one loops consult while a graph is built on this thread."""
    if not hasattr(_state, "policies"):
        _state.policies = []
    _state.policies.append(policy)
    try:
        yield policy
    finally:
        _state.policies.pop()


def attempts() -> Iterator[RollingPolicy]:
    """The policies of successive attempts at one build, each unrolling what the last one blamed.

    The caller builds under ``rolling(policy)`` and stops iterating once a build succeeds; when one
    fails it calls ``policy.unroll_after(error)`` and re-raises if that returns False.
    """
    unrolled: dict[SourceLocation, str] = {}
    for _ in range(_MAX_ATTEMPTS - 1):
        yield RollingPolicy(unrolled)
    yield RollingPolicy(unrolled, enabled=False)  # the build of old: every loop unrolled
