"""Hand-built Plans that follow fusesim/plan.py's semantics: micro-cases and planner-free tests.

These are not a planner: no search, just one valid schedule per call, so the simulator can be
exercised (and its micro-benchmarks reproduced) without the planner's search. DSM steps come from
fusesim.planner.dsm_comm.dsm_steps, the planner's own (bytes per round, rounds per block).
"""

from __future__ import annotations

from fusesim.hardware import Hardware
from fusesim.plan import ClusterShape, DsmStep, Kernel, Placement, Plan, Schedule, Tiles
from fusesim.planner.dsm_comm import dsm_steps
from fusesim.workload import Chain

FP32 = 4


def chain(case_id: str, m: int, n: int, k: int, l: int, gated: bool = False,  # noqa: E741
          activation: str = "relu") -> Chain:
    return Chain(case_id=case_id, kind="gated_ffn" if gated else "ffn", m=m, n=n, k=k, l=l,
                 activation="silu" if gated else activation, gated=gated)


def unfused_plan(ch: Chain, bm: int = 128, bn: int = 128, bk: int = 64, stages: int = 4,
                 threads: int = 256, instruction: str = "wgmma", split_k1: int = 1) -> Plan:
    """Two kernels: GEMM0 (+act/gating epilogue) writes C, GEMM1 reads it back."""
    eb = ch.dtype_bytes
    nb = 2 if ch.gated else 1
    smem0 = stages * (bm * bk + nb * bk * bn) * eb
    smem1 = stages * (bm * bk + bk * bn) * eb
    k0 = Kernel("gemm0", "gemm0", -(-ch.m // bm) * -(-ch.n // bn), 1, threads, smem0, Tiles(bm, bn, bk), stages)
    k1 = Kernel("gemm1", "gemm1", -(-ch.m // bm) * -(-ch.l // bn) * split_k1, 1, threads, smem1,
                Tiles(bm, bn, bk), stages)
    return Plan(case_id=ch.case_id, chain=ch, strategy="unfused", schedule=Schedule("MNK", "MN"),
                cluster=ClusterShape(), tiles=Tiles(bm, bn, bk), grid_m=0, n_split=1, n_passes=1,
                stages=stages, threads=threads, instruction=instruction,
                gated_mode="sequential" if ch.gated else "none",
                placement=Placement(C="global"), dsm_comm=(), kernels=(k0, k1))


def fused_plan(ch: Chain, cluster: ClusterShape, bm: int, bn: int, bk: int, n_split: int,
               stages: int = 2, threads: int = 256, instruction: str = "wgmma",
               gated_mode: str | None = None) -> Plan:
    """A smem (cluster 1) or dsm plan; n_passes follows from N = n_split * n_passes * cls_n * block_n."""
    eb = ch.dtype_bytes
    cl = cluster
    bl = ch.l // cl.l
    grid_m = ch.m // (cl.m * bm)
    n_passes = ch.n // (n_split * cl.n * bn)
    assert grid_m * cl.m * bm == ch.m and n_passes * n_split * cl.n * bn == ch.n, "tiles must divide"
    gmode = gated_mode or ("sequential" if ch.gated else "none")
    nb = 2 if gmode == "sequential" else 1
    steps = dsm_steps(cl, Tiles(bm, bn, bk, bl), n_passes, n_split, gmode, eb)
    c_tiles = bm * bn * eb * min(cl.shuffle, 2)  # the slice held + the one arriving on the ring
    exch = bm * bn * FP32 * nb if cl.k > 1 else 0  # receive buffer of the all-exchange
    smem = stages * (bm * bk + nb * bk * bn) * eb + c_tiles + exch
    kern = Kernel("fused", "fused", grid_m * n_split * cl.size, cl.size, threads, smem,
                  Tiles(bm, bn, bk, bl), stages, regs_per_thread=168)
    strategy = "smem" if cl.size == 1 else "dsm"
    return Plan(case_id=ch.case_id, chain=ch, strategy=strategy, schedule=Schedule("MNLK", "MN"),
                cluster=cl, tiles=Tiles(bm, bn, bk, bl), grid_m=grid_m, n_split=n_split, n_passes=n_passes,
                stages=stages, threads=threads, instruction=instruction, gated_mode=gmode,
                placement=Placement(C="smem" if cl.size == 1 else "dsm"), dsm_comm=steps, kernels=(kern,))


def copy_like_plan(hw: Hardware, m: int = 16384, n: int = 16384, k: int = 64) -> Plan:
    """GEMM0 alone with a tiny K: writes an m x n C through L2 to HBM, the copy kernel of GEMMs.
    (The second kernel of this chain is 1/64 the size and reads C back mostly from HBM.)"""
    ch = chain("copy", m, n, k, 16)
    plan = unfused_plan(ch, bk=64, stages=2)
    return plan.with_(kernels=plan.kernels[:1])


def dsm_ring_plan(hw: Hardware, cluster_size: int = 2, bytes_per_round: int = 1 << 20, rounds: int = 64,
                  instruction: str = "wgmma") -> Plan:
    """A cluster kernel that only runs a dsm_shuffle ring (GEMMs of one 16^3 step): DSM bandwidth alone
    (`instruction` "wgmma": fused_wgmma's bulk copies; "mma_sync": the fused template's pushes)."""
    cs = cluster_size
    slots = hw.max_active_clusters(cs)
    ch = chain("dsm_ring", 64 * slots, 16 * cs, 16, 16 * cs)
    cl = ClusterShape(1, cs, 1, cs)
    plan = fused_plan(ch, cl, 64, 16, 16, n_split=1, stages=1, instruction=instruction)
    step = DsmStep("dsm_shuffle", "ring", cs, rounds, bytes_per_round, "dsm")
    return plan.with_(dsm_comm=(step,))
