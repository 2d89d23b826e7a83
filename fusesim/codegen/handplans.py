"""Hand-built Plans (fusesim/plan.py semantics) for generator tests and for runs without the planner.

Not a planner: one explicit schedule per call, `mma_sync` instruction, buildable by construction
or rejected by capability with its reason. DSM steps come from fusesim.planner.dsm_comm.dsm_steps.
"""

from __future__ import annotations

from fusesim.capability import (
    can_build,
    fused_layout,
    fused_smem_bytes,
    gemm_smem_bytes,
    wgmma_gemm_smem_bytes,
    wgmma_threads,
)
from fusesim.plan import ClusterShape, Kernel, Placement, Plan, Schedule, Tiles
from fusesim.planner.dsm_comm import dsm_steps
from fusesim.planner.footprint import wgmma_split
from fusesim.workload import Chain, ConvGeom

FP32 = 4


def unfused(ch: Chain, bm: int = 64, bn: int = 64, bk: int = 64, stages: int = 3, threads: int = 128,
            bm1: int | None = None, bn1: int | None = None) -> Plan:
    """gemm0 (act / gating epilogue, C' to global) then gemm1."""
    bm1, bn1 = bm1 or bm, bn1 or bn
    bk1 = bk if ch.n % bk == 0 else 32
    k0 = Kernel("gemm0", "gemm0", -(-ch.m // bm) * (ch.n // bn), 1, threads,
                gemm_smem_bytes(bm, bn, bk, stages, ch.gated), Tiles(bm, bn, bk), stages)
    k1 = Kernel("gemm1", "gemm1", -(-ch.m // bm1) * (ch.l // bn1), 1, threads,
                gemm_smem_bytes(bm1, bn1, bk1, stages, False), Tiles(bm1, bn1, bk1), stages)
    return Plan(case_id=ch.case_id, chain=ch, strategy="unfused", schedule=Schedule("MNK", "MN"),
                cluster=ClusterShape(), tiles=Tiles(bm, bn, bk), grid_m=0, n_split=1, n_passes=1,
                stages=stages, threads=threads, instruction="mma_sync",
                gated_mode="sequential" if ch.gated else "none",
                placement=Placement(C="global"), dsm_comm=(), kernels=(k0, k1))


def unfused_wgmma(ch: Chain, bm: int = 128, bn: int = 128, stages: int = 4, split0: int = 1, split1: int = 1,
                  bm1: int | None = None, bn1: int | None = None, stages1: int | None = None,
                  dsm_split: tuple[bool, bool] = (False, False)) -> Plan:
    """gemm0 then gemm1 on the gemm_wgmma template (block_k 64); split-K = grid_blocks / output tiles,
    reduced through the L2 workspace, or through DSM where `dsm_split` says so for that GEMM (its
    split parts are one cluster)."""
    bm1, bn1, st1 = bm1 or bm, bn1 or bn, stages1 or stages
    k0 = Kernel("gemm0", "gemm0", -(-ch.m // bm) * (ch.n // bn) * split0, split0 if dsm_split[0] else 1,
                wgmma_threads(bm), wgmma_gemm_smem_bytes(bm, bn, stages, ch.gated), Tiles(bm, bn, 64), stages)
    k1 = Kernel("gemm1", "gemm1", -(-ch.m // bm1) * (ch.l // bn1) * split1, split1 if dsm_split[1] else 1,
                wgmma_threads(bm1), wgmma_gemm_smem_bytes(bm1, bn1, st1, False), Tiles(bm1, bn1, 64), st1)
    return Plan(case_id=ch.case_id, chain=ch, strategy="unfused", schedule=Schedule("MNK", "MN"),
                cluster=ClusterShape(), tiles=Tiles(bm, bn, 64), grid_m=0, n_split=1, n_passes=1,
                stages=stages, threads=wgmma_threads(bm), instruction="wgmma",
                gated_mode="sequential" if ch.gated else "none",
                placement=Placement(C="global"), dsm_comm=(), kernels=(k0, k1))


def wgmma_candidates(ch: Chain, sms: int = 132) -> list[Plan]:
    """Buildable wgmma unfused plans: 128-row tiles (64-row for M <= 64), n 64 | 128 per GEMM (and
    256, measured slower on the H200 but kept as a variant), 4 and 6 stages (or what fits), split-K
    per GEMM so the grid fills about one wave. Ordered so the first few are the tile pairs that won
    most often on the H200 (results/h200/wgmma_trial.json): candidates() keeps only the first ones."""
    out: list[Plan] = []
    bms = (64,) if ch.m <= 64 else (128,)
    for bm in bms:
        for bn0, bn1 in ((64, 64), (128, 128), (64, 128), (128, 64), (256, 256)):
            if ch.gated and bn0 > 128:
                continue
            if ch.n % bn0 or ch.l % bn1:
                continue
            s0 = wgmma_split(-(-ch.m // bm) * (ch.n // bn0), ch.k, sms)
            s1 = wgmma_split(-(-ch.m // bm) * (ch.l // bn1), ch.n, sms)
            for stg in (4, 6):
                p = unfused_wgmma(ch, bm, bn0, stg, s0, s1, bm1=bm, bn1=bn1)
                if can_build(p)[0]:
                    out.append(p)
                else:
                    p = unfused_wgmma(ch, bm, bn0, 4, s0, s1, bm1=bm, bn1=bn1)
                    if can_build(p)[0] and p not in out:
                        out.append(p)
    return out


def fused(ch: Chain, cluster: ClusterShape, bm: int, bn: int, bk: int, n_split: int, stages: int = 3,
          threads: int = 256, gated_mode: str | None = None, instruction: str = "mma_sync") -> Plan:
    """A smem (cluster 1) or dsm plan; n_passes = N / (n_split * cls_n * block_n). With instruction
    "wgmma" (template fused_wgmma) block_k is 64 and threads follow block_m (wgmma_threads)."""
    if instruction == "wgmma":
        bk, threads = 64, wgmma_threads(bm)
    cl = cluster
    eb = ch.dtype_bytes
    bl = ch.l // cl.l
    grid_m = -(-ch.m // (cl.m * bm))
    n_passes = ch.n // (n_split * cl.n * bn)
    gmode = gated_mode or ("sequential" if ch.gated else "none")
    steps = dsm_steps(cl, Tiles(bm, bn, bk, bl), n_passes, n_split, gmode, eb)
    strategy = "smem" if cl.size == 1 else "dsm"
    plan = Plan(case_id=ch.case_id, chain=ch, strategy=strategy, schedule=Schedule("MNLK", "MN"),
                cluster=cl, tiles=Tiles(bm, bn, bk, bl), grid_m=grid_m, n_split=n_split, n_passes=n_passes,
                stages=stages, threads=threads, instruction=instruction, gated_mode=gmode,
                placement=Placement(C="smem" if cl.size == 1 else "dsm"), dsm_comm=steps, kernels=())
    # __launch_bounds__(threads, 1): the register file split over the block's threads, at most 255
    regs = min(255, 65536 // threads // 8 * 8)
    kern = Kernel("fused", "fused", grid_m * n_split * cl.size, cl.size, threads, 0, Tiles(bm, bn, bk, bl), stages,
                  regs_per_thread=regs)
    plan = plan.with_(kernels=(kern,))
    ok, _ = can_build(plan)
    smem = fused_smem_bytes(plan)
    return plan.with_(kernels=(kern.__class__(**{**kern.__dict__, "smem_bytes": smem}),), buildable=ok)


# ---- hand candidates for measurement when the planner is absent or emits nothing buildable -------
CLUSTERS = (
    (1, 1, 1, 1), (1, 2, 1, 2), (1, 4, 1, 4), (1, 8, 1, 8), (1, 16, 1, 16),
    (1, 1, 2, 2), (1, 2, 2, 4), (1, 4, 2, 8), (1, 8, 2, 16), (1, 2, 2, 2), (1, 4, 2, 4),
    (2, 2, 1, 2), (2, 4, 1, 4), (2, 8, 1, 8), (2, 2, 2, 4), (2, 4, 2, 8), (1, 4, 4, 4), (1, 2, 4, 8),
)


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


# clusters resident at once on an H200 by cluster size, 1 and 2 blocks per SM (reference/hopper.md)
ACTIVE_CLUSTERS = {1: {1: 132, 2: 66, 4: 30, 8: 15, 16: 7}, 2: {1: 264, 2: 132, 4: 62, 8: 30, 16: 14}}
SM_RATE_FLOP_PER_US = 3.0e6  # mma.sync bf16 per SM at ~63% of 4.7 TFLOP/s (guess for ranking)
L2_BYTES_PER_US = 5.5e6
HBM_BYTES_PER_US = 4.0e6


LOAD_LATENCY_US = 1.0  # a cp.async round trip under load (guess): bytes in flight / latency = rate


def _kernel_us(flops: float, l2_bytes: float, hbm_bytes: float, blocks: int, cs: int, smem: int,
               inflight_bytes: float) -> float:
    per_sm = 2 if smem <= 113 * 1024 else 1
    cap = ACTIVE_CLUSTERS[per_sm].get(cs, 1) * cs
    waves = -(-blocks // cap)
    per_block = flops / blocks
    compute = waves * per_block / (SM_RATE_FLOP_PER_US / per_sm)
    latency = waves * (l2_bytes / blocks) / (inflight_bytes / LOAD_LATENCY_US)
    return max(compute, latency, l2_bytes / L2_BYTES_PER_US, hbm_bytes / HBM_BYTES_PER_US)


def rough_time_us(plan: Plan, sms: int = 132) -> float:
    """A crude ranking score in us, used only to pick which hand plans to build and time (the
    planner's cost model is fusesim.planner's): mma.sync tensor time over resident blocks with
    wave quantization by cluster residency, L2->SM and HBM streaming, cluster barriers, launches."""
    ch = plan.chain
    eb = ch.dtype_bytes
    nb = 2 if ch.gated else 1
    if plan.strategy == "unfused":
        k0, k1 = plan.kernels
        t = k0.tiles
        mp = -(-ch.m // t.block_m) * t.block_m
        l2_0 = (ch.n // t.block_n) * mp * ch.k * eb + -(-ch.m // t.block_m) * ch.k * ch.n * eb * nb
        u0 = _kernel_us(2 * mp * ch.n * ch.k * nb, l2_0, ch.b_bytes + ch.a_bytes + ch.c_bytes, k0.grid_blocks, 1,
                        k0.smem_bytes, k0.smem_bytes * (k0.stages - 1) / k0.stages)
        t1 = k1.tiles
        mp1 = -(-ch.m // t1.block_m) * t1.block_m
        l2_1 = (ch.l // t1.block_n) * mp1 * ch.n * eb + -(-ch.m // t1.block_m) * ch.n * ch.l * eb
        u1 = _kernel_us(2 * mp1 * ch.l * ch.n, l2_1, ch.d_bytes + ch.c_bytes + ch.e_bytes, k1.grid_blocks, 1,
                        k1.smem_bytes, k1.smem_bytes * (k1.stages - 1) / k1.stages)
        return u0 + u1 + 5.0
    kern, c, t = plan.kernels[0], plan.cluster, plan.tiles
    mp = plan.grid_m * c.m * t.block_m
    kslice = ch.k if plan.gated_mode == "mul_exchange" else ch.k // c.k
    per_block_l2 = plan.n_passes * ((t.block_m * kslice + kslice * t.block_n * (2 if plan.gated_mode == "sequential" else 1))
                                    + c.shuffle * t.block_n * t.block_l) * eb
    flops = 2 * mp * ch.n * ch.k * nb + 2 * mp * ch.n * ch.l
    hbm = ch.min_bytes
    stage_bytes = fused_layout(plan).stages / plan.stages
    u = _kernel_us(flops, per_block_l2 * kern.grid_blocks, hbm, kern.grid_blocks, c.size, kern.smem_bytes,
                   stage_bytes * (plan.stages - 1))
    syncs = plan.n_passes * ((c.shuffle if c.shuffle > 1 else 0) + (1 if c.k > 1 else 0)) * 0.4
    syncs += 0.8 if c.reduce > 1 else 0.0
    syncs += 1.5 if plan.n_split > 1 else 0.0
    return u + syncs + 3.0


def candidates(ch: Chain, per_strategy: int = 3, sms: int = 132) -> dict[str, list[Plan]]:
    """Buildable hand plans per strategy, best `per_strategy` by rough_time_us."""
    out: dict[str, list[Plan]] = {"unfused": [], "smem": [], "dsm": []}
    bk0 = next(b for b in (64, 32, 16) if ch.k % b == 0)
    for bm, bn, thr in ((64, 64, 128), (128, 128, 256), (64, 128, 256), (32, 64, 128), (64, 32, 128), (64, 16, 128)):
        if ch.n % bn or ch.l % bn:
            continue
        for stg in (3, 4, 6):
            p = unfused(ch, bm=bm, bn=bn, bk=bk0, stages=stg, threads=thr)
            if can_build(p)[0]:
                out["unfused"].append(p)
    gmodes = ("sequential", "mul_exchange") if ch.gated else ("none",)
    for cm, cn, ck, cl in CLUSTERS:
        cs = ClusterShape(cm, cn, ck, cl)
        if not cs.is_consistent() or ch.l % cl:
            continue
        for gm in gmodes:
            if gm == "mul_exchange" and ck != 2:
                continue
            for bm in (128, 64, 32, 16):
                if bm * cm > max(16, -(-ch.m // 16) * 16) * 2:
                    continue
                for bn in (128, 64, 32):
                    if ch.n % (cn * bn):
                        continue
                    kslice = ch.k if gm == "mul_exchange" else ch.k // ck
                    if ch.k % ck:
                        continue
                    bk = next((b for b in (64, 32, 16) if kslice % b == 0 and bn % b == 0), 0)
                    if not bk:
                        continue
                    chunks = ch.n // (cn * bn)
                    for ns in _divisors(chunks):
                        grid_m = -(-ch.m // (cm * bm))
                        blocks = grid_m * ns * cs.size
                        if blocks > 4 * sms or (blocks < sms // 2 and ns != chunks):
                            continue
                        for thr in (256, 128):
                            for stg in (3, 4, 6):
                                p = fused(ch, cs, bm, bn, bk, n_split=ns, stages=stg, threads=thr, gated_mode=gm)
                                if p.buildable:
                                    out[p.strategy].append(p)
    wg = wgmma_candidates(ch, sms)
    for k, plans in out.items():
        uniq = {p.to_json(): p for p in plans}
        ranked = sorted(uniq.values(), key=rough_time_us)
        picked: list[Plan] = []
        per_shape: dict[tuple, int] = {}
        for p in ranked:  # at most 2 stage/thread variants of one (cluster, tiles, split)
            key = (p.cluster, p.tiles, p.n_split, tuple(kk.tiles for kk in p.kernels))
            if per_shape.get(key, 0) < 2:
                per_shape[key] = per_shape.get(key, 0) + 1
                picked.append(p)
        out[k] = picked[:per_strategy]
    # the wgmma unfused variants are always measured (the ranking score models mma.sync only)
    out["unfused"] += [p for p in wg if p not in out["unfused"]][:max(per_strategy, 4)]
    return out


def _chain(cid: str, m: int, n: int, k: int, l: int, act: str = "gelu", gated: bool = False) -> Chain:  # noqa: E741
    return Chain(cid, "gated_ffn" if gated else "ffn", m, n, k, l, "silu" if gated else act, gated)


_REP_FFN = _chain("t", 96, 2048, 512, 512, "gelu")
_REP_GATED = _chain("tg", 96, 1024, 256, 256, gated=True)
_REP_CONV = Chain("tc", "conv_chain", 14 * 14, 128, 9 * 64, 256, "relu", False, conv=ConvGeom(1, 14, 14, 64, 3))
# two 7x7 images of 128 channels: A rows cross an image boundary inside a tile, K = 1152 splits in two
_REP_CONV2 = Chain("tc2", "conv_chain", 2 * 7 * 7, 256, 9 * 128, 128, "gelu", False, conv=ConvGeom(2, 7, 7, 128, 3))


def representative_plans() -> dict[str, Plan]:
    """One plan per template family and dsm_comm form (what CI compiles)."""
    return {
        "gemm": unfused(_REP_FFN, 64, 64, 64),
        "gemm_gated_im2col_predicated": unfused(_chain("tg77", 77, 768, 160, 192, gated=True), 64, 32, 32),
        "gemm_conv3x3": unfused(_REP_CONV, 64, 64, 64),
        "fused_smem_inter_cluster": fused(_REP_FFN, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=8),
        "fused_dsm_exchange_shuffle_reduce": fused(_REP_FFN, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=1),
        "fused_dsm_e_regs": fused(_REP_FFN, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=8),
        "fused_dsm_cluster16": fused(_REP_FFN, ClusterShape(1, 16, 1, 16), 64, 32, 32, n_split=4),
        "fused_dsm_mul_exchange": fused(_REP_GATED, ClusterShape(1, 2, 2, 4), 64, 64, 64, n_split=8,
                                        gated_mode="mul_exchange"),
        "fused_dsm_gated_sequential": fused(_REP_GATED, ClusterShape(1, 2, 2, 2), 64, 64, 64, n_split=2),
        "fused_dsm_im2col_cls_m2": fused(_REP_CONV, ClusterShape(2, 2, 1, 2), 64, 64, 64, n_split=1),
        # gemm_wgmma (TMA + wgmma): 128- and 64-row tiles, n 64/128/256, split-K, predicated M, gated, each act
        "gemm_wgmma_split": unfused_wgmma(_REP_FFN, 128, 128, 4, split0=2, split1=4, bn1=256),
        "gemm_wgmma_gated_split_predicated": unfused_wgmma(_chain("tg77", 77, 768, 256, 512, gated=True), 128, 64, 6,
                                                           split0=2, split1=2, bn1=128),
        "gemm_wgmma_relu_m64": unfused_wgmma(_chain("tr", 200, 1024, 512, 256, "relu"), 64, 128, 3, split1=2,
                                             bn1=64),
        "gemm_wgmma_silu_n64": unfused_wgmma(_chain("ts", 33, 256, 128, 128, "silu"), 64, 64, 2, split0=2),
        "gemm_wgmma_none_n256": unfused_wgmma(_chain("tn", 128, 512, 256, 512, "none"), 128, 256, 4, split0=2),
        # split-K through DSM: the parts of a tile are one cluster (dsm_reduce_scatter of fp32 partials)
        "gemm_wgmma_dsm_split_predicated": unfused_wgmma(_chain("td", 200, 1024, 512, 512, "gelu"), 128, 128, 4,
                                                         split0=2, split1=4, dsm_split=(True, True)),
        "gemm_wgmma_dsm_split8_m64": unfused_wgmma(_chain("te", 48, 512, 1024, 256, "relu"), 64, 64, 3,
                                                   split0=8, split1=2, dsm_split=(True, True)),
        # fused_wgmma (TMA + wgmma fused): one N chunk per cluster, every dsm_comm form
        "fused_wgmma_smem_inter_cluster": fused(_REP_FFN, ClusterShape(1, 1, 1, 1), 64, 128, 64, n_split=16,
                                                stages=4, instruction="wgmma"),
        "fused_wgmma_exchange_shuffle_reduce": fused(_REP_FFN, ClusterShape(1, 4, 2, 4), 64, 128, 64, n_split=4,
                                                     stages=4, instruction="wgmma"),
        "fused_wgmma_reduce_receive_aliased": fused(_chain("ta", 128, 1024, 512, 2048, "gelu"),
                                                    ClusterShape(1, 4, 2, 4), 64, 128, 64, n_split=2, stages=2,
                                                    instruction="wgmma"),
        "fused_wgmma_mul_exchange": fused(_REP_GATED, ClusterShape(1, 2, 2, 4), 64, 128, 64, n_split=4, stages=4,
                                          gated_mode="mul_exchange", instruction="wgmma"),
        "fused_wgmma_gated_sequential": fused(_REP_GATED, ClusterShape(1, 2, 1, 2), 64, 128, 64, n_split=4,
                                              stages=4, instruction="wgmma"),
        "fused_wgmma_cls_m2_relu_m128": fused(_chain("tr", 256, 1024, 512, 256, "relu"), ClusterShape(2, 2, 1, 2),
                                              128, 64, 64, n_split=8, stages=4, instruction="wgmma"),
        "fused_wgmma_large_l_predicated_silu": fused(_chain("ts", 77, 128, 1024, 4096, "silu"),
                                                     ClusterShape(1, 1, 1, 1), 64, 128, 64, n_split=1, stages=4,
                                                     instruction="wgmma"),
        # E staged in the drained ring (no reduce-scatter): two consumer warpgroups, a shuffle, predicated M
        "fused_wgmma_staged_e_m128_shuffle": fused(_chain("tq", 200, 128, 256, 512, "relu"), ClusterShape(1, 2, 1, 2),
                                                   128, 64, 64, n_split=1, stages=4, instruction="wgmma"),
        # implicit im2col in the wgmma templates (cp.async A rows + TMA weights on one ring)
        "gemm_wgmma_conv3x3_split_predicated": unfused_wgmma(_REP_CONV, 128, 64, 4, split0=3, bn1=128),
        "gemm_wgmma_conv3x3_m64_two_images": unfused_wgmma(_REP_CONV2, 64, 128, 3, split1=2, bn1=64),
        "fused_wgmma_conv3x3_smem": fused(_REP_CONV, ClusterShape(1, 1, 1, 1), 64, 128, 64, n_split=1, stages=4,
                                          instruction="wgmma"),
        "fused_wgmma_conv3x3_cls_k2_two_images": fused(_REP_CONV2, ClusterShape(1, 2, 2, 2), 64, 64, 64, n_split=2,
                                                       stages=2, instruction="wgmma"),
    }




# ---- fused_wgmma hand candidates (TMA + wgmma fused kernels) -------------------------------------
def _consistent_clusters(max_size: int = 16) -> list[ClusterShape]:
    """Consistent (1, cls_n, cls_k, cls_l) shapes: the fused_wgmma blocks of one cluster share nothing
    along M, so cls_m > 1 only regroups the grid."""
    out = []
    for cm in (1,):
        for cn in (1, 2, 4, 8, 16):
            for ck in (1, 2, 4, 8, 16):
                if cm * cn * ck > max_size:
                    continue
                for cl in (1, 2, 4, 8, 16):
                    cs = ClusterShape(cm, cn, ck, cl)
                    if cs.is_consistent():
                        out.append(cs)
    return out


DSM_GBPS_PER_SM = 30.0  # H200 DSM push, per SM (reference/hopper.md): for ranking only
L2_GBPS_PER_SM = 60.0  # an SM's share of L2 bandwidth under load: for ranking only


def rough_fused_wgmma_us(plan: Plan, sms: int = 132) -> float:
    """A crude latency-oriented score (us) to choose which fused_wgmma hand plans to build and time:
    fixed start, the per-block bytes at an SM's share of L2, DSM bytes at the push bandwidth, the
    inter-cluster reduction's round trips, wgmma time, waves. Not the planner's cost model."""
    ch, c, t = plan.chain, plan.cluster, plan.tiles
    nb = 2 if plan.gated_mode == "sequential" else 1
    kslice = ch.k if plan.gated_mode == "mul_exchange" else ch.k // c.k
    blocks = plan.kernels[0].grid_blocks
    per_block = (kslice * (t.block_m + nb * t.block_n) + c.shuffle * t.block_n * t.block_l) * 2
    dsm = ((c.k - 1) * nb * t.block_m * t.block_n * 4 + (c.shuffle - 1) * t.block_m * t.block_n * 2
           + (c.reduce - 1) * t.block_m * (t.block_l // max(c.reduce, 1)) * 4)
    waves = -(-blocks // sms)
    flops = 2 * t.block_m * t.block_n * kslice * nb + 2 * t.block_m * c.shuffle * t.block_n * t.block_l
    us = 4.0 + waves * (per_block / (L2_GBPS_PER_SM * 1e3) + dsm / (DSM_GBPS_PER_SM * 1e3) + flops / 5.0e6)
    us += 0.6 * ((c.k > 1) + (c.shuffle > 1) + (c.reduce > 1))
    if plan.n_split > 1:
        us += 2.0 + blocks * t.block_m * (t.block_l // max(c.reduce, 1)) * 4 / 700e3
    return max(us, ch.min_bytes / 4.3e6 + 4.0)


def fused_wgmma_candidates(ch: Chain, per_case: int = 8, sms: int = 132) -> list[Plan]:
    """Buildable fused_wgmma plans of a chain (one N chunk: n_split = N / (cls_n * block_n)), the
    deepest ring that fits (at most one stage per job), ranked by rough_fused_wgmma_us, at most two
    per cluster shape."""
    out: list[Plan] = []
    gmodes = ("sequential", "mul_exchange") if ch.gated else ("none",)
    for cs in _consistent_clusters():
        for gm in gmodes:
            if gm == "mul_exchange" and cs.k != 2:
                continue
            for bm in (64, 128):
                if bm > max(64, -(-ch.m // 64) * 64) or bm * cs.m > max(64, -(-ch.m // 64) * 64):
                    continue
                for bn in (64, 128, 256):
                    if ch.n % (cs.n * bn) or ch.l % cs.l or (ch.l // cs.l) % 64:
                        continue
                    n_split = ch.n // (cs.n * bn)
                    if n_split * cs.size * -(-ch.m // (cs.m * bm)) > 2 * sms:
                        continue
                    for stages in (6, 5, 4, 3, 2):
                        p = fused(ch, cs, bm, bn, 64, n_split=n_split, stages=stages, gated_mode=gm,
                                  instruction="wgmma")
                        if p.buildable:
                            out.append(p)
                            break
    out.sort(key=rough_fused_wgmma_us)
    picked: list[Plan] = []
    per_shape: dict[ClusterShape, int] = {}
    for p in out:
        if per_shape.get(p.cluster, 0) < 2:
            per_shape[p.cluster] = per_shape.get(p.cluster, 0) + 1
            picked.append(p)
    return picked[:per_case]
