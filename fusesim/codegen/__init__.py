"""Plan -> CUDA C++ for sm_90a: jinja2 templates plus the dsm_comm device header.

`generate(plan)` renders exactly the plan's tiles, cluster shape, stages and threads (it never
re-decides them); `fusesim.capability.can_build` says beforehand whether it can. Four template
families: `gemm` (the unfused plan's two kernels, mma.sync), `gemm_wgmma` (the same two kernels
for plans with instruction "wgmma": TMA + wgmma, split-K), `fused` (smem and dsm plans, one kernel,
mma.sync) and `fused_wgmma` (smem and dsm plans with instruction "wgmma": TMA + wgmma, dsm_comm
through st.async and bulk DSM copies completing on mbarriers).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2

from fusesim import capability
from fusesim.capability import (
    PAD_BF16,
    PAD_F32,
    can_build,
    e_in_regs,
    fused_layout,
    fused_wgmma_layout,
    fused_wgmma_sub_l,
    gemm1_sub_l,
    gemm_smem_bytes,
    kernel_split,
    pdl_secondary,
    warp_grid,
    wgmma_gemm_smem_bytes,
    wgmma_split_rows_staged,
    wgmma_threads,
)
from fusesim.plan import Kernel, Plan

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
    family: str  # "gemm" | "gemm_wgmma" | "fused" | "fused_wgmma"
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
        prefetch_bytes=PREFETCH_BYTES, convert_batch=capability.CONVERT_BATCH if plan.n_split > 1 else 1,
        im2col_rows=capability.im2col_rows_hoisted(plan.chain, t.block_k),
    )


def _gemms(plan: Plan) -> list[tuple[int, Kernel, bool, int, int, int, str]]:
    """(index, kernel, gated, rows, cols, depth, epilogue activation) of an unfused plan's GEMMs."""
    ch = plan.chain
    out = []
    for idx, kern in enumerate(plan.kernels):
        gated = ch.gated and idx == 0
        rows, cols, depth = (ch.m, ch.n, ch.k) if idx == 0 else (ch.m, ch.l, ch.n)
        act = ("silu" if gated else ch.activation) if idx == 0 else "none"
        out.append((idx, kern, gated, rows, cols, depth, act))
    return out


def render_gemm(plan: Plan, name: str) -> str:
    ch = plan.chain
    gemms = []
    for idx, kern, gated, rows, cols, depth, act in _gemms(plan):
        t = kern.tiles
        wm, wn = warp_grid(t.block_m, t.block_n, kern.threads // 32)  # type: ignore[misc]
        gemms.append({
            "name": f"gemm{idx}", "kernel_name": f"fs_gemm{idx}_{name}", "rows": rows, "cols": cols, "depth": depth,
            "block_m": t.block_m, "block_n": t.block_n, "block_k": t.block_k, "stages": kern.stages,
            "threads": kern.threads, "wm": wm, "wn": wn, "gated": gated,
            "epilogue": act,
            "im2col": idx == 0 and ch.conv is not None and ch.conv.k1 > 1,
            "im2col_rows": idx == 0 and capability.im2col_rows_hoisted(ch, t.block_k),
            "smem_bytes": gemm_smem_bytes(t.block_m, t.block_n, t.block_k, kern.stages, gated),
        })
    return _env().get_template("gemm.cu.j2").render(**_common_vars(plan), gemms=gemms)


def wgmma_asm(block_n: int) -> str:
    """The inline-PTX statement of one wgmma m64n{block_n}k16 (bf16 -> fp32, A K-major, B N-major):
    accumulators d[0..block_n/2), descriptors da, db; its operand list depends on block_n."""
    n = block_n // 2
    regs = ", ".join(f"%{i}" for i in range(n))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(n))
    return (f'asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{n + 2}, 0;\\n '
            f'wgmma.mma_async.sync.aligned.m64n{block_n}k16.f32.bf16.bf16 {{{regs}}}, %{n}, %{n + 1}, p, 1, 1, 0, 1;'
            f'\\n}}\\n"\n      : {outs}\n      : "l"(da), "l"(db), "r"(1) : "memory");')


# gemm_wgmma: gemm0 prefetches up to this many bytes of D into L2 for gemm1 (0: off).
GEMM_D_PREFETCH_MAX_BYTES = 0
# gemm_wgmma: the GEMMs (0, 1) launched with more dynamic SMEM than half an SM holds, so that one block runs per SM
# (scripts/deep_ring_trial.py's "solo" variants; empty: as `capability.kernel_launch_smem_bytes`).
GEMM_SOLO_SM: tuple[int, ...] = ()


def _launch_smem(plan: Plan, kern: Kernel, idx: int, ring_bytes: int) -> int:
    """Dynamic SMEM gemm`idx` asks for at launch where more than its ring's (0: its ring's)."""
    solo = idx in GEMM_SOLO_SM or capability.gemm_solo_sm(plan, kern)
    return capability.SOLO_SM_BYTES if solo and capability.SOLO_SM_BYTES > ring_bytes else 0


def render_gemm_wgmma(plan: Plan, name: str, prefetch_max_bytes: int | None = None) -> str:
    ch = plan.chain
    cap = GEMM_D_PREFETCH_MAX_BYTES if prefetch_max_bytes is None else prefetch_max_bytes
    d_bytes = ch.n * ch.l * ch.dtype_bytes
    gemms = []
    for idx, kern, gated, rows, cols, depth, act in _gemms(plan):
        t = kern.tiles
        ring_bytes = wgmma_gemm_smem_bytes(t.block_m, t.block_n, kern.stages, gated)
        split, lean = kernel_split(kern, rows, cols), capability.kernel_split_lean(plan, kern)
        gemms.append({
            "name": f"gemm{idx}", "kernel_name": f"fs_wgmma{idx}_{name}", "rows": rows, "cols": cols, "depth": depth,
            "block_m": t.block_m, "block_n": t.block_n, "block_k": t.block_k, "stages": kern.stages,
            "split": split, "gated": gated, "epilogue": act, "epilogue_act": act,
            "smem_bytes": ring_bytes, "launch_smem": _launch_smem(plan, kern, idx, ring_bytes),
            "mma_asm": wgmma_asm(t.block_n), "pdl_primary": idx == 0, "pdl_secondary": pdl_secondary(plan, kern),
            "cluster": kern.cluster_size, "staged_store": capability.GEMM_STAGED_STORE,
            "staged_red": wgmma_split_rows_staged(t.block_m, t.block_n, kern.stages, gated)
            and split > 1,
            "split_shared": capability.kernel_split_shared(plan, kern), "split_lean": lean,
            "sum_batch": capability.split_sum_batch(t.block_m, t.block_n, split, wgmma_threads(t.block_m), gated, lean)
            if lean else 0,  # rendered only lean (no batch for a GEMM without split-K)
            "prefetch_bytes": min(d_bytes, cap) // 16 * 16 if idx == 0 else 0,
            "convert_batch": capability.CONVERT_BATCH if split > 1 else 1,
            "im2col": idx == 0 and capability.wgmma_im2col(ch),
            "im2col_tma": idx == 0 and capability.wgmma_im2col_tma(ch),
        })
    return _env().get_template("gemm_wgmma.cu.j2").render(**_common_vars(plan), gemms=gemms)


def render_fused_wgmma(plan: Plan, name: str) -> str:
    t, c = plan.tiles, plan.cluster
    sub_l = fused_wgmma_sub_l(t.block_l)
    layout = fused_wgmma_layout(plan)
    return _env().get_template("fused_wgmma.cu.j2").render(
        **_common_vars(plan), kernel_name=f"fs_fwg_{name}",
        block_m=t.block_m, block_n=t.block_n, block_l=t.block_l, sub_l=sub_l,
        cls_m=c.m, cls_n=c.n, cls_k=c.k, cls_l=c.l, grid_m=plan.grid_m, n_split=plan.n_split,
        stages=plan.stages, gated_mode=plan.gated_mode, smem_bytes=layout.total,
        er_alias=layout.receive_aliased, mma0_asm=wgmma_asm(t.block_n), mma1_asm=wgmma_asm(sub_l),
        convert_batch=capability.CONVERT_BATCH if plan.n_split > 1 else 1, im2col=capability.wgmma_im2col(plan.chain),
        im2col_tma=capability.wgmma_im2col_tma(plan.chain),
        e_staged=capability.fused_wgmma_e_staged(plan), early_exit_arrive=capability.fused_wgmma_early_exit_arrive(plan),
        producer_early_wait=capability.fused_wgmma_producer_early_wait(plan),
        gemm1_unroll=capability.FUSED_GEMM1_UNROLL, relaxed_arrive=capability.FUSED_RELAXED_ARRIVE,
    )


def generate(plan: Plan) -> Source:
    """The .cu source of a plan; raises CannotBuild with capability's reason."""
    ok, why = can_build(plan)
    if not ok:
        raise CannotBuild(f"case {plan.case_id}: {plan.strategy} plan not buildable: {why}")
    name = f"{safe_name(plan.case_id)}_{plan.strategy}_{plan_tag(plan)}"
    if plan.strategy == "unfused" and plan.instruction == "wgmma":
        return Source(name, "gemm_wgmma", render_gemm_wgmma(plan, name))
    if plan.strategy == "unfused":
        return Source(name, "gemm", render_gemm(plan, name))
    if plan.instruction == "wgmma":
        return Source(name, "fused_wgmma", render_fused_wgmma(plan, name))
    return Source(name, "fused", render_fused(plan, name))
