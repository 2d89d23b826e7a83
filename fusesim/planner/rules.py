"""The paper's five pruning rules (Table III), one function each, applied in order.

Each rule takes the surviving factored space and returns a smaller one; counts are exact
(products of factor sizes, and numpy sums over the (cluster shape x tiles) grid once a rule
couples them). Nothing is listed candidate by candidate.

1. tiles_divide: every block tile is a multiple of 16 (one MMA) and divides its dimension
   (M, predicated, also keeps power-of-two tiles; see space.dividing_tiles).
2. cluster_fits: cls_m * cls_n * cls_k <= max_cluster_size (the same physical blocks run both
   GEMMs) and the GEMM1 grouping is consistent: cls_k | cls_l | cls_n * cls_k.
3. k_innermost: GEMM0's reduction K is temporal and the innermost loop (the activation needs
   complete sums; K split across clusters would leave partial C in different clusters).
4. l_not_spatial: L is not spatial (every L tile would need all of C).
5. fits_capacity: no tensor is larger than the lowest tier it may occupy: with the smallest
   pipeline (2 stages) the fused block's SMEM (footprint.fused_smem_bytes) fits
   smem_per_block_bytes; its accumulators fit the registers with 128 or 256 threads; operand
   tiles fit one TMA box (block_m, block_n, block_k <= 256). On a machine with the wgmma family a
   tile also passes when the fused_wgmma kernel holds it (footprint.fused_wgmma_smem_bytes with 2
   stages; E in registers, so a wide block_l need not fit SMEM).

After the paper's rules, `executable` keeps what the fused kernel implements (plan.py semantics):
schedules M|NLK (n_split = 1) and MN|LK (n_split > 1) only, cls_m * block_m <= padded M,
cls_n * block_n | N, cls_k * block_k | K, cls_l * block_l = L, block_n a multiple of block_k,
block_l / cls_reduce a multiple of 8, and per instruction family (`executable_mask(s, family)`):
mma_sync, a thread count whose registers fit (preferring one with a warp layout of 16x16 warp
tiles; without one the plan is kept, and can_build decides buildability); wgmma, the fused_wgmma
tiles (footprint.fused_wgmma_tiles_ok) with cls_k * 64 | K.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from fusesim.planner.footprint import (
    THREAD_CHOICES,
    fused_regs_per_thread,
    fused_smem_bytes,
    fused_wgmma_smem_bytes,
    fused_wgmma_tiles_ok,
    gemm1_sub_l,
    regs_fit,
    warp_layout_ok,
)
from fusesim.planner.space import DIMS, Space, dim_sizes, dividing_tiles, raw_tile_count

TMA_BOX_MAX = 256
MIN_STAGES = 2
EXECUTABLE_SCHEDULES = (("M", "NLK"), ("MN", "LK"))  # n_split == 1, n_split > 1


@dataclass(frozen=True)
class Survivors:
    """A factored set of candidates: schedules x cluster shapes x tiles (x an optional pair mask)."""

    space: Space
    schedules: tuple  # LoopSchedule
    clusters: np.ndarray  # (n, 4): cls_m, cls_n, cls_k, cls_l
    tiles: dict[str, tuple[int, ...]] | None  # None: every multiple of 16 (before rule 1)
    pair_mask: np.ndarray | None = None  # (clusters, Tm, Tn, Tk, Tl) after rule 5

    def tile_count(self) -> int:
        if self.tiles is None:
            return prod(raw_tile_count(s) for s in dim_sizes(self.space.chain).values())
        return prod(len(self.tiles[d]) for d in DIMS)

    def pairs(self) -> int:
        if self.pair_mask is not None:
            return int(self.pair_mask.sum())
        return len(self.clusters) * self.tile_count()

    def count(self) -> int:
        return len(self.schedules) * self.pairs()

    def grid(self) -> dict[str, np.ndarray]:
        """Broadcastable arrays over (cluster, Tm, Tn, Tk, Tl)."""
        assert self.tiles is not None
        c = self.clusters
        sh = (-1, 1, 1, 1, 1)
        out = {"cm": c[:, 0].reshape(sh), "cn": c[:, 1].reshape(sh), "ck": c[:, 2].reshape(sh),
               "cl": c[:, 3].reshape(sh)}
        for i, d in enumerate(DIMS):
            shape = [1, 1, 1, 1, 1]
            shape[i + 1] = -1
            out["b" + d.lower()] = np.asarray(self.tiles[d], dtype=np.int64).reshape(shape)
        return out


def initial(space: Space) -> Survivors:
    vals = space.cluster_values
    clusters = np.array(list(itertools.product(vals, repeat=4)), dtype=np.int64)
    return Survivors(space, space.schedules, clusters, None)


def tiles_divide(s: Survivors) -> Survivors:
    """Rule 1."""
    sizes = dim_sizes(s.space.chain)
    return replace(s, tiles={d: dividing_tiles(sizes[d], d) for d in DIMS})


def cluster_fits(s: Survivors) -> Survivors:
    """Rule 2."""
    c = s.clusters
    cm, cn, ck, cl = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    hw = s.space.hw
    ok = (cm * cn * ck <= hw.max_cluster_size) & (cl % ck == 0) & ((cn * ck) % cl == 0) & (cl >= ck)
    ok &= np.array([hw.max_active_clusters(int(x)) > 0 for x in cm * cn * ck], dtype=bool) if len(c) else ok
    return replace(s, clusters=c[ok])


def k_innermost(s: Survivors) -> Survivors:
    """Rule 3."""
    return replace(s, schedules=tuple(x for x in s.schedules if x.temporal.endswith("K")))


def l_not_spatial(s: Survivors) -> Survivors:
    """Rule 4."""
    return replace(s, schedules=tuple(x for x in s.schedules if "L" not in x.spatial))


def capacity_ok(chain, hw, cm, cn, ck, cl, bm, bn, bk, bl):  # noqa: ANN001, ANN201 - ints or arrays
    """Rule 5's test for (cluster, tiles); elementwise over arrays."""
    shuffle = np.maximum(cl // ck, 1)
    # a gated FFN with cls_k = 2 may run the branches on the two blocks (mul_exchange: one B tile)
    gated_seq = np.asarray(chain.gated) & (ck != 2)
    smem = fused_smem_bytes(bm, bn, bk, bl, ck, shuffle, MIN_STAGES, gated_seq)
    ok = smem <= hw.smem_per_block_bytes
    box = (bm <= TMA_BOX_MAX) & (bn <= TMA_BOX_MAX) & (bk <= TMA_BOX_MAX)
    regs_ok = np.zeros(np.shape(ok), dtype=bool)
    for t in THREAD_CHOICES:
        if t <= hw.max_threads_per_block:
            regs_ok = regs_ok | regs_fit(fused_regs_per_thread(bm, bn, bl, t, gated_seq), t, hw)
    return box & ((ok & regs_ok) | wgmma_capacity_ok(chain, hw, cn, ck, cl, bm, bn, bk, bl))


def wgmma_capacity_ok(chain, hw, cn, ck, cl, bm, bn, bk, bl):  # noqa: ANN001, ANN201
    """The fused_wgmma kernel holds these tiles in SMEM with 2 stages (False without the family)."""
    if "wgmma" not in hw.tensor_tflops:
        return np.zeros(np.broadcast(bm, bn, bk, bl, ck).shape, dtype=bool)
    gated_seq = np.asarray(chain.gated) & (ck != 2)
    reduce = np.maximum((cn * ck) // np.maximum(cl, 1), 1)
    smem = fused_wgmma_smem_bytes(bm, bn, bl, ck, np.maximum(cl // ck, 1), reduce, MIN_STAGES, gated_seq)
    return fused_wgmma_tiles_ok(bm, bn, bk, bl, gated_seq) & (smem <= hw.smem_per_block_bytes)


def fits_capacity(s: Survivors) -> Survivors:
    """Rule 5."""
    g = s.grid()
    mask = capacity_ok(s.space.chain, s.space.hw, g["cm"], g["cn"], g["ck"], g["cl"], g["bm"], g["bn"], g["bk"],
                       g["bl"])
    full = np.broadcast_to(mask, (len(s.clusters),) + tuple(len(s.tiles[d]) for d in DIMS)).copy()  # type: ignore[index]
    if s.pair_mask is not None:
        full &= s.pair_mask
    return replace(s, pair_mask=full)


def threads_for(chain, hw, bm, bn, bl, gated_seq):  # noqa: ANN001, ANN201
    """Thread count per block: 256 for tiles of at least 64x128 (two warpgroups), else 128, falling
    back to the other when registers or the warp layout do not fit; 0 when neither does."""
    sub_l = gemm1_sub_l(bl)

    def ok(t: int):  # noqa: ANN202
        return (regs_fit(fused_regs_per_thread(bm, bn, bl, t, gated_seq), t, hw)
                & warp_layout_ok(bm, bn, t) & warp_layout_ok(bm, sub_l, t) & (t <= hw.max_threads_per_block))

    ok128, ok256 = ok(128), ok(256)
    big = bm * bn >= 64 * 128
    first = np.where(big, 256, 128)
    first_ok = np.where(big, ok256, ok128)
    second = np.where(big, 128, 256)
    second_ok = np.where(big, ok128, ok256)
    # no 16x16 warp layout (tiny tiles): still a valid plan to simulate, 128 threads if registers fit
    regs128 = regs_fit(fused_regs_per_thread(bm, bn, bl, 128, gated_seq), 128, hw) & (128 <= hw.max_threads_per_block)
    return np.where(first_ok, first, np.where(second_ok, second, np.where(regs128, 128, 0)))


def executable_mask(s: Survivors, family: str | None = None) -> np.ndarray:
    """(cluster, tiles) pairs a fused kernel template implements (before n_split): that of `family`,
    or of any family of the machine (None)."""
    ch = s.space.chain
    g = s.grid()
    cm, cn, ck, cl, bm, bn, bk, bl = (g[k] for k in ("cm", "cn", "ck", "cl", "bm", "bn", "bk", "bl"))
    m16 = raw_tile_count(ch.m) * 16
    reduce = np.maximum((cn * ck) // cl, 1)
    ok = ((cm * bm <= m16) & (ch.n % (cn * bn) == 0) & (ch.k % (ck * bk) == 0) & (cl * bl == ch.l)
          & (bn % bk == 0) & (bl % reduce == 0) & ((bl // reduce) % 8 == 0))
    gated_seq = np.asarray(ch.gated) & (ck != 2)
    hw = s.space.hw
    mma = ((threads_for(ch, hw, bm, bn, bl, gated_seq) > 0)
           & (fused_smem_bytes(bm, bn, bk, bl, ck, np.maximum(cl // ck, 1), MIN_STAGES, gated_seq)
              <= hw.smem_per_block_bytes))
    wgmma = wgmma_capacity_ok(ch, hw, cn, ck, cl, bm, bn, bk, bl)
    ok = ok & {"mma_sync": mma, "wgmma": wgmma, None: mma | wgmma}[family]
    base = s.pair_mask if s.pair_mask is not None else True
    return np.broadcast_to(ok & base, s.pair_mask.shape if s.pair_mask is not None else np.broadcast(ok).shape).copy()


def executable(s: Survivors) -> tuple[int, np.ndarray, tuple]:
    """Count of candidates the kernel implements, the pair mask, and the schedules kept."""
    mask = executable_mask(s)
    scheds = tuple(x for x in s.schedules if (x.spatial, x.temporal) in EXECUTABLE_SCHEDULES)
    g = s.grid()
    splittable = (s.space.chain.n // (g["cn"] * g["bn"])) >= 2
    count = 0
    for x in scheds:
        count += int(mask.sum()) if x.spatial == "M" else int((mask & splittable).sum())
    return count, mask, scheds


RULES = (
    ("1 tiles divide the problem", tiles_divide),
    ("2 cluster fits (cls_m*cls_n*cls_k <= max)", cluster_fits),
    ("3 K innermost", k_innermost),
    ("4 L not spatial", l_not_spatial),
    ("5 fits capacity", fits_capacity),
)


def apply_rules(space: Space) -> tuple[int, list[tuple[str, int]], Survivors]:
    """Raw count, (rule name, survivors) after each rule, and the final factored survivors."""
    s = initial(space)
    raw = space.count()
    after = []
    for name, rule in RULES:
        s = rule(s)
        after.append((name, s.count()))
    return raw, after, s
