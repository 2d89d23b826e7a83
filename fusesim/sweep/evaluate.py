"""Per-point evaluation: the only place a sweep touches the planner and the simulator.

An evaluator is a module-level function `fn(task) -> list[dict]` returning one dict of metric
columns per strategy of the task (same order), optionally with `status` ("ok", "infeasible",
"error") and `error`. It is named in specs as "module:function" so that worker processes and Dask
workers import it by name; it must be deterministic (same task, same numbers), which is what
makes local and Dask runs give identical files.

- `evaluate_case_simulated` (the default, `spec.DEFAULT_EVALUATOR`): per strategy the plan `fusesim simulate`
  runs (`plan_case(rank="simulated")`: the fastest simulated of the pool `best` simulates).
- `evaluate_case`: the cost model's best plan per strategy, then its simulation (4-9x more rows per second;
  the default until 2026-12-08).
- `evaluate_case_unconstrained`: the same, with plans today's code generator cannot build allowed
  (hardware what-ifs: wgmma, clusters above 16).
- `evaluate_case_reranked`, `evaluate_case_unconstrained_reranked`: the planner's top RERANK_K
  plans per strategy are all simulated and the fastest *simulated* one is kept (`plan_rank` says
  which of the planner's choices won): what a planner checked by the simulator would pick.
- `bound_case`: an analytic bound with no planner and no simulator (max of FLOPs at the tensor
  peak and bytes at HBM bandwidth, plus launch overheads); cheap, for smoke tests and for
  measuring the sweep machinery's own overhead.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from fusesim.sweep.spec import HardwarePoint, Task
from fusesim.workload import Chain, load_workload

# Columns an evaluator may fill, in file order. Wall-clock columns are the only ones that differ
# between two runs of the same grid (see NONDETERMINISTIC_COLUMNS).
METRIC_COLUMNS = (
    "hw_name", "hw_fingerprint", "flops", "floor_us",
    "plan_strategy", "pred_time_us", "pred_bound", "pred_hbm_bytes", "pred_l2_bytes", "pred_dsm_bytes",
    "pred_smem_bytes",
    "sim_time_us", "sim_hbm_read_bytes", "sim_hbm_write_bytes", "sim_l2_read_bytes", "sim_l2_write_bytes",
    "sim_dsm_bytes", "sim_util_tensor", "sim_util_hbm", "sim_util_dsm", "sim_util_l2", "sim_events",
    "cluster_m", "cluster_n", "cluster_k", "cluster_l", "cluster_size", "block_m", "block_n", "block_k",
    "block_l", "grid_m", "n_split", "n_passes", "stages", "instruction", "buildable", "plan",
    "plan_rank", "plans_simulated", "search_candidates", "search_s", "trace_file", "sim_wall_s", "eval_wall_s",
)
NONDETERMINISTIC_COLUMNS = ("search_s", "sim_wall_s", "eval_wall_s")

Evaluator = Callable[[Task], list[dict[str, Any]]]
RERANK_K = 5  # planner candidates per strategy the re-ranking evaluators simulate


@lru_cache(maxsize=64)
def _workload_chains(path: str) -> dict[str, Chain]:
    return {c.case_id: c for c in load_workload(path).cases}


def chain_of(workload_path: str, case_id: str) -> Chain:
    return _workload_chains(workload_path)[case_id]


@lru_cache(maxsize=16)
def resolve_evaluator(name: str) -> Evaluator:
    module, _, fn = name.partition(":")
    return getattr(importlib.import_module(module), fn)


def _one_line(exc: BaseException) -> str:
    msg = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {msg}"[:500]


def run_task(task: Task) -> list[dict[str, Any]]:
    """Evaluate a task in a worker; never raises — a failure becomes error rows, the sweep goes on."""
    t0 = time.perf_counter()
    try:
        metrics = resolve_evaluator(task.evaluator)(task)
        if len(metrics) != len(task.strategies):
            raise RuntimeError(f"evaluator returned {len(metrics)} rows for {len(task.strategies)} strategies")
    except Exception as exc:  # noqa: BLE001 - recorded in the row, by design
        metrics = [{"status": "error", "error": _one_line(exc)} for _ in task.strategies]
    wall = time.perf_counter() - t0
    rows = []
    for pid, strategy, m in zip(task.point_ids, task.strategies, metrics, strict=True):
        row: dict[str, Any] = {"point_id": pid, "hw_base": task.hw.base.rsplit("/", 1)[-1]}
        row.update(dict(task.axes))
        row.update({"workload": task.workload_name, "case": task.case_id, "strategy": strategy})
        row.update({k: v for k, v in m.items() if k not in ("point_id", "case", "strategy", "workload")})
        row.setdefault("status", "ok")
        row.setdefault("eval_wall_s", round(wall / len(task.strategies), 6))
        rows.append(row)
    return rows


# ---- the real evaluator -------------------------------------------------------------------------
def _plan_columns(plan: Any) -> dict[str, Any]:
    c, t = plan.cluster, plan.tiles
    return {
        "plan_strategy": plan.strategy, "cluster_m": c.m, "cluster_n": c.n, "cluster_k": c.k, "cluster_l": c.l,
        "cluster_size": c.size, "block_m": t.block_m, "block_n": t.block_n, "block_k": t.block_k,
        "block_l": t.block_l, "grid_m": plan.grid_m, "n_split": plan.n_split, "n_passes": plan.n_passes,
        "stages": plan.stages, "instruction": plan.instruction, "buildable": bool(plan.buildable),
        "plan": plan.summary(),
    }


def _prediction_columns(pred: Any) -> dict[str, Any]:
    b = dict(getattr(pred, "bytes", {}) or {})
    return {
        "pred_time_us": pred.time_ns / 1e3, "pred_bound": b.pop("bound", getattr(pred, "bound", None)),
        "pred_hbm_bytes": b.get("hbm"), "pred_l2_bytes": b.get("l2"), "pred_dsm_bytes": b.get("dsm"),
        "pred_smem_bytes": b.get("smem"),
    }


def _sim_columns(res: Any) -> dict[str, Any]:
    b, u = dict(res.bytes or {}), dict(res.utilization or {})
    return {
        "sim_time_us": res.time_ns / 1e3, "sim_hbm_read_bytes": b.get("hbm_read"),
        "sim_hbm_write_bytes": b.get("hbm_write"), "sim_l2_read_bytes": b.get("l2_read"),
        "sim_l2_write_bytes": b.get("l2_write"), "sim_dsm_bytes": b.get("dsm"),
        "sim_util_tensor": u.get("tensor"), "sim_util_hbm": u.get("hbm"), "sim_util_dsm": u.get("dsm"),
        "sim_util_l2": u.get("l2"), "sim_events": res.events, "sim_wall_s": res.wall_s,
    }


def evaluate_case(task: Task) -> list[dict[str, Any]]:
    """The planner's best plan for each strategy of the task, and its simulation on the same machine.

    The planner prefers plans today's code generator can build (mma.sync only, clusters <= 16), so
    this answers "what would fusesim run on that machine". See `evaluate_case_unconstrained`.
    """
    return _evaluate(task, _today_search(1))


def evaluate_case_reranked(task: Task) -> list[dict[str, Any]]:
    """Today's planner, its top RERANK_K plans per strategy re-ranked by simulated time."""
    return _evaluate(task, _today_search(RERANK_K), rerank=True)


def evaluate_case_simulated(task: Task) -> list[dict[str, Any]]:
    """Per strategy the plan `fusesim simulate` runs by default: the fastest simulated of the
    candidates `best` simulates (`plan_case(rank="simulated")`); "best" is the fastest of those."""
    return _evaluate(task, _today_search(1, rank="simulated"), rerank=True)


def _today_search(top_k: int, rank: str = "cost") -> Callable[[Chain, Any, tuple[str, ...]], Any]:
    from fusesim.planner import plan_case

    def search(chain: Chain, hw: Any, strategies: tuple[str, ...]) -> Any:
        return plan_case(chain, hw, strategies=strategies, top_k=top_k, rank=rank)

    return search


def evaluate_case_unconstrained(task: Task) -> list[dict[str, Any]]:
    """As `evaluate_case`, but the planner may pick plans today's generator cannot build.

    A hardware what-if ("a successor with 32-block clusters") is about the machine, not about
    which instructions and cluster sizes fusesim's CUDA templates emit today; with the generator's
    limits the planner never even considers wgmma or clusters above 16. The row's `buildable`
    column still says whether today's generator could build the chosen plan.

    The search runs with the planner's what-if limits (`planner.search.Limits(generator=False)`),
    outside plan_case's memo cache.
    """
    return _evaluate(task, _unconstrained_search(1), recheck_buildable=True)


def evaluate_case_unconstrained_reranked(task: Task) -> list[dict[str, Any]]:
    """The unconstrained planner, its top RERANK_K plans per strategy re-ranked by simulated time."""
    return _evaluate(task, _unconstrained_search(RERANK_K), recheck_buildable=True, rerank=True)


def _unconstrained_search(top_k: int) -> Callable[[Chain, Any, tuple[str, ...]], Any]:
    from fusesim.planner import search as planner_search

    def search(chain: Chain, hw: Any, strategies: tuple[str, ...]) -> Any:
        return planner_search.run_search(chain, hw, strategies, top_k, False,
                                         planner_search.Limits(generator=False))

    return search


def _evaluate(task: Task, search: Callable[[Chain, Any, tuple[str, ...]], Any],
              recheck_buildable: bool = False, rerank: bool = False) -> list[dict[str, Any]]:
    from fusesim.sim import simulate

    hw = task.hw.hardware()
    chain = chain_of(task.workload, task.case_id)
    base = {"hw_name": hw.name, "hw_fingerprint": hw.fingerprint, "flops": chain.flops,
            "floor_us": chain.floor_ns(hw) / 1e3}
    wanted = ("unfused", "smem", "dsm") if "best" in task.strategies else tuple(task.strategies)
    res = search(chain, hw, wanted)
    stats = getattr(res, "search", None)
    base["search_candidates"] = getattr(stats, "candidates", None)
    base["search_s"] = getattr(stats, "seconds", None)
    out = []
    for strategy in task.strategies:
        row = dict(base)
        if strategy == "best":
            cands = sorted((sp for lst in res.plans.values() for sp in lst), key=lambda sp: sp.predicted.time_ns)
            reason = "; ".join(f"{s}: {r}" for s, r in sorted(res.infeasible.items()))
        else:
            cands = list(res.plans.get(strategy) or [])
            reason = res.infeasible.get(strategy, "no feasible plan")
        if not rerank:
            cands = cands[:1]
        if not cands:
            row.update({"status": "infeasible", "error": " ".join(str(reason).split())[:500]})
            out.append(row)
            continue
        sims: list[tuple[float, int, Any, Any]] = []
        failure: Exception | None = None
        for rank, sp in enumerate(cands, start=1):
            try:
                r = simulate(sp.plan, hw, trace=False)
            except Exception as exc:  # noqa: BLE001 - one plan's failure is that row's error
                failure = failure or exc
                continue
            sims.append((r.time_ns, rank, sp, r))
        if not sims:
            row.update(_plan_columns(cands[0].plan))
            row.update(_prediction_columns(cands[0].predicted))
            row.update({"status": "error", "error": _one_line(failure or RuntimeError("no simulation"))})
            out.append(row)
            continue
        _, rank, best, result = min(sims, key=lambda x: (x[0], x[1]))
        if task.trace_dir:
            row["trace_file"] = _write_trace(task, strategy, best.plan, hw)
        row.update(_plan_columns(best.plan))
        if recheck_buildable:
            from fusesim.capability import can_build

            row["buildable"] = bool(can_build(best.plan)[0])
        row.update(_prediction_columns(best.predicted))
        row.update(_sim_columns(result))
        row.update({"plan_rank": rank, "plans_simulated": len(sims)})
        out.append(row)
    return out


def _write_trace(task: Task, strategy: str, plan: Any, hw: Any) -> str:
    """The chosen plan simulated once more with tracing, as a Perfetto-loadable Chrome trace.

    Traced separately so that tracing never changes which plan wins or the row's numbers."""
    import json
    from pathlib import Path

    from fusesim.sim import simulate
    from fusesim.yamlio import atomic_write

    res = simulate(plan, hw, trace=True)
    pid = task.point_ids[task.strategies.index(strategy)]
    path = Path(task.trace_dir or ".") / f"{task.case_id}-{strategy}-{pid}.json"
    doc = {"traceEvents": res.trace or [], "displayTimeUnit": "ns",
           "metadata": {"case": task.case_id, "strategy": strategy, "plan": plan.summary(),
                        "axes": {k: v for k, v in task.axes}, "hw": hw.name, "time_us": res.time_ns / 1e3}}
    atomic_write(path, json.dumps(doc, default=str))
    return str(path)


def evaluate_point(base_hw_path: str, overrides: dict[str, Any] | None, workload_path: str, case_id: str,
                   strategy: str, *, scale: dict[str, float] | None = None,
                   derive: tuple[str, ...] = ()) -> dict[str, Any]:
    """One row without a sweep (notebooks, scripts): same columns as a sweep row.

    `scale` maps a dotted path to a factor; `derive` names rules of fusesim/sweep/derive.py.
    """
    from pathlib import Path

    from fusesim.sweep.spec import DEFAULT_EVALUATOR, _resolve

    base = _resolve(base_hw_path, "hw_configs", None, "<evaluate_point>", "hw")
    wpath = _resolve(workload_path, "workloads", None, "<evaluate_point>", "workload")
    hwp = HardwarePoint(base, tuple(sorted((overrides or {}).items())),
                        tuple(((k,), float(f)) for k, f in sorted((scale or {}).items())), tuple(derive))
    axes = tuple(sorted((overrides or {}).items()))
    task = Task(hwp, axes, wpath, Path(wpath).stem, case_id, (strategy,), ("-",), DEFAULT_EVALUATOR)
    return run_task(task)[0]


# ---- a cheap analytic evaluator -----------------------------------------------------------------
def bound_case(task: Task) -> list[dict[str, Any]]:
    """Optimistic bound per strategy: no planner, no simulator (machinery tests, overhead benchmarks).

    unfused moves the intermediate through HBM twice and pays two launches; fused strategies move
    only the unique inputs and the output and pay one launch. No tiling, no waves, no contention.
    """
    hw = task.hw.hardware()
    chain = chain_of(task.workload, task.case_id)
    compute_ns = chain.flops / hw.tensor_flops_per_ns(hw.best_instruction(), chain.dtype)
    out = []
    for strategy in task.strategies:
        hbm = chain.min_bytes + (2 * chain.c_bytes if strategy == "unfused" else 0)
        launches = 2 if strategy == "unfused" else 1
        t_ns = max(compute_ns, hbm / hw.hbm_bandwidth_gbps) + launches * hw.launch_overhead_us * 1e3
        out.append({"hw_name": hw.name, "hw_fingerprint": hw.fingerprint, "flops": chain.flops,
                    "floor_us": chain.floor_ns(hw) / 1e3, "plan_strategy": strategy,
                    "pred_time_us": t_ns / 1e3, "pred_hbm_bytes": hbm,
                    "pred_bound": "compute" if compute_ns * hw.hbm_bandwidth_gbps >= hbm else "memory"})
    return out

