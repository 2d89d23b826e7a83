"""Nsight Compute traffic of a generated kernel: DRAM read/write, L2 and DSM bytes, time.

Runs `ncu --clock-control none` on a child process that launches the kernel once (ncu flushes
caches between replays: cold L2). For an unfused plan the two kernels' counters are summed.
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

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
           "l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum", "gpu__time_duration.sum")


def _to_bytes(value: str, unit: str) -> float:
    v = float(value.replace(",", ""))
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9,
             "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "ns": 1, "us": 1e3, "ms": 1e6}
    return v * scale.get(unit, 1)


def profile(so: str, chain: dict[str, Any], work: Path) -> dict[str, Any]:
    exe = shutil.which("ncu")
    if exe is None:
        return {"error": "ncu not found"}
    spec = work / "ncu_chain.json"
    spec.write_text(json.dumps(chain))
    cmd = [exe, "--clock-control", "none", "--kernel-name", "regex:fs_", "--metrics", ",".join(METRICS),
           "--csv", "--page", "raw", sys.executable, "-m", "fusesim.gpu.ncu", so, str(spec)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = res.stdout
    start = text.find('"ID"')
    if res.returncode != 0 or start < 0:
        return {"error": f"ncu rc {res.returncode}: {(res.stderr or text)[-500:]}"}
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units, data = rows[0], rows[1], rows[2:]
    out: dict[str, Any] = {m: 0.0 for m in METRICS}
    out["kernels"] = []
    for r in data:
        if len(r) != len(header):
            continue
        rec = dict(zip(header, r, strict=True))
        out["kernels"].append(rec.get("Kernel Name", ""))
        for m in METRICS:
            if m in rec and rec[m] not in ("", "n/a"):
                out[m] += _to_bytes(rec[m], units[header.index(m)])
    out["command"] = " ".join(cmd[:-2] + ["SO", "CHAIN"])
    return out


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

    ch = Chain.from_dict(json.loads(Path(chain_json).read_text()))
    kern = Loaded(Path(so))
    prob = make_problem(ch, seed=7)
    bind(kern, prob)
    torch.cuda.synchronize()
    kern.launch(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return 0


def _from_bench(bench_json: str, cases: list[str], out: str, work: Path) -> int:
    """ncu the best verified plan of `cases` in a bench JSON (same machine: the .so paths exist)."""
    doc = json.loads(Path(bench_json).read_text())
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


if __name__ == "__main__":
    if sys.argv[1] == "--from":
        sys.exit(_from_bench(sys.argv[2], sys.argv[3].split(","), sys.argv[4], Path("/tmp/ncu_work")))
    sys.exit(_launch_once(sys.argv[1], sys.argv[2]))
