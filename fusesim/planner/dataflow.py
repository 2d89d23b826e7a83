"""Dataflow analyzer (the paper's Algorithm 1): bytes moved at every level for a plan.

`analyze(plan, hw)` is the contract the simulator reproduces (within 1%): every number below is
a closed form of the plan's fields, the chain and three hardware numbers (l2_bytes and nothing
else: capacities decide hits, bandwidths only enter the cost model). Bytes count real elements
only: predicated rows beyond M move nothing (TMA fills them with zeros without a memory access).

Fused plan (strategy smem / dsm), e = dtype bytes, blocks = grid_m * n_split * cluster size:

* L2 read requests (every block's TMA loads; no multicast):
  A: M * K * e * n_split * cls_n * n_passes (x2 for gated mul_exchange: both branch blocks read A).
     A conv chain reads its im2col rows: K = IC * k1 * k1 per row, from the image in L2.
  B: b_bytes * grid_m * cls_m (every M row-group of every cluster streams its columns of B once).
  D: d_bytes * grid_m * cls_m.
* L2 write requests: E stores, e_bytes. With n_split > 1 (inter_cluster_reduce as fused.cu.j2
  runs it, fusesim.planner.dsm_comm): n_split * w_bytes of fp32 `red.add`s into the workspace
  (w_bytes = M * L * 4, real rows), 4 bytes of ticket atomicAdd per block, and the last cluster's
  conversion: E (e_bytes, bf16), zeros into the workspace (w_bytes) and a ticket reset (4 bytes
  per ticket, grid_m * cluster size tickets); plus an L2 read of w_bytes (the fp32 tile). No memset.
* HBM, by the greedy L2 model: L2 (hw.l2_bytes) is given, in order, to the output E, then to the
  workspace W (n_split > 1), then to the inputs by decreasing reuse r (ties: smaller tensor first,
  then A, B, D). The workspace lives in HBM (zeroed by the previous launch): its first touch misses,
  its n_split later touches (the other atomics, the conversion read) miss for the part not held:
  hbm_read_W = w_bytes * (1 + n_split * (1 - h_W)). A tensor X of unique
  bytes U_X gets alloc_X = min(U_X, what is left); h_X = alloc_X / U_X. The first touch of every
  input misses (L2 is cold: the benchmark flushes it); the (r_X - 1) later streams of X miss only
  for the part not held: hbm_read_X = U_X * (1 + (r_X - 1) * (1 - h_X)). Reuse counts are the
  streams that are apart in time (readers inside one cluster run together and share them):
  r_A = n_split * n_passes, r_B = r_D = grid_m. U_A of a conv chain is the image (batch*H*W*IC).
  hbm_write = e_bytes - alloc_E + w_bytes - alloc_W (dirty lines still held when the kernel ends
  are not written back within it: L2 is write-back, so an output, an intermediate or the
  workspace that stays resident never reaches HBM while the chain runs).
* DSM: blocks * sum over dsm_comm steps (level dsm) of times * wire bytes per round: bytes_per_block
  times the access pattern's wire factor (fusesim.planner.dsm_comm.wire_factor: what Nsight counts).
* SMEM traffic: 2 x (operand bytes loaded + DSM bytes received + act(C) tiles staged
  (blocks * n_passes * block_m * block_n * e) + E accumulator read-modify-write per chunk
  (blocks * n_passes * block_m * block_l * 4) + E staged for the store (M * L * e * n_split)):
  every byte is written into SMEM once and read once.
* Registers: accumulator bytes produced (blocks * n_passes * block_m * (block_n * g + block_l) * 4).

Unfused plan: kernel 1 (gemm0, tiles bm1 x bn1) then kernel 2 (gemm1, tiles bm2 x bl2, where
bl2 is kernel 2's block_n, its output-column tile over L):
* k1: A requests M*K*e * ceil(N/bn1) (r_A = N/bn1), B requests b_bytes * ceil(M/bm1) (r_B the
  same), C written (c_bytes, l2 write). L2 is given first to C (being written), then A, B.
  res_C = alloc_C / c_bytes is the part of C still resident when kernel 2 starts.
* k2: C requests c_bytes * L/bl2 (r_C = L/bl2), D requests d_bytes * ceil(M/bm2) (r_D), E written.
  L2 is given to E, then C, then D. hbm_read_C = c_bytes * ((1 - res_C) + (r_C - 1) * (1 - h_C)).
* hbm_write = c_bytes * (1 - res_C) (evicted before it was re-read) + e_bytes - alloc_E.
* SMEM: 2 x operand bytes loaded (epilogues store from registers). DSM: 0.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from fusesim.capability import kernel_split_lean, kernel_split_shared
from fusesim.hardware import Hardware
from fusesim.plan import Placement, Plan
from fusesim.planner.dsm_comm import (
    BULK_WIRE_FACTOR,
    ST_ASYNC_WIRE_FACTOR,
    dsm_split_wire_bytes_per_block,
    inter_cluster_l2_bytes,
    wire_factor,
)
from fusesim.planner.footprint import gemm1_sub_l
from fusesim.workload import Chain

MODE_NONE, MODE_SEQUENTIAL, MODE_MUL = 0, 1, 2
GATED_MODES = {"none": MODE_NONE, "sequential": MODE_SEQUENTIAL, "mul_exchange": MODE_MUL}


@dataclass(frozen=True)
class Volumes:
    """Bytes per level over the whole plan (all kernels); `kernels` has one dict per kernel."""

    hbm_read: float
    hbm_write: float
    l2_read: float
    l2_write: float
    dsm: float
    smem: float
    reg: float
    kernels: tuple[dict[str, float], ...] = field(default_factory=tuple)

    @property
    def hbm(self) -> float:
        return self.hbm_read + self.hbm_write

    @property
    def l2(self) -> float:
        return self.l2_read + self.l2_write

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def greedy_l2(cap_bytes: float, items: list[tuple[float, Any]]) -> list[Any]:
    """Allocate L2 to (unique_bytes, reuse) items: by reuse desc, then size asc, then list order.

    Works elementwise on numpy arrays of reuse counts (the search scores many plans at once)."""
    allocs = []
    for i, (u_i, r_i) in enumerate(items):
        before = 0.0
        for j, (u_j, r_j) in enumerate(items):
            if j == i:
                continue
            first = (np.asarray(r_j) > r_i) | ((np.asarray(r_j) == r_i) & ((u_j < u_i) | ((u_j == u_i) & (j < i))))
            before = before + np.where(first, u_j, 0.0)
        allocs.append(np.clip(cap_bytes - before, 0.0, u_i))
    return allocs


def _reread(u: float, r: Any, alloc: Any) -> Any:
    h = alloc / u if u > 0 else 1.0
    return u * (1.0 + (r - 1) * (1.0 - h))


def fused_volumes(ch: Chain, hw: Hardware, cm: Any, cn: Any, ck: Any, cl: Any, bm: Any, bn: Any, bl: Any,
                  grid_m: Any, n_split: Any, n_passes: Any, mode: Any, instruction: str = "mma_sync") -> dict[str, Any]:
    """Volumes of a fused kernel; arguments may be numpy arrays (elementwise). `instruction` picks the
    template whose DSM access pattern sets the wire bytes (fusesim.planner.dsm_comm)."""
    e = ch.dtype_bytes
    m, k, l_ = ch.m, ch.k, ch.l
    cs = cm * cn * ck
    blocks = grid_m * n_split * cs
    mul = np.asarray(mode) == MODE_MUL
    seq = (np.asarray(mode) == MODE_SEQUENTIAL).astype(np.int64)
    shuffle = cl // ck
    reduce = (cn * ck) // cl
    a_req = float(m * k * e) * n_split * cn * n_passes * np.where(mul, 2, 1)
    b_req = float(ch.b_bytes) * grid_m * cm
    d_req = float(ch.d_bytes) * grid_m * cm
    u_e = float(ch.e_bytes)
    icr = inter_cluster_l2_bytes(m, l_, e, n_split, blocks, grid_m * cs)
    u_w = icr["workspace"]
    l2_write = icr["l2_write"]
    alloc_e = min(u_e, float(hw.l2_bytes))
    alloc_w = np.minimum(u_w, hw.l2_bytes - alloc_e)
    r_a, r_b, r_d = n_split * n_passes, grid_m, grid_m
    al_a, al_b, al_d = greedy_l2(hw.l2_bytes - alloc_e - alloc_w,
                                 [(float(ch.a_bytes), r_a), (float(ch.b_bytes), r_b), (float(ch.d_bytes), r_d)])
    h_w = alloc_w / np.maximum(u_w, 1.0)
    hbm_w = u_w * (1.0 + n_split * (1.0 - h_w))
    hbm_read = (_reread(ch.a_bytes, r_a, al_a) + _reread(ch.b_bytes, r_b, al_b) + _reread(ch.d_bytes, r_d, al_d)
                + hbm_w)
    hbm_write = u_e - alloc_e + (u_w - alloc_w)
    ax = np.where(ck > 1, n_passes * np.where(mul, bm * bn * 4, (ck - 1) * bm * bn * 4 * (1 + seq)), 0)
    sh = np.where(shuffle > 1, n_passes * (shuffle - 1) * bm * bn * e, 0)
    slice_bytes = (bl // np.maximum(reduce, 1)) * 4
    rs = np.where(reduce > 1, (reduce - 1) * bm * slice_bytes, 0)
    if instruction == "wgmma":  # fused_wgmma: st.async exchange, bulk-copied slices
        dsm = blocks * (ax * ST_ASYNC_WIRE_FACTOR + (sh + rs) * BULK_WIRE_FACTOR)
    else:
        dsm = blocks * (ax * wire_factor("dsm_all_exchange", bm, bn) + sh * wire_factor("dsm_shuffle", bm, bn)
                        + rs * wire_factor("dsm_reduce_scatter", bm, bn, slice_bytes))
    operand_read = a_req + b_req + d_req  # through the SMEM pipeline (the workspace read is not)
    l2_read = operand_read + icr["l2_read"]
    staged = blocks * n_passes * (bm * bn * e + bm * bl * 4) + float(m * l_ * e) * n_split
    smem = 2.0 * (operand_read + dsm + staged)
    reg = blocks * n_passes * bm * (bn * (1 + seq) + bl) * 4.0
    return {"hbm_read": hbm_read, "hbm_write": hbm_write + 0.0 * blocks, "l2_read": l2_read,
            "l2_write": l2_write, "dsm": dsm * 1.0, "smem": smem, "reg": reg, "blocks": blocks,
            "shuffle": shuffle, "reduce": reduce, "operand_read": operand_read}


def gemm_kernel_volumes(ch: Chain, hw: Hardware, op: str, bm: int, bn: int,
                        c_resident: float = 0.0) -> dict[str, float]:
    """One kernel of an unfused plan (op gemm0 or gemm1); see the module docstring."""
    e = ch.dtype_bytes
    mb = -(-ch.m // bm)
    if op == "gemm0":
        nb = ch.n // bn
        u_c = float(ch.c_bytes)
        alloc_c = min(u_c, float(hw.l2_bytes))
        al_a, al_b = greedy_l2(hw.l2_bytes - alloc_c, [(float(ch.a_bytes), nb), (float(ch.b_bytes), mb)])
        l2_read = float(ch.m * ch.k * e) * nb + float(ch.b_bytes) * mb
        hbm_read = float(_reread(ch.a_bytes, nb, al_a) + _reread(ch.b_bytes, mb, al_b))
        res_c = alloc_c / u_c if u_c else 1.0
        return {"hbm_read": hbm_read, "hbm_write": 0.0, "l2_read": l2_read, "l2_write": u_c, "dsm": 0.0,
                "smem": 2.0 * l2_read, "reg": float(mb * nb * bm * bn * 4 * (2 if ch.gated else 1)),
                "c_resident": res_c, "blocks": mb * nb}
    lb = ch.l // bn
    u_c, u_e = float(ch.c_bytes), float(ch.e_bytes)
    alloc_e = min(u_e, float(hw.l2_bytes))
    al_c, al_d = greedy_l2(hw.l2_bytes - alloc_e, [(u_c, np.inf), (float(ch.d_bytes), mb)])
    h_c = float(al_c) / u_c if u_c else 1.0
    hbm_c = u_c * ((1.0 - c_resident) + (lb - 1) * (1.0 - h_c))
    l2_read = u_c * lb + float(ch.d_bytes) * mb
    hbm_read = hbm_c + float(_reread(ch.d_bytes, mb, al_d))
    hbm_write = u_c * (1.0 - c_resident) + (u_e - alloc_e)
    return {"hbm_read": hbm_read, "hbm_write": hbm_write, "l2_read": l2_read, "l2_write": u_e, "dsm": 0.0,
            "smem": 2.0 * l2_read, "reg": float(mb * lb * bm * bn * 4), "blocks": mb * lb}


_LEVELS = ("hbm_read", "hbm_write", "l2_read", "l2_write", "dsm", "smem", "reg")


def unfused_volumes(ch: Chain, hw: Hardware, bm1: int, bn1: int, bm2: int, bl2: int) -> Volumes:
    k1 = gemm_kernel_volumes(ch, hw, "gemm0", bm1, bn1)
    k2 = gemm_kernel_volumes(ch, hw, "gemm1", bm2, bl2, c_resident=k1["c_resident"])
    tot = {lv: float(k1[lv] + k2[lv]) for lv in _LEVELS}
    return Volumes(**tot, kernels=({lv: float(k1[lv]) for lv in _LEVELS}, {lv: float(k2[lv]) for lv in _LEVELS}))


SPLIT_WORKSPACE_BYTES = 4  # fp32 partial per output element and accumulated operand
SPLIT_TICKET_BYTES = 4  # one int per block, reset once per output tile


def split_k_protocol_bytes(plan: Plan) -> dict[str, float]:
    """Bytes the split-K protocol of the unfused GEMM kernels (gemm_wgmma.cu.j2; split = grid_blocks /
    output tiles) moves beyond a plain store of the output: every part red.adds its fp32 partial
    (one slab per accumulated operand: gate and up for a gated GEMM0) into an M x cols workspace
    (L2 writes; first touch from HBM, where it lives between launches), takes a ticket per block;
    the last part of a tile reads the sums (L2 read), stores the output and writes zeros back and
    resets the ticket (L2 writes). A kernel whose split parts form a cluster (cluster_size = split)
    reduces through DSM instead: each part reads its block_n / split columns of every peer's fp32
    partial (dsm_reduce_scatter's wire bytes), no workspace. Where the parts sum in slices
    (capability.gemm_split_shared), every part stores its partial into its own slab (L2 writes, whole
    lines: no fetch), takes two tickets, and reads its 1/split share of the other parts' slabs (L2
    read); no zeros are written back. Lean (capability.kernel_split_lean), a part leaves out of its slab the
    share it sums itself and takes one ticket."""
    out = {"l2_read": 0.0, "l2_write": 0.0, "hbm_read": 0.0, "dsm": 0.0}
    if plan.strategy != "unfused":
        return out
    ch = plan.chain
    for kern in plan.kernels:
        if kern.op not in ("gemm0", "gemm1"):
            continue
        cols = ch.n if kern.op == "gemm0" else ch.l
        parts = 2 if (ch.gated and kern.op == "gemm0") else 1
        tiles = -(-ch.m // kern.tiles.block_m) * -(-cols // kern.tiles.block_n)
        split = max(kern.grid_blocks // max(tiles, 1), 1)
        if split <= 1:
            continue
        if kern.cluster_size > 1:
            t = kern.tiles
            out["dsm"] += kern.grid_blocks * dsm_split_wire_bytes_per_block(t.block_m, t.block_n, split, parts)
            continue
        ws = float(ch.m * cols * parts * SPLIT_WORKSPACE_BYTES)
        if kernel_split_lean(plan, kern):
            out["l2_write"] += (split - 1) * ws + SPLIT_TICKET_BYTES * kern.grid_blocks
            out["l2_read"] += (split - 1) * ws
            continue
        if kernel_split_shared(plan, kern):
            out["l2_write"] += split * ws + SPLIT_TICKET_BYTES * 2 * kern.grid_blocks
            out["l2_read"] += (split - 1) * ws
            continue
        out["l2_read"] += ws
        out["l2_write"] += (split + 1) * ws + SPLIT_TICKET_BYTES * (kern.grid_blocks + kern.grid_blocks // split)
        out["hbm_read"] += ws
    return out


def analyze(plan: Plan, hw: Hardware) -> Volumes:
    """Bytes per level of a plan on a machine (whole plan, all kernels)."""
    ch = plan.chain
    if plan.strategy == "unfused":
        k1, k2 = plan.kernels[0].tiles, plan.kernels[1].tiles
        v = unfused_volumes(ch, hw, k1.block_m, k1.block_n, k2.block_m, k2.block_n)
        extra = split_k_protocol_bytes(plan)
        if not any(extra.values()):
            return v
        return replace(v, **{k: getattr(v, k) + x for k, x in extra.items()})
    c, t = plan.cluster, plan.tiles
    v = fused_volumes(ch, hw, c.m, c.n, c.k, c.l, t.block_m, t.block_n, t.block_l, plan.grid_m, plan.n_split,
                      plan.n_passes, GATED_MODES[plan.gated_mode], plan.instruction)
    tot = {lv: float(v[lv]) for lv in _LEVELS}
    return Volumes(**tot, kernels=(dict(tot),))


def intermediate_tiers(plan: Plan, hw: Hardware) -> dict[str, int]:
    """Algorithm 1's greedy placement of the intermediate C of one cluster for one N chunk, bytes.

    working_set: the unique act(C) of a cluster per chunk, (cls_m*block_m) x (cls_n*block_n) bf16.
    Highest tier first: it is produced in registers (fp32 accumulators of all the cluster's
    blocks, `reg`), then held in the blocks' own SMEM (`smem`, up to cluster size x
    smem_per_block_bytes); `dsm` is what blocks read from peers per chunk (exchange + shuffle);
    `global` is what would not fit on chip (0 for every emitted fused plan; all of C for unfused)."""
    ch, c, t = plan.chain, plan.cluster, plan.tiles
    if plan.strategy == "unfused":
        return {"working_set": ch.c_bytes, "reg": 0, "smem": 0, "dsm": 0, "global": ch.c_bytes}
    working = c.m * c.n * t.block_m * t.block_n * ch.dtype_bytes
    reg = c.size * t.block_m * t.block_n * 4 * (2 if plan.gated_mode == "sequential" else 1)
    smem = min(working, c.size * hw.smem_per_block_bytes)
    per_chunk = sum(s.bytes_per_block * s.times for s in plan.dsm_comm
                    if s.level == "dsm" and s.primitive != "dsm_reduce_scatter") // max(plan.n_passes, 1)
    return {"working_set": working, "reg": reg, "smem": smem, "dsm": per_chunk * c.size,
            "global": max(0, working - smem)}


def placement_for(strategy: str, has_dsm_steps: bool) -> Placement:
    """Highest tier that holds each tensor: inputs/outputs in global, C where the plan keeps it."""
    if strategy == "unfused":
        return Placement(C="global")
    return Placement(C="dsm" if has_dsm_steps else "smem")


__all__ = ["Volumes", "analyze", "fused_volumes", "unfused_volumes", "gemm_kernel_volumes", "greedy_l2",
           "intermediate_tiers", "placement_for", "gemm1_sub_l"]
