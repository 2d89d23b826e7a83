"""Plan -> CUDA C++ for sm_90a: jinja2 templates plus the dsm_comm device header.

`generate(plan)` renders exactly the plan's tiles, cluster shape, stages and threads (it never
re-decides them); `fusesim.capability.can_build` says beforehand whether it can. Two template
families: `gemm` (the unfused plan's two kernels) and `fused` (smem and dsm plans, one kernel).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from fusesim.capability import (
    PAD_BF16,
    PAD_F32,
    can_build,
    e_in_regs,
    fused_layout,
    gemm1_sub_l,
    gemm_smem_bytes,
    warp_grid,
)
from fusesim.plan import Plan

TEMPLATES = Path(__file__).parent / "templates"
# Per block and tensor: L2 prefetch of the first chunk's B panel and D slices at kernel start.
# Off: measured on the H200 it made the same 150 plans 5.8% slower (median; +1.6 us on small
# cases), results/h200/prefetch_trial_*.json.
PREFETCH_BYTES = 0
INCLUDE = Path(__file__).parent / "include"


class CannotBuild(ValueError):
    """The plan is outside what the generator emits (the reason is capability's)."""


@dataclass(frozen=True)
class Source:
    """One generated translation unit."""

    name: str  # file stem, safe for a file name
    family: str  # "gemm" | "fused"
    code: str

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.code.encode())
        for hdr in sorted(INCLUDE.glob("*.cuh")):
            h.update(hdr.read_bytes())
        return h.hexdigest()[:16]


def safe_name(text: str) -> str:
    """Case ids become file and symbol names: keep [A-Za-z0-9_] only."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return out if out and not out[0].isdigit() else f"c_{out}"


def plan_tag(plan: Plan) -> str:
    """Short stable id of a plan (its JSON), for file and kernel names."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:10]


def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def _conv(plan: Plan) -> dict[str, int] | None:
    cv = plan.chain.conv
    return None if cv is None else {"h": cv.h, "w": cv.w, "ic": cv.ic, "k1": cv.k1, "batch": cv.batch}


def _common_vars(plan: Plan) -> dict[str, object]:
    ch = plan.chain
    return {
        "case_id": ch.case_id, "strategy": plan.strategy, "summary": plan.summary(),
        "m": ch.m, "n": ch.n, "k": ch.k, "l": ch.l, "gated": ch.gated,
        "activation": ch.activation, "conv": _conv(plan), "pad_bf16": PAD_BF16, "pad_f32": PAD_F32,
    }


def render_fused(plan: Plan, name: str) -> str:
    t, c = plan.tiles, plan.cluster
    warps = plan.threads // 32
    sub_l = gemm1_sub_l(plan)
    wm0, wn0 = warp_grid(t.block_m, t.block_n, warps)  # type: ignore[misc]
    wm1, wn1 = warp_grid(t.block_m, sub_l, warps)  # type: ignore[misc]
    return _env().get_template("fused.cu.j2").render(
        **_common_vars(plan), kernel_name=f"fs_fused_{name}",
        block_m=t.block_m, block_n=t.block_n, block_k=t.block_k, block_l=t.block_l, sub_l=sub_l,
        cls_m=c.m, cls_n=c.n, cls_k=c.k, cls_l=c.l, grid_m=plan.grid_m, n_split=plan.n_split,
        n_passes=plan.n_passes, stages=plan.stages, threads=plan.threads, gated_mode=plan.gated_mode,
        wm0=wm0, wn0=wn0, wm1=wm1, wn1=wn1, smem_bytes=fused_layout(plan).total, e_regs=e_in_regs(plan),
        prefetch_bytes=PREFETCH_BYTES,
    )


def render_gemm(plan: Plan, name: str) -> str:
    ch = plan.chain
    gemms = []
    for idx, kern in enumerate(plan.kernels):
        t = kern.tiles
        gated = ch.gated and idx == 0
        rows, cols, depth = (ch.m, ch.n, ch.k) if idx == 0 else (ch.m, ch.l, ch.n)
        wm, wn = warp_grid(t.block_m, t.block_n, kern.threads // 32)  # type: ignore[misc]
        gemms.append({
            "name": f"gemm{idx}", "kernel_name": f"fs_gemm{idx}_{name}", "rows": rows, "cols": cols, "depth": depth,
            "block_m": t.block_m, "block_n": t.block_n, "block_k": t.block_k, "stages": kern.stages,
            "threads": kern.threads, "wm": wm, "wn": wn, "gated": gated,
            "epilogue": ("silu" if gated else ch.activation) if idx == 0 else "none",
            "im2col": idx == 0 and ch.conv is not None and ch.conv.k1 > 1,
            "smem_bytes": gemm_smem_bytes(t.block_m, t.block_n, t.block_k, kern.stages, gated),
        })
    return _env().get_template("gemm.cu.j2").render(**_common_vars(plan), gemms=gemms)


def generate(plan: Plan) -> Source:
    """The .cu source of a plan; raises CannotBuild with capability's reason."""
    ok, why = can_build(plan)
    if not ok:
        raise CannotBuild(f"case {plan.case_id}: {plan.strategy} plan not buildable: {why}")
    name = f"{safe_name(plan.case_id)}_{plan.strategy}_{plan_tag(plan)}"
    if plan.strategy == "unfused":
        return Source(name, "gemm", render_gemm(plan, name))
    return Source(name, "fused", render_fused(plan, name))
