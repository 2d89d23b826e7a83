"""compute-sanitizer memcheck and racecheck on one kernel per template family.

    python3 -m fusesim.gpu.sanitize --out FILE.json

Each check runs `compute-sanitizer --tool T --kernel-name kns=fs_` over a child process that
launches the generated kernel once on random inputs (fusesim.gpu.ncu's launcher), so only our
kernels are instrumented. The JSON keeps each tool's summary lines and exit status.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from fusesim.codegen.handplans import fused, unfused
from fusesim.gpu.oddshapes import ODD_CHAINS, _ffn
from fusesim.plan import ClusterShape, Plan


def family_plans() -> dict[str, Plan]:
    ch = _ffn("san", 96, 1024, 256, 256, "gelu")
    g = _ffn("san-gated", 80, 512, 128, 128, gated=True)
    return {
        "gemm (unfused, gated, predicated M)": unfused(ODD_CHAINS[3], 64, 32, 32),
        "fused smem (cluster 1, inter_cluster_reduce)": fused(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=4),
        "fused dsm (exchange add + shuffle + reduce_scatter)": fused(ch, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=1),
        "fused dsm (mul exchange + shuffle + inter_cluster_reduce)": fused(g, ClusterShape(1, 2, 2, 4), 64, 64, 64,
                                                                          n_split=2, gated_mode="mul_exchange"),
        "fused dsm, E in registers + shared SMEM (exchange + shuffle + reduce + inter-cluster)": fused(
            ch, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=4),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/sanitize_work")
    args = p.parse_args(argv)
    from fusesim.gpu.bench import build_all

    exe = shutil.which("compute-sanitizer")
    if exe is None:
        print("compute-sanitizer not found")
        return 1
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    plans = family_plans()
    built = build_all(list(plans.values()), jobs=8)
    procs: list[tuple[str, str, Any, Path]] = []
    for (name, plan), (so, err) in zip(plans.items(), built, strict=True):
        if not so:
            print(f"{name}: build failed {err[:200]}")
            continue
        spec = work / f"{plan.case_id}_{plan.strategy}_{len(procs)}.json"
        spec.write_text(json.dumps(plan.chain.to_dict()))
        for tool in ("memcheck", "racecheck"):
            log = work / f"{spec.stem}_{tool}.log"
            cmd = [exe, "--tool", tool, "--kernel-name", "kns=fs_", "--error-exitcode", "9",
                   sys.executable, "-m", "fusesim.gpu.ncu", so, str(spec)]
            procs.append((name, tool, subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT), log))
    rows = []
    for name, tool, proc, log in procs:
        try:
            rc = proc.wait(timeout=400)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = -9
        text = log.read_text(errors="replace")
        summary = [ln.strip() for ln in text.splitlines() if "SUMMARY" in ln or "Error" in ln][-6:]
        rows.append({"family": name, "tool": tool, "rc": rc, "summary": summary,
                     "plan": plans[name].summary(), "case": plans[name].case_id})
        print(f"{tool:9s} rc={rc:3d} {name}: {' | '.join(summary)[:160]}", flush=True)
    Path(args.out).write_text(json.dumps({"what": "compute-sanitizer on one kernel per template family",
                                          "rows": rows}, indent=1))
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
