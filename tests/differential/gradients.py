"""The gradient check of a generated program: ``dy2st.grad`` against central finite differences.

The program's first call picks the point. A loss function is appended to the program's module:
it calls ``program`` and sums every floating-point leaf of its result, so that any program whose
result holds floats has a scalar to differentiate. The gradient with respect to each float64
array argument is compared with central differences of the eager loss. Where the eager loss is
not smooth at that point (a perturbation flips a branch, a loop's trip count, or an integer
conversion: forward and backward differences disagree) or eager code raises, the program is skipped: finite
differences say nothing there.

Where the loss is smooth, forward and backward differences agree to about ``STEP`` times its
curvature; their mean (the central difference) is then accurate to ``STEP**2``.
"""

from __future__ import annotations

import copy
import enum
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import dy2st

from .program import Program
from .running import load_module

STEP = 1e-6
RTOL = 1e-5


class GradientOutcome(enum.IntEnum):
    PASSED = 0
    SKIPPED = 1  # nothing to compare: no float64 argument or result, eager raised, not smooth
    REFUSAL = 2  # a dy2st error on code eager NumPy runs (no adjoint rule, a build refusal)
    CRASH = 3  # an exception that is not a dy2st error
    MISMATCH = 4  # a gradient that differs from finite differences


@dataclass(frozen=True)
class GradientResult:
    outcome: GradientOutcome
    signature: str  # what went wrong, without names and numbers
    detail: str = ""


def float_leaf_paths(value: Any, path: str = "r") -> list[str]:
    """Expressions reading each floating-point leaf of a result (``r[0]``, ``r['w']``)."""
    if isinstance(value, (tuple, list)):
        return [p for i, item in enumerate(value) for p in float_leaf_paths(item, f"{path}[{i}]")]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in float_leaf_paths(item, f"{path}[{key!r}]")]
    if isinstance(value, (np.ndarray, np.floating, float)) and np.asarray(value).dtype.kind == "f":
        return [path]
    return []


def loss_source(arity: int, paths: list[str]) -> str:
    parameters = ", ".join(f"a{i}" for i in range(arity))
    total = " + ".join(f"np.sum({p})" for p in paths)
    return f"\n\ndef loss({parameters}):\n    r = program({parameters})\n    return {total}\n"


def _eager(fn, args: tuple[Any, ...]) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*copy.deepcopy(args))


def one_sided_differences(loss, args: tuple[Any, ...], k: int, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Forward and backward differences of the eager loss in argument ``k``, element by element.
    Their mean is the central difference; where they disagree the loss has a kink there (a
    branch or ``max`` switching exactly at this point), and no gradient is *the* gradient."""
    x = args[k]
    here = float(_eager(loss, args))
    forward, backward = np.zeros(x.shape), np.zeros(x.shape)
    for index in np.ndindex(x.shape):
        h = step * max(1.0, abs(float(x[index])))
        for sign, out in ((1.0, forward), (-1.0, backward)):
            moved = x.copy()
            moved[index] += sign * h
            out[index] = sign * (float(_eager(loss, (*args[:k], moved, *args[k + 1 :]))) - here) / h
    return forward, backward


def check_gradients(program: Program, directory: Path, global_seed: int | None = None) -> GradientResult:
    """Compare dy2st.grad with finite differences on the program's first call, NumPy's global
    random stream seeded by ``global_seed`` (the program's seed by default; put back after): what
    a program draws from it then does not depend on what ran before."""
    outer = np.random.get_state()
    np.random.seed(program.seed if global_seed is None else global_seed)
    try:
        return _check_gradients(program, directory)
    finally:
        np.random.set_state(outer)


def _check_gradients(program: Program, directory: Path) -> GradientResult:
    call = program.calls[0]
    if call.kwargs:
        return GradientResult(GradientOutcome.SKIPPED, "keyword arguments")
    module = load_module(program.source, directory, f"gradient_{program.family}_{program.seed}")
    try:
        result = _eager(module.program, call.args)
    except Exception:
        return GradientResult(GradientOutcome.SKIPPED, "eager raises")
    paths = float_leaf_paths(result)
    wrt = [
        k
        for k, a in enumerate(call.args)
        if isinstance(a, np.ndarray) and a.dtype == np.float64 and 0 < a.size <= 64 and np.all(np.isfinite(a))
    ]
    if not paths or not wrt:
        return GradientResult(GradientOutcome.SKIPPED, "no float64 argument or float result")
    path = Path(module.__file__ or "")
    path.write_text(program.source + loss_source(len(call.args), paths))
    module = load_module(path.read_text(), directory, f"gradient_{program.family}_{program.seed}")
    states = _random_states(module)
    loss = _replaying_random_draws(module.loss, states)
    for k in wrt:
        forward, backward = one_sided_differences(loss, call.args, k, STEP)
        fine = (forward + backward) / 2
        smooth = np.allclose(forward, backward, rtol=1e-3, atol=1e-4 * max(1.0, float(np.max(np.abs(fine)))))
        if not np.all(np.isfinite(fine)) or not smooth:
            return GradientResult(GradientOutcome.SKIPPED, "the loss is not smooth at this point")
        if not _resolves_the_step(loss, call.args, k, fine):
            return GradientResult(GradientOutcome.SKIPPED, "the loss rounds away the finite-difference step")
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                _restore(states)
                got = dy2st.grad(module.loss, argnums=k)(*copy.deepcopy(call.args))
        except dy2st.Dy2stError as error:
            return GradientResult(GradientOutcome.REFUSAL, _first_line(error), str(error))
        except Exception as error:  # a crash: the comparison is about which exception
            return GradientResult(GradientOutcome.CRASH, f"{type(error).__name__}: {_first_line(error)}", repr(error))
        scale = max(1.0, float(np.max(np.abs(fine), initial=0.0)))
        if np.shape(got) != fine.shape or not np.allclose(got, fine, rtol=RTOL, atol=RTOL * scale):
            detail = f"argument {k}: dy2st.grad gave\n{got!r}\nfinite differences\n{fine!r}"
            return GradientResult(GradientOutcome.MISMATCH, "the gradient differs from finite differences", detail)
    return GradientResult(GradientOutcome.PASSED, "")


def _random_states(module: Any) -> list[tuple[Any, Any]]:
    """The state of every random stream a program may draw from besides its arguments (deep-copied
    at each call): NumPy's global one and the generators its module holds (``rng =
    np.random.default_rng(1234)``)."""
    states: list[tuple[Any, Any]] = [(np.random, np.random.get_state())]
    for value in vars(module).values():
        if isinstance(value, np.random.Generator):
            states.append((value.bit_generator, value.bit_generator.state))
        elif isinstance(value, np.random.RandomState):
            states.append((value, value.get_state()))
    return states


def _restore(states: list[tuple[Any, Any]]) -> None:
    """Put every random stream back to the state ``_random_states`` saved."""
    for holder, state in states:
        if holder is np.random:
            np.random.set_state(state)
        elif isinstance(holder, np.random.RandomState):
            holder.set_state(state)
        else:
            holder.state = state


def _replaying_random_draws(loss: Any, states: list[tuple[Any, Any]]) -> Any:
    """``loss``, each call starting from the same random ``states``: a program drawing from them
    is then one function of its arguments, whose finite differences mean something (otherwise
    each evaluation took other draws and other branches, and whether the comparison held depended
    on what ran before it). ``dy2st.grad`` runs from the same states."""

    def replayed(*args: Any) -> Any:
        _restore(states)
        return loss(*args)

    return replayed


COARSE_STEP = 1e-3


def _resolves_the_step(loss: Any, args: tuple[Any, ...], k: int, fine: np.ndarray) -> bool:
    """Do differences at ``STEP`` agree with differences at ``COARSE_STEP``? A loss computed in
    float32 (``A.astype(np.float32)``: 7 digits) rounds a step of 1e-6 away, and both one-sided
    differences then say 0 where the derivative is not; a step of 1e-3 still shows it. A smooth
    float64 loss agrees at both steps to about ``COARSE_STEP**2`` times its third derivative."""
    forward, backward = one_sided_differences(loss, args, k, COARSE_STEP)
    coarse = (forward + backward) / 2
    scale = max(1.0, float(np.max(np.abs(coarse), initial=0.0)))
    return bool(np.allclose(fine, coarse, rtol=1e-2, atol=1e-2 * scale))


def _first_line(error: BaseException) -> str:
    lines = str(error).splitlines()
    text = lines[0] if lines else type(error).__name__
    return text.split(": error: ", 1)[-1]
