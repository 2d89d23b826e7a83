"""Nsight Compute traffic of a generated kernel: DRAM read/write, L2 and DSM bytes, time.

Runs `ncu --clock-control none` on a child process that launches the kernel once (ncu flushes
caches between replays: cold L2). For an unfused plan the two kernels' counters are summed.

    python3 -m fusesim.gpu.ncu --from BENCH.json G3,G4 OUT.json   # best plan of some cases
    python3 -m fusesim.gpu.ncu --all BENCH.json OUT.json [smem,dsm]  # every verified plan, one ncu run
    python3 -m fusesim.gpu.ncu --detail BENCH.json G1,G3 OUT.txt     # stall reasons etc. of the best plan
    python3 -m fusesim.gpu.ncu --smem BENCH.json OUT.json [smem,dsm]  # shared-memory bank conflicts, every plan

`--all` profiles every verified plan of a bench JSON (same machine: its .so paths exist) in ONE ncu
process (one child launches each kernel once, kernels are told apart by name) and writes the bench
JSON again with an `ncu` block on each profiled plan row, which `fusesim validate` reads. `--smem`
does the same with the LSU shared-memory counters (wavefronts and bank conflicts of ld/st.shared,
ldmatrix and cp.async's SMEM writes; wgmma operand reads and TMA / bulk-copy writes do not go through
the LSU pipe), writes the plans with an `ncu_smem` block only (`smem_compact`) and prints them per
template family (`smem_table`): an audit for bank conflicts the templates should not have.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fusesim.stored import read_json

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum", "gpu__time_duration.sum")
# shared-memory (wavefronts, bank conflicts) per LSU access kind: ld/st.shared, ldmatrix (the mma.sync
# operands) and cp.async's SMEM writes (ldgsts); TMA copies and wgmma's operand reads bypass the LSU pipe
SMEM_OPS = {
    "ld": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
    "st": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
    "ldsm": ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
             "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"),
    "ldgsts": ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
               "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"),
}
SMEM_METRICS = (*(m for pair in SMEM_OPS.values() for m in pair), "gpu__time_duration.sum")


def _to_bytes(value: str, unit: str) -> float:
    v = float(value.replace(",", ""))
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
             "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "ns": 1, "us": 1e3, "ms": 1e6}
    return v * scale.get(unit, 1)


def _ncu_cmd(exe: str, child: list[str], metrics: tuple[str, ...] = METRICS) -> list[str]:
    return [exe, "--clock-control", "none", "--kernel-name", "regex:fs_", "--metrics", ",".join(metrics),
            "--csv", "--page", "raw", sys.executable, "-m", "fusesim.gpu.ncu", *child]


def _run_ncu(cmd: list[str], timeout_s: int, metrics: tuple[str, ...] = METRICS) -> tuple[list[dict[str, Any]], str]:
    """One ncu process -> per kernel launch {name, metric: value in bytes/ns}, or ([], error)."""
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    text = res.stdout
    start = text.find('"ID"')
    if res.returncode != 0 or start < 0:
        return [], f"ncu rc {res.returncode}: {(res.stderr or text)[-500:]}"
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units, data = rows[0], rows[1], rows[2:]
    out = []
    for r in data:
        if len(r) != len(header):
            continue
        rec = dict(zip(header, r, strict=True))
        vals: dict[str, Any] = {"name": rec.get("Kernel Name", "")}
        for m in metrics:
            if m in rec and rec[m] not in ("", "n/a"):
                vals[m] = _to_bytes(rec[m], units[header.index(m)])
        out.append(vals)
    return out, ""


def first_launch_of_each(launches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One launch per kernel name: a plan is one launch of each of its kernels (a plan listed twice in a
    bench file was launched twice by `--all` before 2026-12-05 17:10 UTC, and summed twice)."""
    seen: set[str] = set()
    out = []
    for k in launches:
        if k["name"] not in seen:
            seen.add(k["name"])
            out.append(k)
    return out


def _summed(launches: list[dict[str, Any]], command: str, metrics: tuple[str, ...] = METRICS) -> dict[str, Any]:
    out: dict[str, Any] = {m: sum(k.get(m, 0.0) for k in launches) for m in metrics}
    out["kernels"] = [k["name"] for k in launches]
    out["per_kernel"] = [{m: k[m] for m in ("name", *metrics) if m in k} for k in launches]
    out["command"] = command
    return out


def profile(so: str, chain: dict[str, Any], work: Path) -> dict[str, Any]:
    exe = shutil.which("ncu")
    if exe is None:
        return {"error": "ncu not found"}
    spec = work / "ncu_chain.json"
    spec.write_text(json.dumps(chain))
    cmd = _ncu_cmd(exe, [so, str(spec)])
    launches, err = _run_ncu(cmd, 300)
    if err:
        return {"error": err}
    return _summed(launches, " ".join(cmd[:-2] + ["SO", "CHAIN"]))


def ncu_best(case: dict[str, Any], work: Path) -> None:
    ok = [r for r in case.get("plans", []) if r.get("verify", {}).get("ok") and r.get("time")]
    if not ok:
        return
    best = min(ok, key=lambda r: r["time"]["queued_median_us"])
    best["ncu"] = profile(best["so"], case["chain"], work)


def _launch_once(so: str, chain_json: str) -> int:
    import torch

    from fusesim.gpu.runner import Loaded, bind, make_problem
    from fusesim.workload import Chain

    ch = Chain.from_dict(read_json(chain_json))
    kern = Loaded(Path(so))
    prob = make_problem(ch, seed=7, reference=False)
    bind(kern, prob)
    torch.cuda.synchronize()
    kern.launch(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return 0


def _launch_many(spec_json: str) -> int:
    """Launch each listed kernel once ([{so, chain}]), freeing its tensors before the next."""
    import torch

    from fusesim.gpu.runner import Loaded, bind, make_problem
    from fusesim.workload import Chain

    for item in read_json(spec_json):
        kern = Loaded(Path(item["so"]))
        prob = make_problem(Chain.from_dict(item["chain"]), seed=7, reference=False)
        bind(kern, prob)
        torch.cuda.synchronize()
        kern.launch(torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        del prob
        torch.cuda.empty_cache()
    return 0


def so_kernel_stem(so: str) -> str:
    """`<cache>/<case>_<strategy>_<tag>_<key>.so` -> `<case>_<strategy>_<tag>`, the suffix of its kernels'
    names (fs_fused_<stem>, fs_gemm0_<stem>, fs_gemm1_<stem>)."""
    return Path(so).stem.rsplit("_", 1)[0]


ALL_STRATEGIES = ("unfused", "smem", "dsm")


def build_recorded(doc: dict[str, Any], strategies: tuple[str, ...] = ALL_STRATEGIES
                   ) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], dict[str, bool | int]]:
    """(case, plan row) of every verified plan of `strategies` in a bench JSON document, each row's "so" set to
    its kernel rebuilt under the generator switches the run recorded (its "codegen" block; without one,
    capability.FRAGMENT_EPILOGUE): the kernels it timed, a cache hit when they were carried along; the distinct
    ones compiled in parallel. Also the switches."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from fusesim.capability import FRAGMENT_EPILOGUE, codegen_switches, generator_switches
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.plan import Plan

    rows = [(c, r) for c in doc["cases"] for r in c.get("plans", [])
            if r.get("strategy") in strategies and r.get("verify", {}).get("ok") and r.get("plan")]
    with generator_switches(doc.get("codegen") or FRAGMENT_EPILOGUE):
        switches = codegen_switches()
        srcs = [generate(Plan.from_dict(r["plan"])) for _, r in rows]
    distinct = {s.digest: s for s in srcs}
    with ThreadPoolExecutor(min(16, os.cpu_count() or 2)) as ex:
        built = dict(zip(distinct, ex.map(lambda s: str(build(s, "so")), distinct.values()), strict=True))
    for (_, r), src in zip(rows, srcs, strict=True):
        r["so"] = built[src.digest]
    return rows, switches


def _all_from_bench(bench_json: str, out: str, strategies: tuple[str, ...], work: Path,
                    metrics: tuple[str, ...] = METRICS, block: str = "ncu") -> int:
    """ncu every verified plan of `strategies` in a bench JSON in one ncu process; write it back with
    a `block` (`ncu`) per profiled plan row. Kernels are rebuilt from the recorded plans with the generator
    switches the run recorded (its "codegen" block; without one, capability.FRAGMENT_EPILOGUE), so they are
    the kernels it timed (a cache hit when the run carries prebuilt kernels), and a bench JSON measured on
    another machine works too; the block records the switches."""
    exe = shutil.which("ncu")
    if exe is None:
        print("ncu not found")
        return 1
    doc = read_json(bench_json)
    rows, switches = build_recorded(doc, strategies)
    work.mkdir(parents=True, exist_ok=True)
    spec = work / "ncu_many.json"
    distinct = {r["so"]: c["chain"] for c, r in rows}  # a plan listed twice is launched once
    spec.write_text(json.dumps([{"so": so, "chain": chain} for so, chain in distinct.items()]))
    cmd = _ncu_cmd(exe, ["--launch-many", str(spec)], metrics)
    launches, err = _run_ncu(cmd, 540, metrics)
    if err:
        print(err)
        return 1
    command = " ".join(cmd[:-2] + ["--launch-many", "SPEC"])
    done = 0
    for c, r in rows:
        stem = so_kernel_stem(r["so"])
        mine = first_launch_of_each([k for k in launches if k["name"].endswith(stem)])
        if mine:
            r[block] = _summed(mine, command, metrics)
            done += 1
            print(c["case"], r["strategy"], r.get("summary", ""), {m: round(r[block][m]) for m in metrics}, flush=True)
    from fusesim.gpu.env import environment

    doc[block] = {"what": f"Nsight Compute counters of every verified {'/'.join(strategies)} plan (cold L2)",
                  "plans_profiled": done, "command": command, "codegen": switches, "env": environment()}
    Path(out).write_text(json.dumps(doc, indent=1))
    print(f"{done}/{len(rows)} plans profiled -> {out}")
    return 0 if done == len(rows) else 1


DETAIL_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "SchedulerStats", "WarpStateStats",
                   "MemoryWorkloadAnalysis")


def _detail(bench_json: str, cases: list[str], out: str, work: Path) -> int:
    """Nsight Compute sections (stall reasons, occupancy, throughput) of each case's best verified plan,
    as ncu prints them, one text file."""
    exe = shutil.which("ncu")
    if exe is None:
        print("ncu not found")
        return 1
    work.mkdir(parents=True, exist_ok=True)
    doc = read_json(bench_json)
    parts = []
    for c in doc["cases"]:
        ok = [r for r in c.get("plans", []) if r.get("verify", {}).get("ok") and r.get("time") and r.get("so")]
        if c["case"] not in cases or not ok:
            continue
        best = min(ok, key=lambda r: r["time"]["queued_median_us"])
        spec = work / f"detail_{c['case']}.json"
        spec.write_text(json.dumps(c["chain"]))
        cmd = [exe, "--clock-control", "none", "--kernel-name", "regex:fs_",
               *[a for sec in DETAIL_SECTIONS for a in ("--section", sec)],
               sys.executable, "-m", "fusesim.gpu.ncu", best["so"], str(spec)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        parts.append(f"### {c['case']} {best['summary']} (queued median {best['time']['queued_median_us']:.2f} us)\n"
                     f"$ {' '.join(cmd[:-2])} SO CHAIN\n{res.stdout[-20000:]}{res.stderr[-2000:]}")
    Path(out).write_text("\n".join(parts))
    print(f"{len(parts)} kernels profiled -> {out}")
    return 0 if parts else 1


def _from_bench(bench_json: str, cases: list[str], out: str, work: Path) -> int:
    """ncu the best verified plan of `cases` in a bench JSON (same machine: the .so paths exist)."""
    doc = read_json(bench_json)
    rows = []
    work.mkdir(parents=True, exist_ok=True)
    for c in doc["cases"]:
        if c["case"] in cases:
            ncu_best(c, work)
            for r in c["plans"]:
                if "ncu" in r:
                    rows.append({"case": c["case"], "strategy": r["strategy"], "summary": r["summary"],
                                 "time_us": r["time"]["queued_median_us"], "ncu": r["ncu"]})
                    print(c["case"], r["strategy"], {k: v for k, v in r["ncu"].items() if k != "kernels"}, flush=True)
    Path(out).write_text(json.dumps({"what": "Nsight Compute traffic of the best plan per case (cold L2)",
                                     "rows": rows}, indent=1))
    return 0


def smem_compact(doc: dict[str, Any]) -> dict[str, Any]:
    """The `--smem` result without the bench's other blocks: per case its profiled plans (summary, plan,
    measured time, `ncu_smem`), the run's `ncu_smem` header and the bench it read."""
    cases = [{"case": c["case"], "plans": [{k: r.get(k) for k in ("strategy", "summary", "plan", "time", "ncu_smem")}
                                           for r in c.get("plans", []) if "ncu_smem" in r]}
             for c in doc.get("cases", [])]
    return {"ncu_smem": doc.get("ncu_smem"), "bench": {k: doc.get(k) for k in ("workload", "hw", "env")}, "cases": cases}


def smem_table(doc: dict[str, Any], sm_count: int = 132, clock_mhz: float = 1980.0) -> list[str]:
    """Per template family and kernel (gemm0 / gemm1 / fused): per LSU access kind the bank-conflict share
    of its shared-memory wavefronts (conflicts / wavefronts; median and max over the plans), and what all
    conflict wavefronts would cost if nothing hid them (one wavefront per SM-cycle over `sm_count` SMs at
    `clock_mhz`, the H200's) as a share of the kernel's duration (median, max and its plan)."""
    from statistics import median

    from fusesim.plan import Plan

    dur = SMEM_METRICS[-1]
    groups: dict[str, list[tuple[dict[str, float], float, str]]] = {}
    for c in doc.get("cases", []):
        for r in c.get("plans", []):
            if "ncu_smem" not in r or not r.get("plan"):
                continue
            plan = Plan.from_dict(r["plan"])
            fam = ("gemm_wgmma" if plan.instruction == "wgmma" else "gemm") if plan.strategy == "unfused" else (
                "fused_wgmma" if plan.instruction == "wgmma" else "fused")
            for k in r["ncu_smem"].get("per_kernel", []):
                role = k["name"].split("_")[1] if k["name"].count("_") > 1 else "?"
                share = {op: (k.get(cm, 0.0) / k[wm] if k.get(wm) else 0.0) for op, (wm, cm) in SMEM_OPS.items()}
                conflicts = sum(k.get(cm, 0.0) for _wm, cm in SMEM_OPS.values())
                cost = conflicts / sm_count / (clock_mhz / 1e3) / k[dur] if k.get(dur) else 0.0
                groups.setdefault(f"{fam} {role}", []).append((share, cost, f"{c['case']} {r.get('summary', '')}"))
    out = ["family kernel        n | conflicts / wavefronts, median max: " + ", ".join(SMEM_OPS)
           + " | conflicts' share of the time: median max (plan)"]
    for name, vals in sorted(groups.items()):
        worst = max(vals, key=lambda v: v[1])
        ops = ", ".join(f"{median(v[0][op] for v in vals):.2f} {max(v[0][op] for v in vals):.2f}" for op in SMEM_OPS)
        out.append(f"{name:20s} {len(vals):3d} | {ops} | {100 * median(v[1] for v in vals):.2f}% "
                   f"{100 * worst[1]:.2f}% ({worst[2][:48]})")
    return out


if __name__ == "__main__":
    if sys.argv[1] == "--launch-many":
        sys.exit(_launch_many(sys.argv[2]))
    if sys.argv[1] == "--all":
        strat = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ALL_STRATEGIES
        sys.exit(_all_from_bench(sys.argv[2], sys.argv[3], strat, Path("/tmp/ncu_work")))
    if sys.argv[1] == "--smem":
        strat = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ALL_STRATEGIES
        rc = _all_from_bench(sys.argv[2], sys.argv[3], strat, Path("/tmp/ncu_work"), SMEM_METRICS, "ncu_smem")
        audit = smem_compact(read_json(sys.argv[3]))
        Path(sys.argv[3]).write_text(json.dumps(audit, indent=1))
        print("\n".join(smem_table(audit)))
        sys.exit(rc)
    if sys.argv[1] == "--detail":
        sys.exit(_detail(sys.argv[2], sys.argv[3].split(","), sys.argv[4], Path("/tmp/ncu_work")))
    if sys.argv[1] == "--from":
        sys.exit(_from_bench(sys.argv[2], sys.argv[3].split(","), sys.argv[4], Path("/tmp/ncu_work")))
    sys.exit(_launch_once(sys.argv[1], sys.argv[2]))
