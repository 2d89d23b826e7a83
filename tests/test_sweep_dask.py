"""Local processes and Dask distributed give identical result files on a small grid."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusesim.sweep import NONDETERMINISTIC_COLUMNS, read_rows, run_sweep, spec_from_dict


def _planner_ready() -> bool:
    try:
        from fusesim.planner import plan_case  # noqa: F401
        from fusesim.sim import simulate  # noqa: F401
    except ImportError:
        return False
    return True


def _rows(path: Path) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in NONDETERMINISTIC_COLUMNS}
                   for r in read_rows(path)[1]), key=lambda r: r["point_id"])


def test_local_and_dask_identical(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    # the real planner + simulator when they are there (what must be deterministic), else the bound
    evaluator = "fusesim.sweep.evaluate:evaluate_case" if _planner_ready() else "fusesim.sweep.evaluate:bound_case"
    spec = spec_from_dict({"name": "dask-eq", "hw": "h100_sxm", "workloads": ["paper_gemm_chains"],
                           "cases": ["G1", "G9"], "strategies": ["unfused", "dsm"],
                           "vary": {"hbm_bandwidth_gbps": [3350, 6700]}, "evaluator": evaluator}, "t.yaml")
    local, dask = tmp_path / "local.csv", tmp_path / "dask.csv"
    s1 = run_sweep(spec, local, jobs=2, progress=False)
    s2 = run_sweep(spec, dask, jobs=2, dask=True, progress=False)
    assert s2.executor == "dask" and s1.computed == s2.computed == 8
    assert s1.errors == 0, s1.first_errors
    a, b = _rows(local), _rows(dask)
    assert len(a) == 8 and a == b


def test_existing_scheduler(tmp_path: Path) -> None:
    """--scheduler tcp://...: the sweep runs on a cluster someone else started."""
    distributed = pytest.importorskip("dask.distributed")
    spec = spec_from_dict({"name": "sched", "hw": "h100_sxm", "workloads": ["paper_gemm_chains"],
                           "cases": ["G1", "G2"], "evaluator": "fusesim.sweep.evaluate:bound_case"}, "t.yaml")
    local = tmp_path / "local.csv"
    run_sweep(spec, local, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        s = run_sweep(spec, tmp_path / "remote.csv", scheduler=cl.scheduler_address, progress=False)
    assert s.executor == "dask" and s.computed == 6
    assert _rows(local) == _rows(tmp_path / "remote.csv")
