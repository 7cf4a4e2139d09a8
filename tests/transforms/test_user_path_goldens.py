"""Goldens through the paths users see: ``dy2st dump`` (transformed source, optimized IR and
generated executor) for every golden program, and each program run converted against eager NumPy.

``golden_user/<case>.txt`` holds the ``dy2st dump ... --source --ir --executor`` output for the case's
input signature. Refresh after an intended change with ``pytest tests/transforms --update-goldens``
and review the diff.
"""

from __future__ import annotations

import contextlib
import copy
import io
import pathlib

import numpy as np
import pytest
from test_control_flow_goldens import load_function

import dy2st
from dy2st import cli

HERE = pathlib.Path(__file__).parent
GOLDEN_DIR = HERE / "golden_user"

f64_4 = np.array([1.0, -2.0, 3.0, 0.5])
i64 = np.array


# case (directory/stem) -> (--arg specs for dump, concrete argument tuples to run)
CASES: dict[str, tuple[list[str], list[tuple]]] = {
    "golden/elif_chain": (["x=f64[4]", "t=i64[]"], [(f64_4, i64(2)), (f64_4, i64(1)), (f64_4, i64(-1))]),
    "golden/for_else": (["x=f64[3]", "rows=f64[2,3]"], [(np.ones(3), np.arange(6.0).reshape(2, 3))]),
    "golden/for_enumerate_zip": (["xs=f64[3]", "ws=f64[3]"], [(np.arange(3.0), np.array([2.0, 1.0, 0.5]))]),
    "golden/for_range": (["x=f64[4]", "n=i64[]"], [(f64_4, i64(3)), (f64_4, i64(0))]),
    "golden/if_else": (["x=f64[4]", "flag=i64[]"], [(f64_4, i64(1)), (f64_4, i64(0))]),
    "golden/if_without_else": (["x=f64[4]", "t=i64[]"], [(f64_4, i64(1)), (f64_4, i64(0))]),
    "golden/nested_helper": (["x=f64[]", "t=i64[]"], [(np.array(-2.0), i64(1)), (np.array(3.0), i64(0))]),
    "golden/subscript_update": (["a=f64[4]", "t=i64[]"], [(f64_4, i64(1)), (f64_4, i64(0))]),
    "golden/undefined_before": (["x=f64[4]", "t=i64[]"], [(f64_4, i64(1)), (f64_4, i64(0))]),
    "golden/while_loop": (["x=f64[4]", "n=i64[]"], [(f64_4, i64(5)), (f64_4, i64(0))]),
    "golden/while_temporaries": (["x=f64[4]", "n=i64[]"], [(f64_4, i64(5))]),
    "golden_exits/break_while": (["x=f64[4]", "n=i64[]"], [(f64_4, i64(4)), (np.abs(f64_4), i64(4))]),
    "golden_exits/continue_collapsed": (["xs=f64[4]"], [(f64_4,)]),
    "golden_exits/continue_guarded": (["xs=f64[4]"], [(np.array([1.0, 6.0, -1.0, 2.0]),)]),
    "golden_exits/logical_bool_ops": (
        ["a=i64[]", "b=i64[]", "c=i64[]"],
        [(i64(1), i64(0), i64(0)), (i64(0), i64(2), i64(1))],
    ),
    "golden_exits/logical_chained_compare": (
        ["lo=f64[]", "x=f64[]", "hi=f64[]"],
        [(np.array(0.0), np.array(1.0), np.array(2.0)), (np.array(0.0), np.array(3.0), np.array(2.0))],
    ),
    "golden_exits/logical_ternary": (["x=f64[4]", "flag=i64[]"], [(f64_4, i64(1)), (f64_4, i64(-1))]),
    "golden_exits/return_early": (["x=f64[4]"], [(f64_4,), (-f64_4,)]),
    "golden_exits/return_in_loop": (["x=f64[4]", "n=i64[]"], [(f64_4, i64(4)), (f64_4, i64(1))]),
}


# Differences from eager NumPy these programs show today (the correctness issue): each is a
# strict xfail, so fixing one makes its test fail until the mark is removed.
REFUSED: dict[str, str] = {}  # (s = 0 then s = s + v in a loop over rows: the loop now unrolls)
# Documented differences (docs/semantics.md).
COMMON_DTYPE = {
    "golden_exits/logical_bool_ops": "`a and b or not c` of i64 and bool operands gives i64 (their common dtype), "
    "where eager gives whichever operand decided",
}
RETURN_TYPE = {
    "golden_exits/logical_bool_ops": "a and b or not c returns np.bool_ where eager returns a Python bool",
}


def known(case: str, *tables: dict[str, str]):
    for table in tables:
        if case in table:
            return pytest.param(case, marks=pytest.mark.xfail(reason=table[case], strict=True))
    return case


def dump(case: str, args: list[str]) -> str:
    path = HERE / f"{case}.py"
    name = load_function(path).__name__
    argv = ["dump", f"{path.relative_to(HERE.parent.parent)}::{name}", "--source", "--ir", "--executor"]
    argv += [item for spec in args for item in ("--arg", spec)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.chdir(HERE.parent.parent):
        assert cli.main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("case", [known(c, REFUSED) for c in sorted(CASES)])
def test_dump_matches_golden(case: str, request) -> None:
    got = dump(case, CASES[case][0])
    expected_path = GOLDEN_DIR / f"{case.replace('/', '__')}.txt"
    if request.config.getoption("--update-goldens") or not expected_path.exists():
        expected_path.parent.mkdir(exist_ok=True)
        expected_path.write_text(got)
        if not request.config.getoption("--update-goldens"):
            pytest.fail(f"wrote the missing golden {expected_path.name}; review it and rerun")
    assert got == expected_path.read_text()


def run_both(case: str, args: tuple) -> tuple:
    """(eager result, converted result, eager arguments after, converted arguments after)."""
    fn = load_function(HERE / f"{case}.py")
    eager_args, static_args = copy.deepcopy(args), copy.deepcopy(args)
    return fn(*eager_args), dy2st.to_static(fn)(*static_args), eager_args, static_args


@pytest.mark.parametrize("case", [known(c, REFUSED, COMMON_DTYPE) for c in sorted(CASES)])
def test_golden_program_matches_eager(case: str) -> None:
    for args in CASES[case][1]:
        expected, got, eager_args, static_args = run_both(case, args)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        for before, after in zip(eager_args, static_args):  # arguments updated in place alike
            np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("case", [known(c, REFUSED, COMMON_DTYPE, RETURN_TYPE) for c in sorted(CASES)])
def test_golden_program_returns_what_eager_returns(case: str) -> None:
    for args in CASES[case][1]:
        expected, got, _, _ = run_both(case, args)
        assert type(got) is type(expected)
