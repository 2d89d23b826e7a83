"""The paper's dsm_comm primitives as objects: who talks, in how many rounds, how many bytes.

A fused block (n_i, k_j) of a cluster (cls_m, cls_n, cls_k, cls_l) talks to its peers with:

* dsm_all_exchange (cls_k > 1, after GEMM0 of every N chunk): the cls_k blocks of slice n_i push
  their fp32 partial C tile (block_m x block_n) to each of the cls_k - 1 peers and add locally
  (Hopper has no float reduction into remote SMEM). Gated FFN "sequential": gate and up partials,
  two tiles. Gated "mul_exchange" (cls_k = 2): each block holds one branch over all of K and
  pushes it once; both then form silu(gate) * up. One round per chunk.
* dsm_shuffle (cls_shuffle = cls_l / cls_k > 1, during GEMM1 of every chunk): ring of cls_shuffle
  slices; each round every block forwards one bf16 act(C) slice (block_m x block_n) to its ring
  neighbour; cls_shuffle - 1 rounds per chunk.
* dsm_reduce_scatter (cls_reduce = cls_n * cls_k / cls_l > 1, after the last chunk): each block
  pushes the (cls_reduce - 1) fp32 slices of its E partial (block_m x block_l / cls_reduce each)
  that other blocks own. One round.
* inter_cluster_reduce (n_split > 1, store phase), as fused.cu.j2 runs it: each block adds its
  fp32 E slice (block_m x block_l / cls_reduce) into an fp32 global workspace (M x L floats, the
  gpu runner allocates it) with `red.global.add.v4.f32` (L2 atomics, 4 bytes per element), then
  takes a ticket (one int atomicAdd per block on its tile's counter). The last of the n_split
  clusters to arrive converts the tile: it reads the fp32 slice from L2, writes bf16 E, writes
  zeros back into the workspace and resets the ticket, so the next launch starts clean (no
  memset of E or of the workspace, no extra kernel). One round; bytes_per_block is the fp32 slice.

On the wire (what Nsight Compute counts as DSM bytes, l1tex__m_xbar2l1tex_read_bytes_mem_dshared)
the generated kernels move more than the payload, by their access pattern (`wire_bytes_per_round`;
measured on the H200, results/h200/probe_small_and_dsm.json, and equal to the counter to the byte on
all 26 planner dsm kernels of results/h200/planner_paper_*.json):
* dsm_all_exchange: the mma-fragment-layout remote stores (8 bytes per thread, 32 contiguous bytes
  per row and instruction) cost twice their payload (EXCHANGE_WIRE_FACTOR; 16-byte stores after a
  lane shuffle measured the same, results/h200/probe_dsm_variant.json);
* dsm_shuffle: a slice travels with its SMEM row padding, block_n + PAD_BF16 elements per row;
* dsm_reduce_scatter: remote 16-byte loads of each row's slice move whole 32-byte sectors; fp32
  rows padded by PAD_F32 floats (16 bytes) leave every other row 16 bytes off a sector, so a row
  slice costs its bytes + 16 on average.
The analyzer and the simulator count and time wire bytes; `bytes_per_block` stays the payload.

Bytes are what one block sends per round (push model: sent bytes == bytes received by peers),
`times` is rounds per block over the whole kernel, exactly the fields of `fusesim.plan.DsmStep`.
Every block of the grid runs every step with full tiles, so the plan's DSM bytes are
grid_blocks * sum(times * bytes_per_block) over the dsm-level steps (dataflow.analyze agrees).
inter_cluster_reduce bytes are per full tile too; the kernel skips rows beyond M, so the analyzer
counts its L2 bytes with the real M (`inter_cluster_l2_bytes`).
The cost model charges each round dsm_latency_ns + cluster_barrier_ns of the cluster size
(inter_cluster_reduce: l2_latency_ns for the fenced atomics, the ticket and the last cluster's
read of the workspace), the simulator executes the same rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fusesim.plan import ClusterShape, DsmStep, Tiles
from fusesim.planner.footprint import PAD_BF16, PAD_F32  # the generated kernels' SMEM row padding

FP32_BYTES = 4
TICKET_BYTES = 4  # one int per (M tile, block position): atomicAdd per arrival, a reset by the last
EXCHANGE_WIRE_FACTOR = 2  # fragment-layout remote stores: DSM bytes per payload byte (measured, H200)
SECTOR_BYTES = 32  # granule of remote loads
RS_ROW_EXTRA_BYTES = SECTOR_BYTES // 2 if (PAD_F32 * FP32_BYTES) % SECTOR_BYTES else 0  # every other row off


@dataclass(frozen=True)
class DsmPrimitive:
    """One primitive instance of a plan."""

    primitive: str
    op: str
    participants: int  # blocks in one communicating group
    rounds_per_execution: int  # communication rounds (each one barrier/mbarrier wait)
    executions: int  # executions per block over the kernel (per N chunk, or once)
    bytes_per_round: int  # bytes one block sends per round
    level: str  # "dsm" or "global"

    @property
    def times(self) -> int:
        return self.rounds_per_execution * self.executions

    @property
    def bytes_per_block(self) -> int:
        """Bytes one block sends over the kernel."""
        return self.times * self.bytes_per_round

    def bytes_per_cluster(self, cluster_size: int) -> int:
        return self.bytes_per_block * cluster_size

    def step(self) -> DsmStep:
        return DsmStep(primitive=self.primitive, op=self.op, participants=self.participants, times=self.times,
                       bytes_per_block=self.bytes_per_round, level=self.level)


def dsm_all_exchange(cluster: ClusterShape, tiles: Tiles, n_passes: int, gated_mode: str) -> DsmPrimitive | None:
    if cluster.k <= 1:
        return None
    tile = tiles.block_m * tiles.block_n * FP32_BYTES
    if gated_mode == "mul_exchange":
        return DsmPrimitive("dsm_all_exchange", "mul", cluster.k, 1, n_passes, tile, "dsm")
    per_round = (cluster.k - 1) * tile * (2 if gated_mode == "sequential" else 1)
    return DsmPrimitive("dsm_all_exchange", "add", cluster.k, 1, n_passes, per_round, "dsm")


def dsm_shuffle(cluster: ClusterShape, tiles: Tiles, n_passes: int, dtype_bytes: int) -> DsmPrimitive | None:
    if cluster.shuffle <= 1:
        return None
    return DsmPrimitive("dsm_shuffle", "ring", cluster.shuffle, cluster.shuffle - 1, n_passes,
                        tiles.block_m * tiles.block_n * dtype_bytes, "dsm")


def dsm_reduce_scatter(cluster: ClusterShape, tiles: Tiles) -> DsmPrimitive | None:
    if cluster.reduce <= 1:
        return None
    slice_bytes = tiles.block_m * (tiles.block_l // cluster.reduce) * FP32_BYTES
    return DsmPrimitive("dsm_reduce_scatter", "scatter_add", cluster.reduce, 1, 1,
                        (cluster.reduce - 1) * slice_bytes, "dsm")


def inter_cluster_reduce(cluster: ClusterShape, tiles: Tiles, n_split: int) -> DsmPrimitive | None:
    """fp32 atomic add of the block's E slice into the workspace (the ticket and the last cluster's
    conversion are in `inter_cluster_l2_bytes`)."""
    if n_split <= 1:
        return None
    return DsmPrimitive("inter_cluster_reduce", "atomic_add", n_split, 1, 1,
                        tiles.block_m * (tiles.block_l // cluster.reduce) * FP32_BYTES, "global")


def inter_cluster_l2_bytes(m: int, l: int, dtype_bytes: int, n_split: Any, blocks: Any,  # noqa: E741
                           tiles_per_split: Any) -> dict[str, Any]:
    """L2 traffic of inter_cluster_reduce over the whole grid (real rows only; numpy-friendly).

    Every one of the n_split clusters of an M tile adds its fp32 partial (m * l * 4 bytes over the
    grid per split) and takes a ticket (4 bytes per block); the last one reads the fp32 tile
    (l2 read), writes bf16 E and fp32 zeros into the workspace and resets the ticket (4 bytes per
    ticket; `tiles_per_split` = blocks of one split = tickets). With n_split == 1: plain E store."""
    ws = float(m * l * FP32_BYTES)
    e = float(m * l * dtype_bytes)
    split = np.asarray(n_split) > 1
    atomics = n_split * ws + TICKET_BYTES * (blocks + tiles_per_split)
    return {"workspace": np.where(split, ws, 0.0),
            "l2_read": np.where(split, ws, 0.0),
            "l2_write": np.where(split, atomics + e + ws, e)}


def dsm_primitives(cluster: ClusterShape, tiles: Tiles, n_passes: int, n_split: int, gated_mode: str,
                   dtype_bytes: int) -> list[DsmPrimitive]:
    """The primitives a fused plan runs, in execution order."""
    prims = [dsm_all_exchange(cluster, tiles, n_passes, gated_mode), dsm_shuffle(cluster, tiles, n_passes, dtype_bytes),
             dsm_reduce_scatter(cluster, tiles), inter_cluster_reduce(cluster, tiles, n_split)]
    return [p for p in prims if p is not None]


def wire_factor(primitive: str, block_m: Any, block_n: Any, slice_bytes: Any = 0) -> Any:
    """DSM bytes on the wire per payload byte for one primitive (numpy-friendly; see the module doc).
    `slice_bytes`: bytes of one row's slice in dsm_reduce_scatter."""
    if primitive == "dsm_all_exchange":
        return EXCHANGE_WIRE_FACTOR + 0 * np.asarray(block_n)
    if primitive == "dsm_shuffle":
        return (np.asarray(block_n) + PAD_BF16) / np.asarray(block_n)
    if primitive == "dsm_reduce_scatter":
        sb = np.maximum(np.asarray(slice_bytes), 1)
        return (sb + RS_ROW_EXTRA_BYTES) / sb
    return 1.0 + 0 * np.asarray(block_n)


def dsm_split_wire_bytes_per_block(block_m: int, block_n: int, split: int, operands: int = 1) -> float:
    """DSM bytes one part of gemm_wgmma's split-K through DSM pulls: its block_n / split columns of
    every peer's fp32 partial (per accumulated operand), with dsm_reduce_scatter's wire factor."""
    slice_cols = max(block_n // split, 1)
    payload = (split - 1) * block_m * slice_cols * FP32_BYTES * operands
    return float(payload * wire_factor("dsm_reduce_scatter", block_m, block_n, slice_cols * FP32_BYTES))


# fused_wgmma's DSM traffic is its payload: Nsight Compute's DSM bytes equal the payload exactly (1.000x)
# for all 125 fused_wgmma plans with DSM traffic of results/h200/final_paper_*.json (H200, 2026-12-03):
# exchange-only, shuffle-only and reduce-scatter-only plans alike
BULK_WIRE_FACTOR = 1.0  # bulk DSM copies (cp.async.bulk shared::cluster) of contiguous, unpadded SMEM
ST_ASYNC_WIRE_FACTOR = 1.0  # 16-byte st.async of fp32 partials


def wire_bytes_per_round(step: DsmStep, tiles: Tiles, cluster: ClusterShape, instruction: str = "mma_sync") -> float:
    """DSM bytes one block moves per round of `step` as the generated kernel accesses DSM
    (`instruction` "wgmma": the fused_wgmma template's st.async exchange and bulk copies)."""
    if step.level != "dsm":
        return float(step.bytes_per_block)
    if instruction == "wgmma":
        factor = ST_ASYNC_WIRE_FACTOR if step.primitive == "dsm_all_exchange" else BULK_WIRE_FACTOR
        return float(step.bytes_per_block * factor)
    slice_bytes = (tiles.block_l // max(cluster.reduce, 1)) * FP32_BYTES
    return float(step.bytes_per_block * wire_factor(step.primitive, tiles.block_m, tiles.block_n, slice_bytes))


def dsm_steps(cluster: ClusterShape, tiles: Tiles, n_passes: int, n_split: int, gated_mode: str,
              dtype_bytes: int) -> tuple[DsmStep, ...]:
    """The Plan's `dsm_comm` tuple."""
    return tuple(p.step() for p in dsm_primitives(cluster, tiles, n_passes, n_split, gated_mode, dtype_bytes))
