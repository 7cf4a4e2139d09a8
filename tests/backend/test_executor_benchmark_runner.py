"""The benchmark runner keeps working: a quick run prints the table and writes the JSON figures."""

import json
import os
import subprocess
import sys

RUNNER = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "run.py")


def test_a_quick_run_prints_every_workload_and_writes_json(tmp_path):
    out = tmp_path / "figures.json"
    done = subprocess.run(
        [sys.executable, RUNNER, "--quick", "--only", "W1 gelu x**3 64K,W5,softmax,W4", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split()[:4] == ["workload", "eager", "ms", "dy2st"]
    names = [r["name"] for r in json.loads(out.read_text())["rows"]]
    assert names == [
        "W1 gelu x**3 64K f32",
        "W5 MLP 4x1024 b4096",
        "softmax 4096x1024",
        "W4 first call, fresh process",
        "W4 first call, warm process",
    ]
    rows = {r["name"]: r for r in json.loads(out.read_text())["rows"]}
    mlp = rows["W5 MLP 4x1024 b4096"]
    assert mlp["skipped"] is None and mlp["ratio"] > 0
    assert mlp["planned_peak"] <= 1.05 * mlp["lower_bound"]  # the W5 target, on the quick sizes
    for name in names:  # each row either has figures or says why it was skipped
        assert any(line.startswith(name) for line in lines)
