"""Op meaning lives in traits on the op definitions, not in op-name strings scattered in the code.

No string literal outside ``ir/`` and ``ops/`` spells a registered opcode. Passes, backends, the
tracer and the runtime read OpDef traits, or the structural opcode constants of ``dy2st.ir.core``.
Docstrings are prose and are not counted.
"""

from __future__ import annotations

import ast
import pathlib

import dy2st  # noqa: F401  (registers every op)
from dy2st.ir.opdefs import OPS

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "dy2st"
ALLOWED = {"ir", "ops"}
# Strings that spell an opcode by coincidence and mean something else.
COINCIDENCES = {
    ("runtime/captures.py", "sort"),  # list.sort, refused on a captured list
    ("runtime/errstate.py", "all"),  # np.errstate(all=...)
    ("backend/numpy/lowering.py", "divmod"),  # Python's builtin divmod, written into generated code
    ("runtime/control_flow/values.py", "divmod"),  # Python's divmod(k, 3) of a Python number
    ("cli.py", "dot"),  # Graphviz's dot program and the DOT format of `dump --format`
}


def _prose(tree: ast.AST) -> set[int]:
    """Docstrings and ``__all__`` entries (public API names such as ``cond``): not op references."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            ids.update(id(n) for n in ast.walk(node.value))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def op_name_literals() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] in ALLOWED:
            continue
        tree = ast.parse(path.read_text())
        docs = _prose(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in OPS
                and id(node) not in docs
                and (str(rel), node.value) not in COINCIDENCES
            ):
                found.append(f"{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_op_name_literals_outside_ir_and_ops() -> None:
    found = op_name_literals()
    assert not found, "op names spelled outside ir/ and ops/:\n" + "\n".join(found)
