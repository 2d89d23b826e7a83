"""Resume after `kill -9`: a real sweep process is killed mid-run, then resumed; nothing is lost
and nothing is duplicated, and the result equals an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fusesim.sweep import NONDETERMINISTIC_COLUMNS, read_rows, run_sweep, spec_from_args
from fusesim.sweep.evaluate import bound_case
from fusesim.sweep.spec import Task

ROOT = Path(__file__).resolve().parents[1]
EVAL = "test_sweep_resume:slow_eval"
ARGS = dict(hw=["h100_sxm"], vary=["hbm_bandwidth_gbps=2000,3000,4000,5000,6000,7000"], scale=[],
            workloads=["paper_gemm_chains"], name="resume-test", evaluator=EVAL)


def slow_eval(task: Task) -> list[dict]:
    """The analytic bound, slowed down so the sweep is still running when it gets killed."""
    time.sleep(0.03)
    return bound_case(task)


def _rows(path: Path) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in NONDETERMINISTIC_COLUMNS}
                   for r in read_rows(path)[1]), key=lambda r: r["point_id"])


def _session_members(sid: int) -> list[int]:
    """Live processes of a session (the killed sweep's workers would be here), from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # fields after "(comm)": state ppid pgrp session
            out.append(int(stat.parent.name))
    return out


def _data_lines(path: Path) -> int:
    return max(0, path.read_bytes().count(b"\n") - 1) if path.exists() else 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_kill_9_mid_sweep_then_resume(tmp_path: Path, jobs: int) -> None:
    out = tmp_path / "r.csv"
    cmd = [sys.executable, "-m", "fusesim", "sweep", "--hw", *ARGS["hw"], "--vary", ARGS["vary"][0],
           "--workloads", *ARGS["workloads"], "--name", ARGS["name"], "--evaluator", EVAL,
           "--out", str(out), "--jobs", str(jobs), "--quiet", "--no-parquet"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(ROOT)])}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while _data_lines(out) < 20 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert proc.poll() is None, f"sweep ended before it could be killed: {proc.stderr.read()}"
        os.kill(proc.pid, signal.SIGKILL)  # the sweep only: its workers must follow by themselves
        proc.wait(timeout=10)
        if sys.platform.startswith("linux"):
            deadline = time.monotonic() + 10
            while _session_members(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not _session_members(proc.pid), "worker processes outlived the killed sweep"
    finally:
        try:  # the pool workers of the killed sweep (same session, started by this test)
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    spec = spec_from_args(**ARGS)
    _, total = spec.tasks()
    killed_at = len(read_rows(out)[1])
    assert 20 <= killed_at < total, "the kill must land mid-sweep"

    summary = run_sweep(spec, out, progress=False, jobs=1)
    assert summary.already_done == killed_at
    assert summary.computed == total - killed_at
    resumed = _rows(out)
    ids = [r["point_id"] for r in resumed]
    assert len(ids) == total and len(set(ids)) == total
    assert all(r["status"] == "ok" for r in resumed)

    ref = tmp_path / "ref.csv"
    run_sweep(spec, ref, progress=False, jobs=2)
    assert resumed == _rows(ref)
