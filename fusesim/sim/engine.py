"""`simulate(plan, hw)`: run a Plan's kernel(s) on the SimPy machine and report time, bytes, utilization.

The kernel launcher is a SimPy process: the first launch pays `launch_overhead_us` (front-end:
launch to first block); every dependent kernel starts `kernel_gap_us` after the previous one's
last block and its stores (in stream order the next launch is processed while the previous
kernel runs, so its overhead is hidden: a chain of k kernels costs launch + (k-1) gaps + spans,
as fusesim calibrate measures on the H200), except a programmatic dependent launch (gemm_wgmma's
second GEMM), whose blocks start while the previous kernel runs and leave griddepcontrol.wait
`pdl_release_us` after its last block (calibrate's pdl group) instead of the stream gap; its fixed
start cost lies before griddepcontrol.wait, under the previous kernel when its blocks can start
beside that kernel's (`_start_cost_us`); a fused plan is one kernel whatever n_split (its
inter_cluster_reduce workspace is left zeroed by the previous launch: no memset, no gap). After the
last kernel the outputs still dirty in L2 (E, and the zeroed workspace of an n_split > 1 plan) are
written back to HBM and the time includes draining them (so no plan beats min bytes / HBM bandwidth); those bytes
are `drain_bytes`, not `hbm_write` (which counts what reaches HBM while the kernels run, as Nsight
Compute and fusesim.planner.dataflow do). Dead intermediates (the unfused C) are dropped.

Determinism: no randomness, no hashing of unordered collections into the event order (tile sets
are sorted before use), so the same inputs give the same outputs bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import simpy
from simpy.core import EmptySchedule

from fusesim.capability import (
    kernel_blocks_per_sm,
    kernel_launch_smem_bytes,
    kernel_regs_per_thread,
    kernel_split_shared,
    pdl_secondary,
)
from fusesim.hardware import Hardware
from fusesim.plan import Plan
from fusesim.sim.gpu import GPU, dispatch
from fusesim.sim.kernels import (
    INTERMEDIATES,
    WORKSPACE,
    EltwiseCohort,
    FusedCohort,
    FusedWgmmaCohort,
    GemmCohort,
    eltwise_io,
    kernel_io,
    l2_policy,
    layouts_for,
    raster,
    split_workspaces,
)


@dataclass
class SimResult:
    """What one simulation predicts. Bytes are whole-plan totals; utilization is busy fraction of time_ns."""

    case: str
    strategy: str
    time_ns: float
    bytes: dict[str, int]
    utilization: dict[str, float]
    events: int
    wall_s: float
    drain_bytes: int = 0  # output bytes written back to HBM after the last kernel (timed, not in bytes)
    kernels: list[dict[str, Any]] = field(default_factory=list)  # name, start_ns, end_ns, waves, blocks_per_sm
    trace: list[dict[str, Any]] | None = None

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("trace")
        d["time_us"] = self.time_us
        return d


def _launcher(env: simpy.Environment, gpu: GPU, plan: Plan, log: list[dict[str, Any]]):
    hw = gpu.hw
    layouts = layouts_for(plan)
    for i, kernel in enumerate(plan.kernels):
        # a programmatic dependent launch was launched while the previous kernel ran: no stream gap
        early = i > 0 and hw.pdl_release_us is not None and pdl_secondary(plan, kernel)
        if early:  # its blocks leave griddepcontrol.wait once the previous kernel's last block is done
            t0 = env.now
            yield env.timeout(hw.pdl_release_us * 1e3)
            if gpu.trace is not None:
                gpu.trace.host_span("PDL release " + kernel.name, "launch", t0, env.now)
        elif i > 0:  # stream order: the dependent kernel waits for the previous one to drain
            t0 = env.now
            yield env.timeout(hw.kernel_gap_us * 1e3)
            if gpu.trace is not None:
                gpu.trace.host_span("kernel gap", "launch", t0, env.now)
        if i == 0:
            t0 = env.now
            yield env.timeout(hw.launch_overhead_us * 1e3)  # front-end: launch to first block
            if gpu.trace is not None:
                gpu.trace.host_span("launch " + kernel.name, "launch", t0, env.now)
        start_us = _start_cost_us(hw, plan, i) if early else hw.kernel_start_us
        if start_us:  # fixed start cost of a real kernel beyond the empty kernel's launch
            t0 = env.now
            yield env.timeout(start_us * 1e3)
            if gpu.trace is not None:
                gpu.trace.host_span("kernel start " + kernel.name, "launch", t0, env.now)
        # dynamic SMEM as launched: gemm_wgmma's second GEMM may ask for over half an SM (capability.gemm_solo_sm)
        bps = kernel_blocks_per_sm(hw, plan, kernel)
        if bps == 0:
            raise ValueError(f"{plan.case_id} {plan.strategy}: kernel {kernel.name} does not fit on an SM "
                             f"({kernel.smem_bytes} B SMEM, {kernel.threads} threads)")
        start = env.now
        if kernel.op == "fused":
            # the fused_wgmma template's pipeline runs one N chunk; other wgmma plans (hypothetical
            # ones with n_passes > 1) keep the phase model of the mma_sync kernel at wgmma's rate
            wgmma_kernel = plan.instruction == "wgmma" and plan.n_passes == 1
            fused_cls = FusedWgmmaCohort if wgmma_kernel else FusedCohort

            def make(clusters, slots, k=kernel, cls=fused_cls):
                return cls(gpu, plan, k, clusters, slots, layouts)
        else:
            t = kernel.tiles
            ch = plan.chain
            eltwise = kernel.op.startswith("eltwise:")
            cols = layouts[eltwise_io(kernel)[1] if eltwise else kernel_io(kernel, ch)[2]].cols
            tm, tn = -(-ch.m // t.block_m), -(-cols // t.block_n)
            order = raster(tm, tn, max(kernel.grid_blocks // (tm * tn), 1), split_inner=kernel.cluster_size > 1)
            cohort_cls = EltwiseCohort if eltwise else GemmCohort

            def make(clusters, slots, k=kernel, order=order, cls=cohort_cls):
                return cls(gpu, plan, k, clusters, slots, order, layouts)
        slots = gpu.cluster_slots(kernel.cluster_size, bps)
        yield from dispatch(gpu, kernel, make, bps)
        log.append({"name": kernel.name, "start_ns": start, "end_ns": env.now, "blocks_per_sm": bps,
                    "resident_clusters": len(slots), "waves": -(-kernel.clusters // max(len(slots), 1))})
        if gpu.trace is not None:
            gpu.trace.host_span(kernel.name, "kernel", start, env.now)
    last = plan.kernels[-1].op if plan.kernels else "fused"
    outputs = ["C"] if last == "gemm0" else ["E"]  # a GEMM0-only plan (micro-cases) outputs C
    if last == "fused" and plan.n_split > 1:
        outputs.append(WORKSPACE)  # the workspace's zeros are dirty in L2 too
    # split-K GEMMs leave their workspaces zeroed, dirty (the next launch needs the zeros); slices summed a share
    # per part are scratch the next launch overwrites whole: dead, as the intermediate
    workspaces = split_workspaces(plan)
    slices = [w for w, (_r, _c, kern) in workspaces.items() if kernel_split_shared(plan, kern)]
    outputs += [w for w in workspaces if w not in slices]
    dead = list(INTERMEDIATES) if plan.strategy == "unfused" and last != "gemm0" else []
    dead += slices
    t0 = env.now
    yield gpu.mem.flush(outputs, dead)
    if gpu.trace is not None:
        gpu.trace.host_span("L2 write-back of " + "+".join(outputs), "memory", t0, env.now)


def _start_cost_us(hw: Hardware, plan: Plan, i: int) -> float:
    """The start cost a programmatic dependent launch (kernel `i`) still pays after its release.

    Its blocks launch while the previous kernel runs and do their start (code fetch, barrier init,
    descriptor prefetch, the first weight tiles: gemm_wgmma.cu.j2) before griddepcontrol.wait. When
    every one of its blocks can start beside the previous kernel's -- a block of each fits on one SM,
    or the two grids together fit the SMs -- that start lies under the previous kernel; otherwise the
    blocks on the previous kernel's last SMs start as those exit, and pay what the release wait
    (`pdl_release_us`) does not cover."""
    start = hw.kernel_start_us or 0.0
    prev, cur = plan.kernels[i - 1], plan.kernels[i]
    beside = hw.blocks_fit_together(prev.smem_bytes, prev.threads, kernel_regs_per_thread(plan, prev),
                                   kernel_launch_smem_bytes(plan, cur), cur.threads, kernel_regs_per_thread(plan, cur))
    if beside or prev.grid_blocks + cur.grid_blocks <= hw.sm_count:
        return 0.0
    return max(start - (hw.pdl_release_us or 0.0), 0.0)


def simulate(plan: Plan, hw: Hardware, trace: bool = False, code_bytes: int | None = None) -> SimResult:
    """Execute `plan` on `hw`; see the module docstrings of fusesim.sim for what is modelled.

    `code_bytes`: the built kernels' instructions and parameter banks (fusesim.codegen.binary), when
    known: after a cold L2 they are fetched from HBM once, so they count as HBM (and L2) reads. Their
    time is not added: the fetch latency at a kernel's start is part of `hw.kernel_start_us`."""
    wall0 = time.perf_counter()
    env = simpy.Environment()
    gpu = GPU(env, hw, trace, *l2_policy(plan, hw))
    log: list[dict[str, Any]] = []
    env.process(_launcher(env, gpu, plan, log))
    events = 0
    step = env.step
    try:
        while True:
            step()
            events += 1
    except EmptySchedule:
        pass
    t_ns = env.now
    mem = gpu.mem
    b = dict(mem.bytes)
    b["dsm"] = int(round(gpu.dsm_bytes))
    if code_bytes:
        b["hbm_read"] += code_bytes
        b["l2_read"] += code_bytes
    b = {k: int(round(v)) for k, v in b.items()}
    family = plan.instruction
    peak = hw.tensor_flops_per_ns(family, plan.chain.dtype)
    cs = max((k.cluster_size for k in plan.kernels), default=1)
    dsm_cap = hw.dsm_bandwidth_gbps(cs) * hw.sm_count if cs > 1 else 0.0
    util = {
        "tensor": gpu.flops / (peak * t_ns) if t_ns else 0.0,
        "hbm": (b["hbm_read"] + b["hbm_write"]) / (hw.hbm_bandwidth_gbps * t_ns) if t_ns else 0.0,
        "l2": (b["l2_read"] + b["l2_write"]) / (hw.l2_bandwidth_gbps * t_ns) if t_ns else 0.0,
        "dsm": b["dsm"] / (dsm_cap * t_ns) if t_ns and dsm_cap else 0.0,
    }
    return SimResult(
        case=plan.case_id, strategy=plan.strategy, time_ns=t_ns, bytes=b, utilization=util,
        events=events, wall_s=time.perf_counter() - wall0, drain_bytes=int(mem.drain_bytes), kernels=log,
        trace=gpu.trace.to_chrome() if gpu.trace is not None else None,
    )
