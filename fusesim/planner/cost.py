"""Minimax cost model (after Chimera, the paper's Algorithm 2): time = max over levels of
volume / bandwidth, plus what cannot overlap.

Per kernel (ns; bandwidths in GB/s == bytes/ns):

  time = launch + max(tensor, hbm, l2, dsm, smem, latency) + sync + fill

* tensor: waves * flops_of_one_block / per-SM tensor rate of the instruction family
  (hw.tensor_tflops[family] / sm_count). waves = ceil(clusters / hw.max_active_clusters(size)):
  wave quantization and the SMs a cluster shape leaves idle in uneven GPCs both show here.
  Block FLOPs count padded tiles (predicated M rows still occupy the tensor cores).
* hbm = (hbm_read + hbm_write) / hbm_bandwidth; l2 = (l2_read + l2_write) / l2_bandwidth.
* dsm = dsm bytes / (dsm push bandwidth per SM of the cluster size * active SMs);
  smem = smem bytes / (SMEM bandwidth per SM * active SMs); active SMs = min(blocks, SMs the
  cluster shape can occupy at once).
* latency (Little's law on the operand ring): occ_waves * (operand bytes one block loads / (stages *
  stage bytes)) * l2_latency: a block keeps at most `stages` tiles in flight.
* sync: occ_waves * rounds * (dsm_latency + cluster_barrier) of the cluster size, rounds = dsm_comm
  rounds per block; inter_cluster_reduce (n_split > 1) adds ICR_L2_TRIPS = 3 l2_latency per wave:
  the fenced fp32 red.adds into the workspace, the ticket atomicAdd, the last cluster's read of
  the fp32 tile (its bytes, the workspace zeroing and the bf16 E store are in the l2/hbm terms
  through fusesim.planner.dataflow).
* fill: occ_waves * (hbm_latency + l2_latency): first operand tile in, last E tile out.
  occ_waves = ceil(clusters / (max_active_clusters(size) * blocks per SM)): clusters resident
  together (blocks_per_sm from SMEM, threads, registers) overlap their latencies.
* launch: launch_overhead per kernel; kernel_gap between the two unfused kernels. A fused plan is
  one kernel whatever n_split: the workspace is left zeroed by the previous launch, E is not
  memset (no kernel_gap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fusesim.hardware import Hardware
from fusesim.plan import Plan
from fusesim.planner.dataflow import (
    GATED_MODES,
    MODE_MUL,
    MODE_SEQUENTIAL,
    fused_volumes,
    gemm_kernel_volumes,
)
from fusesim.planner.footprint import (
    fused_regs_per_thread,
    fused_smem_bytes,
    gemm1_sub_l,
    gemm_regs_per_thread,
    gemm_smem_bytes,
)
from fusesim.workload import Chain

LEVEL_NAMES = ("tensor", "hbm", "l2", "dsm", "smem", "latency")
# inter_cluster_reduce's serial L2 round trips: the fenced red.adds, the ticket atomicAdd, the last
# cluster's read of the fp32 workspace (its E store is the fill term's "last E tile out")
ICR_L2_TRIPS = 3


@dataclass(frozen=True)
class Prediction:
    """The cost model's verdict on a plan: time, bytes per level, and the level that bounds it."""

    time_ns: float
    bytes: dict[str, float]  # hbm, l2, dsm, smem
    bound: str
    parts_ns: dict[str, float] = field(default_factory=dict)

    @property
    def time_us(self) -> float:
        return self.time_ns / 1e3

    def to_dict(self) -> dict[str, Any]:
        return {"time_us": self.time_us, "bytes": dict(self.bytes), "bound": self.bound,
                "parts_us": {k: v / 1e3 for k, v in self.parts_ns.items()}}


def _table(cs: Any, hw: Hardware, fn: Any, one: float) -> Any:
    """Look a per-cluster-size quantity up elementwise (cluster size 1 -> `one`)."""
    cs = np.asarray(cs)
    sizes = hw.cluster_sizes
    return np.select([cs == s for s in sizes], [one if s == 1 else fn(s) for s in sizes], one)


def blocks_per_sm(hw: Hardware, smem_bytes: Any, threads: Any, regs_per_thread: Any) -> Any:
    """Hardware.blocks_per_sm, elementwise (1 KB of SMEM reserved per block)."""
    by_smem = hw.smem_per_sm_bytes // (np.asarray(smem_bytes) + 1024)
    by_threads = hw.max_threads_per_sm // np.asarray(threads)
    by_regs = hw.registers_per_sm // np.maximum(np.asarray(threads) * regs_per_thread, 1)
    return np.minimum(np.minimum(by_smem, by_threads), np.minimum(by_regs, hw.max_blocks_per_sm))


def fused_cost(ch: Chain, hw: Hardware, family: str, cm: Any, cn: Any, ck: Any, cl: Any, bm: Any, bn: Any, bk: Any,
               bl: Any, grid_m: Any, n_split: Any, n_passes: Any, stages: Any, mode: Any,
               threads: Any = 128) -> dict[str, Any]:
    """Time of fused kernels, elementwise over numpy arrays; returns parts, total and volumes."""
    v = fused_volumes(ch, hw, cm, cn, ck, cl, bm, bn, bl, grid_m, n_split, n_passes, mode, family)
    seq_flag = np.asarray(mode) == MODE_SEQUENTIAL
    fused_smem = fused_smem_bytes(bm, bn, bk, bl, ck, np.maximum(cl // ck, 1), stages, seq_flag)
    regs = fused_regs_per_thread(bm, bn, bl, threads, seq_flag)
    e = ch.dtype_bytes
    cs = cm * cn * ck
    clusters = grid_m * n_split
    blocks = v["blocks"]
    mode = np.asarray(mode)
    seq = (mode == MODE_SEQUENTIAL).astype(np.int64)
    k_slice = np.where(mode == MODE_MUL, ch.k, ch.k // ck)
    shuffle, reduce = v["shuffle"], v["reduce"]
    block_flops = 2.0 * n_passes * bm * (bn * k_slice * (1 + seq) + shuffle * bn * bl)
    slots = _table(cs, hw, lambda s: hw.max_active_clusters(s), float(hw.max_active_clusters(1)))
    waves = np.ceil(clusters / slots)
    # co-resident clusters (2+ blocks per SM) overlap their latencies: those terms use occupancy waves
    bps = blocks_per_sm(hw, fused_smem, threads, regs)
    occ_waves = np.ceil(clusters / (slots * np.maximum(bps, 1)))
    per_sm = hw.tensor_flops_per_ns(family, ch.dtype) / hw.sm_count
    active = np.minimum(blocks, slots * cs)
    dsm_bw = _table(cs, hw, lambda s: hw.dsm_bandwidth_gbps(s), 1.0)
    dsm_lat = _table(cs, hw, lambda s: hw.dsm_latency_ns[s] + hw.cluster_barrier_ns[s], 0.0)
    stage_bytes = np.maximum(bm * bk * e + bk * bn * e * (1 + seq), bk * gemm1_sub_l(bl) * e)
    rounds = (np.where(ck > 1, n_passes, 0) + np.where(shuffle > 1, n_passes * (shuffle - 1), 0)
              + np.where(reduce > 1, 1, 0))
    parts = {
        "tensor": waves * block_flops / per_sm,
        "hbm": (v["hbm_read"] + v["hbm_write"]) / hw.hbm_bandwidth_gbps,
        "l2": (v["l2_read"] + v["l2_write"]) / hw.l2_bandwidth_gbps,
        "dsm": v["dsm"] / (dsm_bw * active),
        "smem": v["smem"] / (hw.smem_bandwidth_gbps_per_sm * active),
        "latency": occ_waves * (v["operand_read"] / blocks) / (stages * stage_bytes) * hw.l2_latency_ns,
    }
    stack = np.stack([np.broadcast_to(np.asarray(parts[k], dtype=float), np.shape(blocks)) for k in LEVEL_NAMES])
    overlapped = stack.max(axis=0)
    bound = stack.argmax(axis=0)
    sync = occ_waves * (rounds * dsm_lat + np.where(n_split > 1, ICR_L2_TRIPS * hw.l2_latency_ns, 0.0))
    fill = occ_waves * (hw.hbm_latency_ns + hw.l2_latency_ns)
    launch = hw.launch_overhead_us * 1e3 + 0.0 * np.asarray(n_split)  # one kernel (shape of the search arrays)
    total = launch + overlapped + sync + fill
    return {"time_ns": total, "bound": bound, "parts": parts, "sync": sync, "fill": fill, "launch": launch,
            "volumes": v}


def gemm_kernel_cost(ch: Chain, hw: Hardware, family: str, op: str, bm: int, bn: int, bk: int, stages: int,
                     c_resident: float = 0.0, threads: int = 128) -> dict[str, Any]:
    """One unfused GEMM kernel: same terms, cluster size 1, no DSM."""
    v = gemm_kernel_volumes(ch, hw, op, bm, bn, c_resident)
    e = ch.dtype_bytes
    if op == "gemm0":
        k_red, g = ch.k, (2 if ch.gated else 1)
    else:
        k_red, g = ch.n, 1
    blocks = v["blocks"]
    block_flops = 2.0 * bm * bn * k_red * g
    slots = hw.max_active_clusters(1)
    waves = -(-blocks // slots)
    per_sm = hw.tensor_flops_per_ns(family, ch.dtype) / hw.sm_count
    active = min(blocks, slots)
    stage_bytes = (bm * bk + bk * bn * g) * e
    bps = int(blocks_per_sm(hw, gemm_smem_bytes(bm, bn, bk, stages, g == 2), threads,
                            gemm_regs_per_thread(bm, bn, threads, g == 2)))
    occ_waves = -(-blocks // (slots * max(bps, 1)))
    parts = {
        "tensor": waves * block_flops / per_sm,
        "hbm": (v["hbm_read"] + v["hbm_write"]) / hw.hbm_bandwidth_gbps,
        "l2": (v["l2_read"] + v["l2_write"]) / hw.l2_bandwidth_gbps,
        "dsm": 0.0,
        "smem": v["smem"] / (hw.smem_bandwidth_gbps_per_sm * active),
        "latency": occ_waves * (v["l2_read"] / blocks) / (stages * stage_bytes) * hw.l2_latency_ns,
    }
    bound = max(LEVEL_NAMES, key=lambda k: parts[k])
    fill = occ_waves * (hw.hbm_latency_ns + hw.l2_latency_ns)
    launch = hw.launch_overhead_us * 1e3
    return {"time_ns": launch + parts[bound] + fill, "bound": bound, "parts": parts, "fill": fill,
            "launch": launch, "volumes": v}


def _bytes(hbm: float, l2: float, dsm: float, smem: float) -> dict[str, float]:
    return {"hbm": float(hbm), "l2": float(l2), "dsm": float(dsm), "smem": float(smem)}


def predict(plan: Plan, hw: Hardware, family: str | None = None) -> Prediction:
    """Predicted time and bytes of a plan (instruction family: the plan's, unless given)."""
    family = family or plan.instruction
    ch = plan.chain
    if plan.strategy == "unfused":
        k1, k2 = plan.kernels
        c1 = gemm_kernel_cost(ch, hw, family, "gemm0", k1.tiles.block_m, k1.tiles.block_n, k1.tiles.block_k, k1.stages,
                              threads=k1.threads)
        c2 = gemm_kernel_cost(ch, hw, family, "gemm1", k2.tiles.block_m, k2.tiles.block_n, k2.tiles.block_k, k2.stages,
                              c_resident=c1["volumes"]["c_resident"], threads=k2.threads)
        total = c1["time_ns"] + c2["time_ns"] + hw.kernel_gap_us * 1e3
        v1, v2 = c1["volumes"], c2["volumes"]
        slow = c1 if c1["time_ns"] >= c2["time_ns"] else c2
        parts = {f"k1_{k}": float(x) for k, x in c1["parts"].items()}
        parts.update({f"k2_{k}": float(x) for k, x in c2["parts"].items()})
        return Prediction(float(total), _bytes(v1["hbm_read"] + v1["hbm_write"] + v2["hbm_read"] + v2["hbm_write"],
                                               v1["l2_read"] + v1["l2_write"] + v2["l2_read"] + v2["l2_write"],
                                               0.0, v1["smem"] + v2["smem"]), slow["bound"], parts)
    c, t = plan.cluster, plan.tiles
    r = fused_cost(ch, hw, family, c.m, c.n, c.k, c.l, t.block_m, t.block_n, t.block_k, t.block_l, plan.grid_m,
                   plan.n_split, plan.n_passes, plan.stages, GATED_MODES[plan.gated_mode], threads=plan.threads)
    v = r["volumes"]
    parts = {k: float(x) for k, x in r["parts"].items()}
    parts.update(sync=float(r["sync"]), fill=float(r["fill"]), launch=float(r["launch"]))
    return Prediction(float(r["time_ns"]), _bytes(v["hbm_read"] + v["hbm_write"], v["l2_read"] + v["l2_write"],
                                                  v["dsm"], v["smem"]), LEVEL_NAMES[int(r["bound"])], parts)
