"""Correctness on odd shapes and on every dsm_comm form, on the GPU (verification only, no timing).

    python3 -m fusesim.gpu.oddshapes --out FILE.json

Shapes whose M does not divide the tile (predicated rows: M = 1, 49, 100, 196, 257), small and
non-power-of-two N/K/L, a 3x3 conv with an image edge in every tile; and, on one mid-size chain,
one plan per dsm_comm form: all-exchange add, mul exchange (gated), ring shuffle, reduce-scatter,
inter-cluster reduce, cls_m > 1, a 16-block cluster (non-portable size).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fusesim.codegen.handplans import candidates, fused, unfused
from fusesim.plan import ClusterShape, Plan
from fusesim.workload import Chain, ConvGeom


def _ffn(cid: str, m: int, n: int, k: int, l: int, act: str = "gelu", gated: bool = False) -> Chain:  # noqa: E741
    return Chain(cid, "gated_ffn" if gated else "ffn", m, n, k, l, "silu" if gated else act, gated)


ODD_CHAINS = (
    _ffn("odd-m1", 1, 256, 64, 128, "relu"),
    _ffn("odd-m100", 100, 384, 96, 160, "gelu"),
    _ffn("odd-m257", 257, 512, 48, 96, "silu"),
    _ffn("odd-gated-m77", 77, 768, 160, 192, gated=True),
    _ffn("odd-none-m33", 33, 128, 32, 48, "none"),
    Chain("odd-conv3x3", "conv_chain", 2 * 9 * 11, 64, 9 * 32, 48, "relu", False, conv=ConvGeom(2, 9, 11, 32, 3)),
)


def form_plans() -> list[Plan]:
    """One plan per dsm_comm form on mid-size chains (all buildable by construction)."""
    ch = _ffn("forms", 96, 2048, 512, 512, "gelu")
    gch = _ffn("forms-gated", 96, 1024, 256, 256, gated=True)
    cv = Chain("forms-conv", "conv_chain", 14 * 14, 128, 9 * 64, 256, "relu", False, conv=ConvGeom(1, 14, 14, 64, 3))
    specs: list[tuple[Chain, ClusterShape, int, int, int, int, str | None, int]] = [
        (ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, 8, None, 256),     # smem, inter-cluster reduce
        (ch, ClusterShape(1, 1, 2, 2), 64, 64, 64, 4, None, 256),     # all-exchange add
        (ch, ClusterShape(1, 4, 1, 4), 64, 64, 64, 2, None, 256),     # ring shuffle 4
        (ch, ClusterShape(1, 4, 1, 2), 64, 64, 32, 2, None, 128),     # shuffle 2 x reduce-scatter 2
        (ch, ClusterShape(1, 4, 2, 4), 64, 64, 64, 1, None, 256),     # exchange + shuffle + reduce
        (ch, ClusterShape(2, 2, 2, 4), 64, 64, 64, 2, None, 256),     # cls_m = 2
        (ch, ClusterShape(1, 16, 1, 16), 64, 32, 32, 1, None, 256),   # 16-block cluster
        (ch, ClusterShape(1, 8, 2, 8), 64, 32, 32, 1, None, 128),     # 16 blocks, exchange + reduce
        (gch, ClusterShape(1, 2, 2, 4), 64, 64, 64, 2, "mul_exchange", 256),
        (gch, ClusterShape(1, 2, 2, 2), 64, 64, 64, 2, "sequential", 256),
        (gch, ClusterShape(1, 1, 1, 1), 64, 64, 64, 4, "sequential", 256),
        (cv, ClusterShape(1, 2, 1, 2), 64, 64, 64, 1, None, 256),     # im2col + shuffle
        (cv, ClusterShape(1, 1, 2, 2), 64, 64, 32, 2, None, 256),     # im2col + exchange + inter-cluster
        # one N chunk per cluster: E in registers, stages / exchange / E share SMEM
        (ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, 32, None, 256),    # smem, E regs, inter-cluster
        (ch, ClusterShape(1, 4, 2, 4), 64, 64, 64, 8, None, 256),     # exchange + shuffle + reduce
        (ch, ClusterShape(1, 8, 1, 8), 64, 64, 64, 4, None, 256),     # ring shuffle 8
        (ch, ClusterShape(1, 16, 1, 16), 64, 32, 32, 4, None, 256),   # 16-block cluster
        (ch, ClusterShape(2, 2, 2, 2), 48, 64, 64, 16, None, 128),    # cls_m = 2, exchange + reduce
        (gch, ClusterShape(1, 2, 2, 4), 64, 64, 64, 8, "mul_exchange", 256),
        (gch, ClusterShape(1, 4, 2, 8), 64, 32, 32, 8, "sequential", 128),
    ]
    out = []
    for chn, cs, bm, bn, bk, ns, gm, thr in specs:
        out.append(fused(chn, cs, bm, bn, bk, n_split=ns, stages=3, threads=thr, gated_mode=gm))
    out.append(unfused(gch, 64, 64, 64))
    out.append(unfused(cv, 64, 64, 64))
    return out


def all_plans() -> list[Plan]:
    plans = form_plans()
    for ch in ODD_CHAINS:
        for ps in candidates(ch, per_strategy=2).values():
            plans += ps
    return plans


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=101)
    args = p.parse_args(argv)
    from fusesim.gpu.bench import build_all
    from fusesim.gpu.env import environment
    from fusesim.gpu.runner import KernelError, Loaded, verify

    plans = all_plans()
    built = build_all(plans, jobs=16)
    rows: list[dict[str, Any]] = []
    for i, (plan, (so, err)) in enumerate(zip(plans, built, strict=True)):
        row: dict[str, Any] = {"case": plan.case_id, "strategy": plan.strategy, "summary": plan.summary(),
                               "gated_mode": plan.gated_mode, "buildable": plan.buildable, "build_error": err,
                               "plan": plan.to_dict()}
        if so:
            try:
                row["verify"] = verify(Loaded(Path(so)), plan.chain, seed=args.seed + i)
            except KernelError as exc:
                row["run_error"] = str(exc)
        rows.append(row)
        v = row.get("verify", {})
        print(f"{plan.case_id:16s} {plan.strategy:7s} {plan.summary()[:78]:78s} ok={v.get('ok')} "
              f"err={v.get('rel_err', float('nan')):.2e} {(row.get('run_error') or err or '')[:60]}", flush=True)
    passed = sum(1 for r in rows if r.get("verify", {}).get("ok"))
    doc = {"what": "fusesim odd shapes and dsm_comm forms: verification vs float32 PyTorch (rel. Frobenius < 1e-2)",
           "env": environment(), "passed": passed, "total": len(rows), "rows": rows}
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"odd shapes + forms: {passed}/{len(rows)} passed")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
