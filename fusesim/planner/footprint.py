"""On-chip footprint of one thread block: SMEM bytes, registers per thread, thread count.

The code generator sizes its dynamic SMEM with these functions, so they describe its layout
exactly (the same formulas as fusesim/capability.py's `fused_layout`, which tests check).
Every function takes ints or numpy arrays (the search evaluates thousands of tiles at once).

Fused kernel SMEM layout (bytes, in this order), bf16 operands (2 B), fp32 partials (4 B);
rows are padded (PAD_BF16 / PAD_F32 elements) so ldmatrix reads are bank-conflict free:

  e_acc   block_m x (block_l + PAD_F32) x 4     the block's fp32 E accumulator (GEMM1 walks it
                                                in sub-tiles of `gemm1_sub_l` columns in registers)
  c_buf   n_cbuf x block_m x (block_n + PAD_BF16) x 2   act(C) slice; n_cbuf = 2 when dsm_shuffle
                                                runs (own slice + ring receive buffer), else 1
  x_buf   (cls_k - 1) x block_m x (block_n + PAD_F32) x 4   dsm_all_exchange receive area (fp32
                                                partials pushed by the cls_k - 1 peers)
  stages  stages x max(A + B, D) x 2            the operand ring, shared by GEMM0 (A block_m x
                                                block_k, B block_k x block_n, twice for a
                                                sequential gated FFN) and GEMM1 (D block_k x sub_l)

dsm_reduce_scatter receives into the operand ring after the last chunk (its (cls_reduce - 1)
fp32 slices are never larger than the E accumulator they replace; the generator checks).
Unfused GEMM kernels: stages x (A + B) x 2, the epilogue stores straight from registers.
Unfused GEMM kernels of the wgmma family (codegen template gemm_wgmma, TMA + 128-byte swizzle, no
padding): stages x (A block_m x 64 + B 64 x block_n, twice gated) x 2, plus a full and an empty
mbarrier per stage (16 B) and 1024 B of alignment slack (`wgmma_gemm_smem_bytes`, equal to
fusesim.capability's).

Registers: fp32 accumulators spread over the threads, plus REG_OVERHEAD_PER_THREAD for addresses,
fragments and loop state; the GEMM0 accumulators (block_m x block_n, twice when gated sequential)
are dead once act(C) is in SMEM, so they share registers with the GEMM1 sub-tile accumulator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PAD_BF16 = 8
PAD_F32 = 4
REG_OVERHEAD_PER_THREAD = 32
THREAD_CHOICES = (128, 256)  # one or two warpgroups: what both instruction families map onto
MAX_STAGES = 8
WGMMA_BLOCK_K = 64
WGMMA_MAX_SPLIT = 16
WGMMA_MIN_K_TILES = 4  # a split-K part streams at least this many block_k tiles


def _scalars(*args: Any) -> bool:
    """All plain ints/bools: take the pure-Python path (numpy on scalars costs microseconds)."""
    return all(isinstance(a, int | bool | np.integer | np.bool_) for a in args)


def gemm1_sub_l(block_l: Any) -> Any:
    """Columns of E a block accumulates in registers at a time during GEMM1 (<= 128)."""
    if _scalars(block_l):
        return next((c for c in (128, 64, 32, 16) if block_l % c == 0), int(block_l))
    bl = np.asarray(block_l)
    out = np.select([bl % 128 == 0, bl % 64 == 0, bl % 32 == 0, bl % 16 == 0], [128, 64, 32, 16], bl)
    return out if out.ndim else int(out)


def fused_smem_bytes(block_m: Any, block_n: Any, block_k: Any, block_l: Any, cls_k: Any, cls_shuffle: Any,
                     stages: Any, gated_sequential: Any) -> Any:
    """Dynamic SMEM of one fused block (layout in the module docstring)."""
    sub_l = gemm1_sub_l(block_l)
    e_acc = block_m * (block_l + PAD_F32) * 4
    c_buf = (1 + (np.asarray(cls_shuffle) > 1).astype(np.int64)) * block_m * (block_n + PAD_BF16) * 2
    x_buf = (np.asarray(cls_k) - 1) * block_m * (block_n + PAD_F32) * 4
    a_tile = block_m * (block_k + PAD_BF16)
    b_tile = block_k * (block_n + PAD_BF16) * (1 + np.asarray(gated_sequential).astype(np.int64))
    d_tile = block_k * (sub_l + PAD_BF16)
    stage = np.maximum(a_tile + b_tile, d_tile) * 2
    total = e_acc + c_buf + x_buf + stages * stage
    return _int(total)


def gemm_smem_bytes(block_m: Any, block_n: Any, block_k: Any, stages: Any, gated: Any) -> Any:
    """Dynamic SMEM of one unfused GEMM block: the operand ring only."""
    if _scalars(block_m, block_n, block_k, stages, gated):
        return int(stages * (block_m * (block_k + PAD_BF16) + block_k * (block_n + PAD_BF16) * (2 if gated else 1)) * 2)
    a_tile = block_m * (block_k + PAD_BF16)
    b_tile = block_k * (block_n + PAD_BF16) * (1 + np.asarray(gated).astype(np.int64))
    return _int(stages * (a_tile + b_tile) * 2)


def wgmma_gemm_smem_bytes(block_m: int, block_n: int, stages: int, gated: bool) -> int:
    """Dynamic SMEM of one gemm_wgmma block (layout in the module docstring)."""
    stage = (block_m + block_n * (2 if gated else 1)) * WGMMA_BLOCK_K * 2
    return int(stages * stage + 16 * stages + 1024)


FUSED_WGMMA_SUB_L = (256, 192, 128, 64)  # E sub-tile widths (wgmma n) a fused_wgmma consumer holds
FUSED_WGMMA_SMEM_LIMIT_BYTES = 232448 - 1024  # the generator's per-block budget (capability.SMEM_LIMIT_BYTES)


def fused_wgmma_sub_l(block_l: Any) -> Any:
    """Columns of E a fused_wgmma consumer accumulates at a time: the widest wgmma n dividing block_l
    (0: none does)."""
    if _scalars(block_l):
        return next((s for s in FUSED_WGMMA_SUB_L if block_l % s == 0), 0)
    bl = np.asarray(block_l)
    return _int(np.select([bl % s == 0 for s in FUSED_WGMMA_SUB_L], list(FUSED_WGMMA_SUB_L), 0))


def fused_wgmma_smem_bytes(block_m: Any, block_n: Any, block_l: Any, cls_k: Any, cls_shuffle: Any,
                           cls_reduce: Any, stages: Any, gated_sequential: Any) -> Any:
    """Dynamic SMEM of one fused_wgmma block (codegen template fused_wgmma, no padding, 128-byte
    swizzle): the ring of stages x max(A block_m x 64 + B 64 x block_n (twice sequential-gated),
    D 64 x sub_l) bf16; the shuffle group's act(C) slices (cls_shuffle x block_m x block_n bf16); one
    region for the exchange's receive slots ((cls_k - 1) x block_m x block_n fp32, twice gated) and
    the reduce-scatter's fp32 E partial (block_m x block_l); the reduce-scatter receive slots
    ((cls_reduce - 1) slices of block_l / cls_reduce columns), a region of their own unless only
    aliasing them into the drained ring and slices fits; 8-byte mbarriers; 1024 B alignment slack.
    Equal to fusesim.capability.fused_wgmma_layout(plan).total (tests check)."""
    nb = 1 + np.asarray(gated_sequential).astype(np.int64)
    sub_l = np.where(fused_wgmma_sub_l(block_l) > 0, fused_wgmma_sub_l(block_l), 64)
    reduce = np.maximum(cls_reduce, 1)
    ring = stages * np.maximum(block_m * 128 + nb * block_n * 128, sub_l * 128)
    c_slots = cls_shuffle * block_m * block_n * 2
    exchange = (np.asarray(cls_k) - 1) * nb * block_m * block_n * 4
    e_partial = np.where(reduce > 1, block_m * block_l * 4, 0)
    e_receive = (reduce - 1) * block_m * (block_l // reduce) * 4
    base = ring + c_slots + np.maximum(exchange, e_partial) + 8 * (2 * stages + cls_shuffle + 2) + 1024
    aliased = (base + e_receive > FUSED_WGMMA_SMEM_LIMIT_BYTES) & (e_receive <= ring + c_slots)
    return _int(np.where(aliased, base, base + e_receive))


def fused_wgmma_tiles_ok(block_m: Any, block_n: Any, block_k: Any, block_l: Any,
                         gated_sequential: Any) -> Any:
    """Tiles the fused_wgmma template instantiates: block_m 64 | 128, block_n 64 | 128 | 256 (at most
    128 when sequential gating keeps two accumulators), block_k 64, block_l a multiple of 64."""
    bm, bn = np.asarray(block_m), np.asarray(block_n)
    return ((np.isin(bm, (64, 128))) & np.isin(bn, (64, 128, 256)) & (np.asarray(block_k) == WGMMA_BLOCK_K)
            & (np.asarray(block_l) % 64 == 0) & ~(np.asarray(gated_sequential) & (bn > 128)))


def wgmma_threads(block_m: Any) -> Any:
    """gemm_wgmma / fused_wgmma: a producer warpgroup plus one consumer warpgroup per 64 rows."""
    return 128 * (1 + block_m // 64)


def wgmma_split(tiles: int, depth: int, sms: int) -> int:
    """Split-K of a gemm_wgmma kernel (parts may be uneven): the largest split <= WGMMA_MAX_SPLIT whose
    grid stays within one wave (tiles x split <= SMs) with every part at least WGMMA_MIN_K_TILES
    block_k tiles deep; 1 when the output tiles alone fill the SMs. (Weight-streaming GEMMs are
    bandwidth-bound: a second, partial wave of blocks costs more than it adds.)"""
    k_tiles = depth // WGMMA_BLOCK_K
    best = 1
    for s in range(2, WGMMA_MAX_SPLIT + 1):
        if tiles * s <= sms and k_tiles // s >= WGMMA_MIN_K_TILES:
            best = s
    return best


def _round8(x: Any) -> Any:
    return (x + 7) // 8 * 8


def fused_regs_per_thread(block_m: Any, block_n: Any, block_l: Any, threads: Any, gated_sequential: Any) -> Any:
    """Registers per thread of a fused block: max(GEMM0 accumulators, GEMM1 sub-tile) + overhead."""
    g = 1 + np.asarray(gated_sequential).astype(np.int64)
    acc = np.maximum(block_m * block_n * g, block_m * gemm1_sub_l(block_l))
    return _int(_round8(-(-acc // threads) + REG_OVERHEAD_PER_THREAD))


def gemm_regs_per_thread(block_m: Any, block_n: Any, threads: Any, gated: Any) -> Any:
    if _scalars(block_m, block_n, threads, gated):
        return int(_round8(-(-(block_m * block_n * (2 if gated else 1)) // threads) + REG_OVERHEAD_PER_THREAD))
    g = 1 + np.asarray(gated).astype(np.int64)
    return _int(_round8(-(-(block_m * block_n * g) // threads) + REG_OVERHEAD_PER_THREAD))


def regs_fit(regs: Any, threads: Any, hw: Any) -> Any:
    """Registers fit one thread's limit and one SM's file (one block per SM at least)."""
    if _scalars(regs, threads):
        return regs <= hw.max_registers_per_thread and regs * threads <= hw.registers_per_sm
    return (regs <= hw.max_registers_per_thread) & (regs * threads <= hw.registers_per_sm)


def warp_layout_ok(rows: Any, cols: Any, threads: Any) -> Any:
    """Some (wm, wn) warp grid tiles rows x cols with warp tiles that are multiples of 16 x 16."""
    if _scalars(rows, cols, threads):
        w = int(threads) // 32
        return any(w % wm == 0 and rows % (16 * wm) == 0 and cols % (16 * (w // wm)) == 0
                   for wm in (1, 2, 4, 8, 16, 32) if wm <= w)
    warps = np.asarray(threads) // 32
    ok = np.zeros(np.broadcast(np.asarray(rows), np.asarray(cols), warps).shape, dtype=bool)
    for wm in (1, 2, 4, 8, 16, 32):
        wn = np.maximum(warps // wm, 1)
        ok |= (warps % wm == 0) & (wm <= warps) & (np.asarray(rows) % (16 * wm) == 0) & (np.asarray(cols) % (16 * wn) == 0)
    return ok if ok.ndim else bool(ok)


def _int(x: Any) -> Any:
    arr = np.asarray(x)
    return arr.astype(np.int64) if arr.ndim else int(arr)
