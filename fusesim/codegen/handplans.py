"""Hand-built Plans (fusesim/plan.py semantics) for generator tests and for runs without the planner.

Not a planner: one explicit schedule per call, `mma_sync` instruction, buildable by construction
or rejected by capability with its reason. DSM step bytes mirror what the fused kernel sends.
"""

from __future__ import annotations

from fusesim.capability import can_build, fused_layout, gemm_smem_bytes
from fusesim.plan import ClusterShape, DsmStep, Kernel, Placement, Plan, Schedule, Tiles
from fusesim.workload import Chain

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


def fused(ch: Chain, cluster: ClusterShape, bm: int, bn: int, bk: int, n_split: int, stages: int = 3,
          threads: int = 256, gated_mode: str | None = None) -> Plan:
    """A smem (cluster 1) or dsm plan; n_passes = N / (n_split * cls_n * block_n)."""
    cl = cluster
    eb = ch.dtype_bytes
    bl = ch.l // cl.l
    grid_m = -(-ch.m // (cl.m * bm))
    n_passes = ch.n // (n_split * cl.n * bn)
    gmode = gated_mode or ("sequential" if ch.gated else "none")
    nb = 2 if gmode == "sequential" else 1
    steps: list[DsmStep] = []
    if cl.k > 1:
        tile = bm * bn * FP32
        op = "mul" if gmode == "mul_exchange" else "add"
        steps.append(DsmStep("dsm_all_exchange", op, cl.k, n_passes, (cl.k - 1) * tile * nb, "dsm"))
    if cl.shuffle > 1:
        steps.append(DsmStep("dsm_shuffle", "ring", cl.shuffle, (cl.shuffle - 1) * n_passes, bm * bn * eb, "dsm"))
    if cl.reduce > 1:
        steps.append(DsmStep("dsm_reduce_scatter", "scatter_add", cl.reduce, 1,
                             (cl.reduce - 1) * bm * (bl // cl.reduce) * FP32, "dsm"))
    if n_split > 1:
        steps.append(DsmStep("inter_cluster_reduce", "atomic_add", n_split, 1, bm * (bl // cl.reduce) * FP32, "global"))
    strategy = "smem" if cl.size == 1 else "dsm"
    plan = Plan(case_id=ch.case_id, chain=ch, strategy=strategy, schedule=Schedule("MNLK", "MN"),
                cluster=cl, tiles=Tiles(bm, bn, bk, bl), grid_m=grid_m, n_split=n_split, n_passes=n_passes,
                stages=stages, threads=threads, instruction="mma_sync", gated_mode=gmode,
                placement=Placement(C="smem" if cl.size == 1 else "dsm"), dsm_comm=tuple(steps), kernels=())
    kern = Kernel("fused", "fused", grid_m * n_split * cl.size, cl.size, threads, 0, Tiles(bm, bn, bk, bl), stages,
                  regs_per_thread=255)
    plan = plan.with_(kernels=(kern,))
    ok, _ = can_build(plan)
    smem = fused_layout(plan).total if ok or True else 0
    return plan.with_(kernels=(kern.__class__(**{**kern.__dict__, "smem_bytes": smem}),), buildable=ok)


# ---- hand candidates for measurement when the planner is absent or emits nothing buildable -------
CLUSTERS = (
    (1, 1, 1, 1), (1, 2, 1, 2), (1, 4, 1, 4), (1, 8, 1, 8), (1, 16, 1, 16),
    (1, 1, 2, 2), (1, 2, 2, 4), (1, 4, 2, 8), (1, 8, 2, 16), (1, 2, 2, 2), (1, 4, 2, 4),
    (2, 2, 1, 2), (2, 4, 1, 4), (2, 8, 1, 8), (2, 2, 2, 4), (2, 4, 2, 8), (1, 4, 4, 4), (1, 2, 4, 8),
)


def _divisors(x: int) -> list[int]:
    return [d for d in range(1, x + 1) if x % d == 0]


def rough_time_us(plan: Plan, sms: int = 132) -> float:
    """A crude ranking score in us (not the planner's cost model): weight streaming vs mma.sync
    tensor time over the busy SMs, plus cluster barriers and launches."""
    ch = plan.chain
    weights = ch.b_bytes + ch.d_bytes
    rate = 350e6 / sms  # FLOP per us per SM that mma.sync kernels of this kind reach (guess)
    if plan.strategy == "unfused":
        k0, k1 = plan.kernels
        t0 = max(ch.b_bytes / 3.0e6, ch.gemm0_flops / (min(k0.grid_blocks, sms) * rate))
        t1 = max(ch.d_bytes / 3.0e6, ch.gemm1_flops / (min(k1.grid_blocks, sms) * rate))
        return t0 + t1 + 2 * ch.c_bytes / 5.0e6 + 4.0
    kern = plan.kernels[0]
    blocks = kern.grid_blocks
    per_sm = 2 if kern.smem_bytes <= 113 * 1024 else 1
    waves = -(-blocks // (sms * per_sm))
    busy = min(blocks, sms)
    mem = weights / 3.0e6 * (1 + 0.15 * (plan.grid_m * plan.cluster.m - 1))
    comp = ch.flops / (busy * rate) * (waves * min(blocks, sms * per_sm) / blocks if blocks else 1)
    syncs = plan.n_passes * (1 + plan.cluster.shuffle) * 0.3 if plan.cluster.size > 1 else 0.0
    return max(mem, comp) + syncs + 2.0


def candidates(ch: Chain, per_strategy: int = 3, sms: int = 132) -> dict[str, list[Plan]]:
    """Buildable hand plans per strategy, best `per_strategy` by rough_time_us."""
    out: dict[str, list[Plan]] = {"unfused": [], "smem": [], "dsm": []}
    bk0 = next(b for b in (64, 32, 16) if ch.k % b == 0)
    for bm, bn, thr in ((64, 64, 128), (128, 128, 256), (64, 128, 256), (32, 64, 128), (64, 32, 128), (64, 16, 128)):
        if ch.n % bn or ch.l % bn:
            continue
        p = unfused(ch, bm=bm, bn=bn, bk=bk0, stages=3, threads=thr)
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
                        if blocks > 2 * sms or (blocks < sms // 2 and ns != chunks):
                            continue
                        for thr in (256, 128):
                            p = fused(ch, cs, bm, bn, bk, n_split=ns, stages=3, threads=thr, gated_mode=gm)
                            if p.buildable:
                                out[p.strategy].append(p)
    for k, plans in out.items():
        plans.sort(key=rough_time_us)
        out[k] = plans[:per_strategy]
    return out
