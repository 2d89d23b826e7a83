"""The benchmark: per case, plans -> build -> verify -> time, next to PyTorch eager and CUDA graphs.

Plans come from the planner (`fusesim.planner.plan_case`, top-k per strategy) when it is there and
emits buildable plans, else from fusesim.codegen.handplans (marked `source: hand`). Each case runs
in its own subprocess with a time limit, so a kernel that hangs costs one case, not the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fusesim.capability import can_build
from fusesim.codegen import CannotBuild, generate
from fusesim.codegen.binary import code_bytes
from fusesim.codegen.build import BuildError, build, ptxas_perf_notes
from fusesim.codegen.handplans import candidates
from fusesim.plan import Plan
from fusesim.stored import read_json
from fusesim.workload import Chain


def planner_plans(ch: Chain, hw: Any, strategies: tuple[str, ...], top_k: int) -> tuple[dict[str, list[Plan]], str]:
    """Top-k buildable plans per strategy from the planner, or ({}, why not)."""
    try:
        from fusesim.planner import plan_case  # type: ignore[attr-defined]
    except ImportError as exc:
        return {}, f"planner not importable ({exc})"
    try:
        res = plan_case(ch, hw, strategies=strategies, top_k=max(top_k, 8))
    except Exception as exc:  # noqa: BLE001 - the planner is another team's; report, fall back
        return {}, f"planner failed: {exc!r}"
    out: dict[str, list[Plan]] = {}
    for s in strategies:
        scored = [sp for sp in res.plans.get(s, []) if can_build(sp.plan)[0]][:top_k]
        for sp in scored:
            pr = sp.predicted
            _PREDICTED[sp.plan.to_json()] = {"time_us": pr.time_ns / 1e3, "bytes": dict(pr.bytes), "bound": pr.bound}
        out[s] = [sp.plan for sp in scored]
    return out, ""


_PREDICTED: dict[str, dict[str, Any]] = {}  # planner predictions by plan JSON, recorded next to measurements


def select_plans(ch: Chain, hw: Any, strategies: tuple[str, ...], top_k: int, source: str) -> list[dict[str, Any]]:
    """[{plan, source}] for one case."""
    chosen: list[dict[str, Any]] = []
    why = ""
    if source.startswith("file:"):  # re-time plans listed in a JSON {case: [plan dicts]} (e.g. past winners)
        listed = read_json(source[5:]).get(ch.case_id, [])
        # entries are plan dicts, or {"plan": plan dict, "source": why it is listed}
        entries = [(Plan.from_dict(d["plan"]), d.get("source", "file")) if "plan" in d else (Plan.from_dict(d), "file")
                   for d in listed]
        return [{"plan": p, "source": src, "planner_note": ""} for p, src in entries if p.strategy in strategies]
    if source in ("planner", "both") and hw is not None:
        got, why = planner_plans(ch, hw, strategies, top_k)
        for s in strategies:
            chosen += [{"plan": p, "source": "planner"} for p in got.get(s, [])]
    if source == "hand" or source == "both" or (source == "planner" and not chosen):
        hand = candidates(ch, per_strategy=top_k)
        for s in strategies:
            chosen += [{"plan": p, "source": "hand"} for p in hand.get(s, [])]
    seen: set[str] = set()
    out = []
    for c in chosen:
        key = c["plan"].to_json()
        if key not in seen:
            seen.add(key)
            c["planner_note"] = why
            if key in _PREDICTED:
                c["predicted"] = _PREDICTED[key]
            out.append(c)
    return out


def build_all(plans: list[Plan], jobs: int) -> list[tuple[str | None, str]]:
    """(path or None, error) per plan, compiled in parallel (nvcc subprocesses)."""

    def one(p: Plan) -> tuple[str | None, str]:
        try:
            return str(build(generate(p), "so")), ""
        except (CannotBuild, BuildError) as exc:
            return None, str(exc)[-2000:]

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(one, plans))


def run_case(ch: Chain, entries: list[dict[str, Any]], reps: int, seed: int, torch_baseline: bool,
             graph_launch: bool = False) -> dict[str, Any]:
    """In-process: verify and time every built plan of a case, then PyTorch for the same case. `graph_launch`: each
    verified plan also captured into a CUDA graph, verified and timed as its replays (`verify_graph`, `time_graph`;
    `graph_error` where the capture fails)."""
    import torch

    from fusesim.gpu.baseline import RawCase, measure_case
    from fusesim.gpu.runner import KernelError, Loaded, time_kernel, verify
    from fusesim.gpu.timing import L2Flusher

    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    flush = L2Flusher()
    rows = []
    for i, e in enumerate(entries):
        plan = Plan.from_dict(e["plan"])
        row: dict[str, Any] = {"strategy": plan.strategy, "source": e["source"], "summary": plan.summary(),
                               "predicted": e.get("predicted"),
                               "threads": plan.threads, "plan": e["plan"], "so": e.get("so"), "build_error": e.get("error")}
        if e.get("so"):
            row["binary"] = code_bytes(e["so"])
            row["ptxas_perf_notes"] = ptxas_perf_notes(e["so"])
            try:
                kern = Loaded(Path(e["so"]))
                row.update({"smem_bytes": kern.smem_bytes, "grid_blocks": kern.grid_blocks,
                            "cluster_size": kern.cluster_size, "max_active_clusters": kern.max_active_clusters})
                row["verify"] = verify(kern, ch, seed=seed + i)
                if row["verify"]["ok"]:
                    row["time"] = time_kernel(kern, ch, flush, reps)
                    if graph_launch:
                        row.update(_graph_rows(kern, ch, seed + i, flush, reps))
            except KernelError as exc:
                row["run_error"] = str(exc)
        rows.append(row)
        v = row.get("verify", {})
        t = row.get("time", {})
        print(f"  {ch.case_id:6s} {plan.strategy:7s} {row['summary'][:70]:70s} ok={v.get('ok')} "
              f"err={v.get('rel_err', float('nan')):.2e} t={t.get('queued_median_us', float('nan')):8.2f} us"
              f"{' ' + (row.get('run_error') or row.get('build_error') or '')[:80]}", flush=True)
    out: dict[str, Any] = {"case": ch.case_id, "chain": ch.to_dict(), "flush": flush.method, "plans": rows}
    if torch_baseline:
        conv = None if ch.conv is None else {"batch": ch.conv.batch, "h": ch.conv.h, "w": ch.conv.w,
                                              "ic": ch.conv.ic, "k1": ch.conv.k1}
        if ch.kind == "conv_chain" and conv is None:  # a 1x1 conv: still run PyTorch's conv path
            side = int(round((ch.m) ** 0.5))
            if side * side == ch.m:
                conv = {"batch": 1, "h": side, "w": side, "ic": ch.k, "k1": 1}
        rc = RawCase(ch.case_id, ch.kind, ch.m, ch.n, ch.k, ch.l, ch.activation, ch.gated, conv)
        out["pytorch"] = measure_case(rc, flush, reps)
    return out


def _graph_rows(kern: Any, ch: Chain, seed: int, flush: Any, reps: int) -> dict[str, Any]:
    """A verified plan's launch captured into a CUDA graph: verified again as replays, then timed as them."""
    from fusesim.gpu.runner import KernelHung, time_kernel, verify

    try:
        out: dict[str, Any] = {"verify_graph": verify(kern, ch, seed=seed, graph=True)}
        if out["verify_graph"]["ok"]:
            out["time_graph"] = time_kernel(kern, ch, flush, reps, graph=True)
        return out
    except KernelHung:
        raise  # the device is stuck: the case's process must exit (bench records the case as failed)
    except RuntimeError as exc:  # the capture failed (a KernelError too: a launch error inside it)
        return {"graph_error": " ".join(str(exc).split())[:300]}


def _child(args: list[str]) -> int:
    """Subprocess entry: python -m fusesim.gpu.bench --child IN.json OUT.json."""
    doc = read_json(args[0])
    ch = Chain.from_dict(doc["chain"])
    res = run_case(ch, doc["entries"], doc["reps"], doc["seed"], doc["torch"], doc.get("graph_launch", False))
    Path(args[1]).write_text(json.dumps(res))
    return 0


def bench(cases: list[Chain], hw: Any, strategies: tuple[str, ...], top_k: int, source: str, reps: int,
          seed: int, work: Path, case_timeout_s: int | None = None, torch_baseline: bool = True,
          graph_launch: bool = False) -> list[dict[str, Any]]:
    case_timeout_s = case_timeout_s or int(os.environ.get("FUSESIM_CASE_TIMEOUT", "240"))
    work.mkdir(parents=True, exist_ok=True)
    per_case = {ch.case_id: select_plans(ch, hw, strategies, top_k, source) for ch in cases}
    flat = [(cid, e) for cid, es in per_case.items() for e in es]
    t0 = time.time()
    built = build_all([e["plan"] for _, e in flat], jobs=os.cpu_count() or 4)
    print(f"built {sum(1 for p, _ in built if p)}/{len(built)} kernels in {time.time() - t0:.1f} s", flush=True)
    for (_, e), (so, err) in zip(flat, built, strict=True):
        e["so"], e["error"] = so, err
    results = []
    for ch in cases:
        entries = [{"plan": e["plan"].to_dict(), "source": e["source"], "so": e["so"], "error": e["error"],
                    "predicted": e.get("predicted")} for e in per_case[ch.case_id]]
        inp, outp = work / f"{ch.case_id}.in.json", work / f"{ch.case_id}.out.json"
        inp.write_text(json.dumps({"chain": ch.to_dict(), "entries": entries, "reps": reps, "seed": seed,
                                   "torch": torch_baseline, "graph_launch": graph_launch}))
        try:
            proc = subprocess.run([sys.executable, "-m", "fusesim.gpu.bench", "--child", str(inp), str(outp)],
                                  timeout=case_timeout_s)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = -1
        if rc == 0 and outp.exists():
            res = read_json(outp)
        else:
            res = {"case": ch.case_id, "chain": ch.to_dict(), "error": f"case subprocess failed (rc {rc})",
                   "plans": [{"strategy": e["plan"]["strategy"], "plan": e["plan"], "so": e["so"]} for e in entries]}
            print(f"  {ch.case_id}: case subprocess failed rc={rc}", flush=True)
        res["planner_note"] = per_case[ch.case_id][0]["planner_note"] if per_case[ch.case_id] else ""
        results.append(res)
    return results


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    sys.exit("usage: python -m fusesim.gpu.bench --child IN.json OUT.json (use `fusesim bench`)")
