"""Every malformed input in tests/bad_inputs/ is refused the same way: exit 2, one line naming the
file (and the case and field where there is one), no traceback, nothing written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "bad_inputs"
MANIFEST = yaml.safe_load((BAD / "manifest.yaml").read_text())["inputs"]

COMMANDS = {
    "show": lambda f, out: ["show", f, "--hw", str(ROOT / "hw_configs" / "h100_sxm.yaml")],
    "plan": lambda f, out: ["plan", f, "--hw", str(ROOT / "hw_configs" / "h100_sxm.yaml")],
    "simulate": lambda f, out: ["simulate", f, "--hw", str(ROOT / "hw_configs" / "h100_sxm.yaml")],
    "simulate_plan": lambda f, out: ["simulate", "--plan", f, "--hw", str(ROOT / "hw_configs" / "h100_sxm.yaml")],
    "show_hw_against": lambda f, out: ["show", str(ROOT / "workloads" / "paper_gemm_chains.yaml"), "--hw", f],
    "sweep": lambda f, out: ["sweep", f, "--out", str(out / "sweep.csv")],
    "codegen": lambda f, out: ["codegen", "--plan", f, "--hw", str(ROOT / "hw_configs" / "h100_sxm.yaml"),
                               "--out", str(out / "cu")],
}


def test_corpus_is_large_enough() -> None:
    assert len(MANIFEST) >= 30
    assert len({e["file"] for e in MANIFEST}) == len(MANIFEST)


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_bad_input_refused_cleanly(entry: dict, tmp_path: Path) -> None:
    src = BAD / entry["file"]
    work = tmp_path / "in"
    work.mkdir()
    f = work / src.name
    shutil.copy(src, f)
    out = tmp_path / "out"
    out.mkdir()
    args = COMMANDS[entry["command"]](str(f), out)
    r = subprocess.run([sys.executable, "-m", "fusesim", *args], capture_output=True, text=True, cwd=tmp_path,
                       timeout=300)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert len(lines) == 1, r.stderr
    line = lines[0]
    assert "Traceback" not in r.stderr
    assert src.name in line
    if entry.get("field"):
        assert f"field {entry['field']}" in line, line
    if entry.get("case"):
        assert f"case {entry['case']}" in line, line
    assert list(out.rglob("*")) == [], "nothing may be written for a refused input"
