"""Run a sweep: expand the grid, skip finished points, evaluate the rest, append rows as they finish."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from fusesim import __version__
from fusesim.errors import InputError
from fusesim.stored import read_json
from fusesim.sweep.evaluate import METRIC_COLUMNS
from fusesim.sweep.executors import run_dask, run_processes
from fusesim.sweep.spec import SweepSpec
from fusesim.sweep.store import ResultStore, write_parquet
from fusesim.yamlio import atomic_write

ID_COLUMNS = ("point_id", "sweep", "hw_base")
KEY_COLUMNS = ("workload", "case", "strategy", "status", "error")


def columns_for(spec: SweepSpec) -> list[str]:
    """Fixed for a spec: identity, one column per axis, the case key, the metrics."""
    return [*ID_COLUMNS, *spec.axis_columns, *KEY_COLUMNS, *METRIC_COLUMNS]


def default_out(spec: SweepSpec) -> Path:
    """Each named sweep gets its own folder, so two sweeps never write into each other's file."""
    return Path("out") / "sweeps" / spec.name / "results.csv"


@dataclass
class SweepSummary:
    name: str
    out: str
    parquet: str | None
    total_rows: int
    already_done: int
    computed: int
    ok: int = 0
    infeasible: int = 0
    errors: int = 0
    executor: str = "local"
    workers: int = 1
    wall_s: float = 0.0
    tasks: int = 0
    dropped_torn: int = 0
    first_errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def rows_per_s(self) -> float:
        return self.computed / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows_per_s"] = self.rows_per_s
        return d


def run_sweep(spec: SweepSpec, out: str | Path | None = None, *, jobs: int = 1, dask: bool = False,
              scheduler: str | None = None, retry_errors: bool = False, progress: bool = True,
              parquet: bool = True, limit: int | None = None, traces: str | Path | None = None) -> SweepSummary:
    """Evaluate every missing row of the grid; safe to kill at any moment and run again.

    `limit` caps how many tasks run this time (a partial run that a later run completes).
    `traces`: a folder that receives a Chrome/Perfetto trace of every row's simulated plan
    (evaluators that simulate; rows finished by an earlier run get none).
    """
    out_path = Path(out) if out else default_out(spec)
    _check_evaluator(spec)
    spec.validate_hardware()  # a bad grid point is the user's mistake: refuse before any file exists
    spec.chains()
    columns = columns_for(spec)
    store = ResultStore(out_path, columns)
    done = store.open(retry_errors=retry_errors)
    meta_before = _previous_meta(out_path) if done else {}
    before = meta_before.get("spec") if isinstance(meta_before.get("spec"), dict) else {}
    for key in ("name", "evaluator"):  # rows of another sweep would share the file, its plots and its sidecar
        if before.get(key) not in (None, getattr(spec, key)):
            store.close()
            raise InputError(str(out_path), "--out", f"already holds the rows of a sweep with {key} "
                             f"{before[key]!r}; this one ({getattr(spec, key)!r}) needs its own --out")
    previous = sorted({v for v in [meta_before.get("code_version"), *meta_before.get("code_versions", [])]
                       if isinstance(v, str)})
    t0 = time.perf_counter()
    try:
        trace_dir = str(Path(traces).resolve()) if traces else None
        if trace_dir:
            Path(trace_dir).mkdir(parents=True, exist_ok=True)
        tasks, total = spec.tasks(done, trace_dir)
        already = total - sum(len(t.strategies) for t in tasks)
        if limit is not None:
            tasks = tasks[:limit]
        tasks = _largest_first(tasks)
        executor = "dask" if (dask or scheduler) else "local"
        summary = SweepSummary(spec.name, str(out_path), None, total, already,
                               0, executor=executor, workers=jobs, tasks=len(tasks),
                               dropped_torn=store.dropped_torn)
        if trace_dir and already:
            summary.warnings.append(f"{already} rows were done before this run and get no trace in {traces} "
                                    "(traces come from the run that computes a row: use a new --out for all)")
        now = code_version()
        others = [v for v in previous if v != now]
        if others and now and already:
            summary.warnings.append(
                f"{already} rows in this file were computed by fusesim {', '.join(others)} and are reused by "
                f"{now}; point ids do not include the code version, so use a new --out to recompute them")
        _write_meta(out_path, spec, summary, started=True)
        todo_rows = sum(len(t.strategies) for t in tasks)
        bar = _progress(todo_rows, spec.name, progress, initial=summary.already_done, total=total)
        stream = run_dask(tasks, jobs, scheduler) if executor == "dask" else run_processes(tasks, jobs, store.fds())
        for _task, rows in stream:
            for r in rows:
                r["sweep"] = spec.name
            store.append(rows)
            for r in rows:
                st = r.get("status")
                if st == "ok":
                    summary.ok += 1
                elif st == "infeasible":
                    summary.infeasible += 1
                else:
                    summary.errors += 1
                    if len(summary.first_errors) < 5:
                        summary.first_errors.append(f"{r.get('case')}/{r.get('strategy')}: {r.get('error')}")
            summary.computed += len(rows)
            if bar is not None:
                bar.update(len(rows))
                if summary.errors:
                    bar.set_postfix(errors=summary.errors, refresh=False)
        if bar is not None:
            bar.close()
    finally:
        store.close()
    summary.wall_s = time.perf_counter() - t0
    if parquet and write_parquet(out_path, out_path.with_suffix(".parquet")):
        summary.parquet = str(out_path.with_suffix(".parquet"))
    _write_meta(out_path, spec, summary, started=False)
    return summary


def _largest_first(tasks: list) -> list:
    """Start the biggest problems first (FLOPs as the cost proxy): with a few workers, a large case
    started last leaves the others idle at the end. Row order in the file does not matter (ids)."""
    from fusesim.sweep.evaluate import chain_of

    def cost(t: Any) -> float:
        try:
            return float(chain_of(t.workload, t.case_id).flops) * len(t.strategies)
        except (KeyError, OSError, InputError):
            return 0.0

    return sorted(tasks, key=cost, reverse=True)


def _check_evaluator(spec: SweepSpec) -> None:
    """A misspelt evaluator fails the spec now, not as one error row per point."""
    from fusesim.sweep.evaluate import resolve_evaluator

    try:
        fn = resolve_evaluator(spec.evaluator)
    except (ImportError, AttributeError, ValueError) as exc:
        raise InputError(spec.file, "evaluator", f"cannot import {spec.evaluator!r}: {exc}") from None
    if not callable(fn):
        raise InputError(spec.file, "evaluator", f"{spec.evaluator!r} is not a function")


def _progress(n: int, name: str, enabled: bool, initial: int, total: int) -> Any:
    if not enabled or n == 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, desc=name, unit="row", file=sys.stderr, dynamic_ncols=True,
                smoothing=0.1)


def code_version() -> str | None:
    """The git commit of this fusesim checkout (with '+dirty' for local edits), when there is one."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "fusesim"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if head and dirty else head or None


def _previous_meta(out_path: Path) -> dict[str, Any]:
    try:
        meta = read_json(out_path.with_suffix(".meta.json"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _write_meta(out_path: Path, spec: SweepSpec, summary: SweepSummary, started: bool) -> None:
    """A sidecar that says what produced the CSV: spec, versions, executor, counts."""
    now = code_version()
    history = [v for v in _previous_meta(out_path).get("code_versions", []) if isinstance(v, str)]
    if now and now not in history:
        history.append(now)
    meta = {
        "fusesim_version": __version__,
        "code_version": now,
        "code_versions": history,  # every code version that wrote rows into this file
        "spec": spec.to_dict(),
        "columns": columns_for(spec),
        "state": "running" if started else "finished",
        "time_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "summary": summary.to_dict(),
    }
    atomic_write(out_path.with_suffix(".meta.json"), json.dumps(meta, indent=2, default=str) + "\n")
