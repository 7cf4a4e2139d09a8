"""The layers of src/dy2st import only downward (docs/architecture.md).

Every import in src/ is scanned, at module level and inside functions. The rules:

- ``ir/`` imports nothing of dy2st outside ``ir/`` except ``dy2st.errors``;
- ``staging/`` imports only ``ir/``, ``errors`` and itself;
- ``ops/`` imports neither ``backend/``, ``runtime/``, ``passes/``, ``frontend/`` nor ``api``;
- ``passes/`` imports no ``backend/``, ``runtime/``, ``frontend/`` nor ``api``;
- ``frontend/`` imports no ``runtime/``, ``staging/``, ``ops/``, ``passes/`` nor ``backend/``;
- ``autodiff/`` (graph to gradient graph, on ``ir/`` and the ops' adjoint rules) imports no
  ``passes/``, ``backend/``, ``runtime/``, ``frontend/`` nor ``api``;
- ``deploy/`` (saved graphs) imports no ``frontend/``, ``api`` nor ``gradients``;
- nothing but ``cli.py``, ``gradients.py`` (the gradient API beside it) and the package
  ``__init__`` imports ``api``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "dy2st"

# package (first path component under dy2st/) -> packages it must not import
FORBIDDEN = {
    "ir": {"staging", "ops", "passes", "backend", "runtime", "frontend", "api", "cli"},
    "staging": {"ops", "passes", "backend", "runtime", "frontend", "api", "cli"},
    "ops": {"passes", "backend", "runtime", "frontend", "api", "cli"},
    "passes": {"backend", "runtime", "frontend", "api", "cli"},
    "backend": {"runtime", "frontend", "api", "cli"},
    "frontend": {"staging", "ops", "passes", "backend", "runtime", "api", "cli"},
    "runtime": {"api", "cli", "gradients"},
    "autodiff": {"passes", "backend", "runtime", "frontend", "api", "cli", "gradients"},
    "deploy": {"frontend", "api", "cli", "gradients"},
}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: pathlib.Path) -> list[tuple[str, int, bool]]:
    """(imported dy2st module, line, inside a function) for every import in ``path``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                continue  # annotations only: never imported at run time
            local = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.startswith("dy2st"):
                    # ``from dy2st import runtime`` imports the submodule runtime
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        found.append((sub if _is_module(sub) else target, child.lineno, in_function))
            elif isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names if a.name.startswith("dy2st"))
            visit(child, local)

    visit(ast.parse(path.read_text()), False)
    return found


def _is_module(dotted: str) -> bool:
    rel = pathlib.Path(*dotted.split(".")[1:])
    return (SRC / rel).with_suffix(".py").exists() or (SRC / rel / "__init__.py").exists()


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


SOURCES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_only_downward(path: pathlib.Path) -> None:
    here = layer(module_name(path))
    forbidden = FORBIDDEN.get(here, set())
    bad = [f"line {line}: {target}" for target, line, _ in imports(path) if layer(target) in forbidden]
    assert not bad, f"{path.relative_to(SRC)} ({here}/) imports upward: {bad}"


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        graph[module_name(path)] = {target for target, _, _ in imports(path) if target != "dy2st"}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                connect(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_only_import_cycle_is_the_tracers_own_recursion() -> None:
    cycles = _cycles(_import_graph())
    outside_staging = [sorted(c) for c in cycles if not all(layer(m) == "staging" for m in c)]
    assert not outside_staging, f"import cycles: {outside_staging}"
    assert len(cycles) <= 1, f"import cycles: {[sorted(c) for c in cycles]}"


def test_function_local_imports_say_why() -> None:
    """Imports inside functions only keep CLI start-up fast (cli.py) or close the tracer's own
    recursion (staging/); each carries a comment saying why."""
    bad = []
    for path in SOURCES:
        rel = path.relative_to(SRC)
        lines = path.read_text().splitlines()
        for target, line, local in imports(path):
            if not local:
                continue
            text = lines[line - 1]
            allowed = rel.as_posix() == "cli.py" or layer(module_name(path)) == "staging"
            commented = "#" in text or lines[line - 2].strip().startswith("#")
            if not (allowed and (commented or rel.as_posix() == "cli.py")):
                bad.append(f"{rel}:{line}: {target}")
    assert not bad, "function-local imports: " + ", ".join(bad)
