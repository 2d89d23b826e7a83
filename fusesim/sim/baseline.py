"""The chain PyTorch actually runs, built from an unfused Plan, for comparison with measurements.

The `unfused` strategy fuses the activation (and the gating multiply) into GEMM0's epilogue, as
cuBLASLt / torch.compile would: 2 kernels. Eager PyTorch, which the measured baselines in
results/h200/ ran (fusesim/gpu/baseline.py), launches more:
* ffn / conv_chain: act(A @ B) @ D -> GEMM, activation kernel, GEMM (3 kernels);
* gated_ffn: (silu(A @ Bg) * (A @ Bu)) @ D -> GEMM, GEMM, silu, multiply, GEMM (5 kernels);
* gemm_chain (no activation): 2 kernels, the plan itself.
The GEMMs keep the plan's tiles (gated branches: the planner's tiles for one plain GEMM) but use the machine's best tensor instruction (cuBLAS on Hopper
runs wgmma + TMA kernels, while the generated unfused plan may be mma.sync); element-wise kernels
move 16 KiB of output per 256-thread block. Every extra kernel pays the same launch overhead and
kernel gap as any other (hardware YAML).
"""

from __future__ import annotations

from dataclasses import replace

from fusesim.hardware import Hardware
from fusesim.plan import Kernel, Plan, Tiles
from fusesim.sim.engine import SimResult, simulate

ELTWISE_BYTES_PER_BLOCK = 16384
ELTWISE_THREADS = 256


def _eltwise(plan: Plan, op: str, name: str) -> Kernel:
    ch = plan.chain
    bn = min(ch.n, max(ELTWISE_BYTES_PER_BLOCK // ch.dtype_bytes, 1))
    bm = max(ELTWISE_BYTES_PER_BLOCK // (bn * ch.dtype_bytes), 1)
    grid = -(-ch.m // bm) * -(-ch.n // bn)
    return Kernel(name=name, op=op, grid_blocks=grid, cluster_size=1, threads=ELTWISE_THREADS,
                  smem_bytes=0, tiles=Tiles(bm, bn, 0), stages=1, regs_per_thread=32)


LIBRARY_CANDIDATES = 8  # tilings of a plain GEMM the library's heuristic is taken to choose among


def _plain_gemm0(plan: Plan, hw: Hardware) -> Kernel | None:
    """GEMM0's kernel as a library tiles a plain (ungated) GEMM of the same shape.

    The gated unfused plan tiles A@[Bg|Bu] with both branches in one block (narrow N tiles); eager
    PyTorch runs each branch as its own cuBLAS GEMM. A library picks, among its configurations,
    one that runs fast on the machine (its heuristics avoid, e.g., a tile count one SM short of
    a full wave), so of the planner's top plain-GEMM tilings the one the simulator runs fastest
    stands for it."""
    try:
        from fusesim.planner import plan_case
    except ImportError:
        return None
    plain = replace(plan.chain, gated=False, kind="ffn", activation="none")
    scored = plan_case(plain, hw, strategies=("unfused",), top_k=LIBRARY_CANDIDATES).plans.get("unfused") or []
    kernels = [sp.plan.kernels[0] for sp in scored]
    if not kernels:
        return None
    # each tiling with and without its split-K (a library splits K only where that helps)
    tiles = [-(-plain.m // k.tiles.block_m) * -(-plain.n // k.tiles.block_n) for k in kernels]
    kernels += [replace(k, grid_blocks=t) for k, t in zip(kernels, tiles, strict=True) if k.grid_blocks > t]
    instruction = hw.best_instruction()

    def alone_ns(k: Kernel) -> float:
        return simulate(scored[0].plan.with_(kernels=(k,), instruction=instruction), hw).time_ns

    return min(kernels, key=alone_ns)


def torch_chain_plan(plan: Plan, hw: Hardware | None = None) -> Plan:
    """The eager-PyTorch kernel sequence for the unfused `plan`'s chain (same GEMM tiles; with
    `hw`, the GEMMs use its best tensor instruction, as cuBLAS does)."""
    if plan.strategy != "unfused":
        raise ValueError("torch_chain_plan needs an unfused plan")
    ch = plan.chain
    g0, g1 = plan.kernels[0], plan.kernels[-1]
    if ch.gated:
        eb = ch.dtype_bytes
        single = _plain_gemm0(plan, hw) if hw is not None else None
        if single is not None:  # a library tiles each branch as the plain GEMM it is
            g0 = single
        t = g0.tiles
        single_smem = g0.stages * (t.block_m * t.block_k + t.block_k * t.block_n) * eb
        gate = Kernel(f"{ch.case_id}_mm_gate", "gemm:A*Bg->G", g0.grid_blocks, 1, g0.threads,
                      min(g0.smem_bytes, single_smem), t, g0.stages, g0.regs_per_thread)
        up = Kernel(f"{ch.case_id}_mm_up", "gemm:A*Bu->U", g0.grid_blocks, 1, g0.threads,
                    min(g0.smem_bytes, single_smem), t, g0.stages, g0.regs_per_thread)
        kernels = (gate, up, _eltwise(plan, "eltwise:G->S", f"{ch.case_id}_silu"),
                   _eltwise(plan, "eltwise:S,U->C", f"{ch.case_id}_mul"), g1)
    elif ch.activation != "none":
        mm = Kernel(f"{ch.case_id}_mm0", "gemm:A*B->C", g0.grid_blocks, 1, g0.threads, g0.smem_bytes,
                    g0.tiles, g0.stages, g0.regs_per_thread)
        kernels = (mm, _eltwise(plan, "eltwise:C->C", f"{ch.case_id}_{ch.activation}"), g1)
    else:
        kernels = plan.kernels
    instruction = hw.best_instruction() if hw is not None else plan.instruction
    return plan.with_(kernels=kernels, instruction=instruction,
                      notes=(*plan.notes, "eager PyTorch kernel sequence (fusesim.sim.baseline)"))


def simulate_torch_chain(plan: Plan, hw: Hardware, trace: bool = False, graph: bool = False) -> SimResult:
    """The eager-PyTorch sequence of the unfused `plan`; `graph`: replayed from a CUDA graph (the
    measured baselines), so dependent kernels are `hw.graph_kernel_gap_us` apart, not the stream's
    `kernel_gap_us` (fusesim calibrate measures both). PyTorch launches no programmatic dependent
    launch, so the last GEMM waits the gap too (`pdl_release_us` is the generated kernels'); nor is the
    TMA ring's refill handshake of the generated templates (`tma_refill_ns`) a library kernel's."""
    hw = hw.model_copy(update={"pdl_release_us": None, "tma_refill_ns": None})
    if graph and hw.graph_kernel_gap_us is not None:
        hw = hw.model_copy(update={"kernel_gap_us": hw.graph_kernel_gap_us})
    return simulate(torch_chain_plan(plan, hw), hw, trace=trace)
