"""Simulator speed and accuracy: per paper case and strategy, simulated time, events, wall seconds.

    python benchmarks/simulator.py                      # paper suites on h200 + Llama3-70B FFN at 8192 tokens
    python benchmarks/simulator.py --hw h100_sxm --no-llama
    python benchmarks/simulator.py --against results/h200/pytorch_baselines.json
    python benchmarks/simulator.py --against results/h200/pytorch_baselines.json --set l2_bandwidth_gbps=8000

Targets (one core): every paper case < 2 s, the whole suite (26 cases x 3 strategies) < 60 s,
the Llama3-70B FFN (gated, m=8192 n=28672 k=8192 l=8192) < 30 s per plan.

--against FILE compares the simulated unfused plan with the measured PyTorch chain (CUDA graph,
GPU-side median) and also simulates the chain PyTorch actually runs (`fusesim.sim.baseline`:
the activation, and for gated FFNs the second GEMM and the multiply, as separate kernels), since
the measured chain launches 3 (ffn, conv) or 5 (gated) kernels where the unfused plan has 2.
No parameter is fitted per case: every number comes from the hardware YAML.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fusesim.commands.common import table  # noqa: E402
from fusesim.hardware import load_hardware  # noqa: E402
from fusesim.stored import read_json  # noqa: E402
from fusesim.workload import Chain, load_workload  # noqa: E402
from fusesim.yamlio import parse_scalar  # noqa: E402

PAPER = ("paper_gemm_chains", "paper_gated_ffn", "paper_conv_chains")
STRATEGIES = ("unfused", "smem", "dsm")
LLAMA = Chain(case_id="llama3-70b-8192", kind="gated_ffn", m=8192, n=28672, k=8192, l=8192,
              activation="silu", gated=True)


def run_suite(hw, chains, strategies=STRATEGIES):
    from fusesim.planner import plan_case
    from fusesim.sim import simulate

    rows = []
    for ch in chains:
        res = plan_case(ch, hw, strategies=strategies, top_k=1)
        for s in strategies:
            scored = res.plans.get(s) or []
            if not scored:
                rows.append({"case": ch.case_id, "strategy": s, "infeasible": res.infeasible.get(s, "")})
                continue
            plan = scored[0].plan
            r = simulate(plan, hw)
            rows.append({"case": ch.case_id, "strategy": s, "chain": ch, "plan": plan, "result": r,
                         "predicted_us": scored[0].predicted.time_ns / 1e3})
    return rows


def print_suite(rows, hw, targets: tuple[float, float] = (2.0, 60.0)) -> None:
    out = []
    for r in rows:
        if "infeasible" in r:
            out.append([r["case"], r["strategy"], "-", "-", "-", "-", "-", "infeasible"])
            continue
        res = r["result"]
        out.append([r["case"], r["strategy"], res.time_us, r["predicted_us"], r["chain"].floor_ns(hw) / 1e3,
                    res.events, res.wall_s, r["plan"].summary()])
    print(table(["case", "strategy", "sim us", "pred us", "floor us", "events", "wall s", "plan"], out,
                title=f"simulator on {hw.name}"))
    done = [r for r in rows if "result" in r]
    walls = [r["result"].wall_s for r in done]
    per_case: dict[str, float] = {}
    for r in done:
        per_case[r["case"]] = per_case.get(r["case"], 0.0) + r["result"].wall_s
    worst = max(per_case.items(), key=lambda kv: kv[1])
    per_case_s, total_s = targets
    print(f"\n{len(done)} plans simulated in {sum(walls):.2f} s wall (target < {total_s:g} s); slowest plan "
          f"{max(walls):.3f} s; slowest case {worst[0]} {worst[1]:.3f} s for all its strategies "
          f"(target < {per_case_s:g} s per plan)")


def against(path: Path, hw, rows) -> None:
    from fusesim.sim.baseline import simulate_torch_chain

    data = read_json(path)
    measured = {c["case"]: c for c in data["cases"]}
    out = []
    errs_plan, errs_torch = [], []
    for r in rows:
        if r.get("strategy") != "unfused" or "result" not in r or r["case"] not in measured:
            continue
        meas = measured[r["case"]]["graph"]["queued_median_us"]
        sim_us = r["result"].time_us
        torch = simulate_torch_chain(r["plan"], hw, graph=True)
        e1, e2 = sim_us / meas - 1, torch.time_us / meas - 1
        errs_plan.append(abs(e1))
        errs_torch.append(abs(e2))
        out.append([r["case"], meas, sim_us, f"{e1:+.0%}", torch.time_us, f"{e2:+.0%}", len(torch.kernels),
                    "yes" if abs(e2) <= 0.25 else "NO"])
    print()
    print(table(["case", "measured us", "sim unfused us", "err", "sim torch chain us", "err", "kernels", "<=25%"], out,
                title=f"unfused vs measured PyTorch (CUDA graph, GPU-side median) from {path}"))
    if out:
        n_ok = sum(1 for e in errs_torch if e <= 0.25)
        print(f"\nmean |error|: unfused plan {sum(errs_plan) / len(errs_plan):.1%}, "
              f"torch chain {sum(errs_torch) / len(errs_torch):.1%}; within 25%: {n_ok}/{len(out)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="h200", help="hardware name or YAML (default h200)")
    ap.add_argument("--case", action="append", help="only these paper case ids")
    ap.add_argument("--no-llama", action="store_true", help="skip the Llama3-70B FFN at 8192 tokens")
    ap.add_argument("--against", type=Path, help="measured PyTorch baselines JSON (results/h200/pytorch_baselines.json)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a hardware field by dotted path (sensitivity runs, e.g. l2_bandwidth_gbps=8000)")
    args = ap.parse_args(argv)
    hw_path = Path(args.hw) if Path(args.hw).exists() else ROOT / "hw_configs" / f"{args.hw}.yaml"
    overrides = {k: parse_scalar(v) for k, _, v in (s.partition("=") for s in args.set)}
    hw = load_hardware(hw_path, overrides)
    if overrides:
        print(f"hardware overrides: {overrides}")
    chains = [c for w in PAPER for c in load_workload(ROOT / "workloads" / f"{w}.yaml").cases
              if not args.case or c.case_id in args.case]
    t0 = time.perf_counter()
    rows = run_suite(hw, chains)
    print_suite(rows, hw)
    print(f"(suite including planning: {time.perf_counter() - t0:.1f} s)")
    if args.against:
        against(args.against, hw, rows)
    if not args.no_llama:
        print()
        llama = run_suite(hw, [LLAMA], strategies=("unfused", "dsm"))
        print_suite(llama, hw, targets=(30.0, 60.0))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
