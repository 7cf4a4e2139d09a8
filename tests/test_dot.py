"""Graph pictures: ``Graph.to_dot()`` is valid Graphviz DOT for every example, with control-flow
regions and fused groups as nested clusters; ``dy2st dump --format dot|svg``."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from dy2st import cli
from example_modules import load_example

_TOKEN = re.compile(r'\s*(?:(->)|([{}\[\];=,])|("(?:[^"\\]|\\.)*")|([A-Za-z_][A-Za-z0-9_]*|-?\d+(?:\.\d+)?))', re.S)


def tokens(text: str) -> list[str]:
    found, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        assert match, f"not DOT at {text[position : position + 40]!r}"
        found.append(next(g for g in match.groups() if g is not None))
        position = match.end()
    return found


class DotChecker:
    """A recursive-descent reader of the DOT grammar's statements (graph, subgraph, node, edge,
    attribute statements and ``ID = ID``); it records the clusters and their nesting."""

    def __init__(self, text: str):
        self.tokens = tokens(text)
        self.at = 0
        self.nodes: set[str] = set()
        self.clusters: list[tuple[str, str, int]] = []  # (name, label, depth)
        self.depth = 0

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at]
        assert expected is None or token == expected, f"expected {expected!r}, got {token!r}"
        self.at += 1
        return token

    def peek(self) -> str:
        return self.tokens[self.at]

    def graph(self) -> None:
        self.take("digraph")
        self.take()
        self.body()
        assert self.at == len(self.tokens)

    def body(self) -> None:
        self.take("{")
        while self.peek() != "}":
            self.statement()
        self.take("}")

    def statement(self) -> None:
        if self.peek() == "subgraph":
            self.take()
            name = self.take()
            self.depth += 1
            self.clusters.append((name, "", self.depth))
            self.body()
            self.depth -= 1
            return
        first = self.take()
        if self.peek() == "=":
            self.take()
            value = self.take()
            if first == "label" and self.clusters and self.clusters[-1][1] == "":
                name, _, depth = self.clusters[-1]
                self.clusters[-1] = (name, value.strip('"'), depth)
        elif self.peek() == "->":
            self.take()
            target = self.take()
            assert first in self.nodes and target in self.nodes, f"an edge between undeclared nodes {first} {target}"
        elif first not in ("graph", "node", "edge"):
            self.nodes.add(first)
        if self.peek() == "[":
            self.attributes()
        self.take(";")

    def attributes(self) -> None:
        self.take("[")
        while self.peek() != "]":
            self.take()
            self.take("=")
            self.take()
            if self.peek() in (",", ";"):
                self.take()
        self.take("]")


_load = load_example


GRAPHS = [
    ("demo", "static_model", lambda: (np.ones(16, np.float32), np.array(1))),
    ("newton_sqrt", "newton_sqrt", lambda: (np.array(2.0), 1e-12)),
    ("gcd_collatz", "collatz_steps", lambda: (np.array(27),)),
    ("two_branch_model", "model", lambda: (np.ones((4, 128), np.float32), np.ones((4, 128), np.float32))),
    ("rnn", "rnn", lambda: (np.ones((10, 8), np.float32), np.zeros(32, np.float32), 10)),
    ("recurrent_loop", "settle", lambda: (np.ones(16, np.float32), 1e-4, 50)),
]


@pytest.mark.parametrize("module, function, make_args", GRAPHS, ids=[g[0] for g in GRAPHS])
def test_the_dot_of_an_example_is_valid_graphviz(module, function, make_args, tmp_path):
    graph = getattr(_load(module), function).graph(*make_args())
    text = graph.to_dot()
    checker = DotChecker(text)
    checker.graph()
    ops = sum(1 for _ in graph.walk())
    assert len(checker.nodes) == ops + len(graph.body.args) + sum(
        len(region.block.args) for op in graph.walk() for region in op.regions
    )
    if shutil.which("dot"):
        drawn = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=60)
        assert drawn.returncode == 0, drawn.stderr
        assert drawn.stdout.lstrip().startswith("<?xml")


def test_regions_are_nested_clusters_and_ops_name_their_lines():
    graph = _load("newton_sqrt").newton_sqrt.graph(np.array(2.0), 1e-12)
    checker = DotChecker(graph.to_dot())
    checker.graph()
    labels = [(label, depth) for _, label, depth in checker.clusters]
    assert ("while_loop", 1) in labels and ("cond", 2) in labels and ("body", 2) in labels
    assert ("members", 4) in labels  # a fused group inside the loop's body
    assert "newton_sqrt.py:19" in graph.to_dot()  # ops are labelled with the user's lines


def test_dump_prints_dot_and_svg(capsys, monkeypatch):
    assert (
        cli.main(
            [
                "dump",
                "examples/newton_sqrt.py::newton_sqrt",
                "--format",
                "dot",
                "--arg",
                "a=f64[]",
                "--arg",
                "tol=1e-12",
            ]
        )
        == 0
    )
    DotChecker(capsys.readouterr().out).graph()
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SystemExit) as usage:
        cli.main(
            [
                "dump",
                "examples/newton_sqrt.py::newton_sqrt",
                "--format",
                "svg",
                "--arg",
                "a=f64[]",
                "--arg",
                "tol=1e-12",
            ]
        )
    assert usage.value.code == 2
    assert "needs Graphviz's 'dot' program" in capsys.readouterr().err
