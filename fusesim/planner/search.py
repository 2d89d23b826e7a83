"""Search (the paper's Algorithm 2): prune, concretize the survivors into plans, score, keep top-K.

1. rules.apply_rules counts the factored space rule by rule (Table III).
2. rules.executable keeps the (cluster, tiles) pairs the fused kernel implements; each is expanded
   over n_split (every divisor of N / (cls_n * block_n); n_passes is the quotient) and, for a gated
   FFN with cls_k = 2, over gated_mode, and over stages (2..MAX_FUSED_STAGES, as far as SMEM allows);
   threads and registers from footprint.py.
3. cost.fused_cost scores all of them at once (numpy), for every instruction family of the machine.
4. Per strategy (smem: cluster size 1; dsm: > 1) the best are turned into Plans. The instruction
   family is chosen per plan by the code generator's capability check: the fastest family whose plan
   can_build() accepts; if none does, the fastest family, marked buildable=False (with
   require_buildable such candidates are skipped).
The unfused baseline picks each GEMM kernel's best tiles with the same cost model, per instruction
family: mma_sync tiles (no split-K) and the gemm_wgmma template's tiles (block_m 64 | 128,
block_n 64 | 128 | 256, block_k 64, the deepest ring that fits, split-K by footprint.wgmma_split so
a kernel with fewer output tiles than SMs still fills the machine).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fusesim.capability import codegen_switches, kernel_fits_sm, wgmma_gemm_regs_per_thread
from fusesim.hardware import Hardware
from fusesim.plan import ClusterShape, Kernel, Plan, Schedule, Tiles
from fusesim.planner.cost import Prediction, fused_cost, predict
from fusesim.planner.dataflow import MODE_MUL, MODE_NONE, MODE_SEQUENTIAL, placement_for
from fusesim.planner.dsm_comm import dsm_steps
from fusesim.planner.footprint import (
    THREAD_CHOICES,
    fused_regs_per_thread,
    fused_smem_bytes,
    fused_wgmma_smem_bytes,
    gemm_regs_per_thread,
    gemm_smem_bytes,
    regs_fit,
    warp_layout_ok,
    wgmma_gemm_smem_bytes,
    wgmma_split,
    wgmma_threads,
)
from fusesim.planner.rules import apply_rules, executable, executable_mask, threads_for
from fusesim.planner.space import Space, loop_schedules
from fusesim.workload import Chain

FUSED_STRATEGIES = ("smem", "dsm")
ALL_STRATEGIES = ("unfused", "smem", "dsm")
RANKS = ("cost", "simulated")  # plan_case(rank=): how a named strategy's own plans are ordered
MAX_FUSED_STAGES = 4
MAX_WGMMA_FUSED_STAGES = 6
MAX_GEMM_STAGES = 6
SCAN_LIMIT = 48  # candidates per family checked with can_build before giving up on buildability
FAMILY_GIVE_UP = 6  # consecutive non-buildable candidates after which another family is tried
MODE_NAMES = {MODE_NONE: "none", MODE_SEQUENTIAL: "sequential", MODE_MUL: "mul_exchange"}


class Infeasible(Exception):  # noqa: N818 - the contract's name
    """No plan of the asked strategy exists for this case on this machine; str() is the reason."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class ScoredPlan:
    plan: Plan
    predicted: Prediction
    simulated_ns: float | None = None  # set where the plan was ranked by simulation ("best")


@dataclass(frozen=True)
class SearchStats:
    candidates: int
    after_rule: list[tuple[str, int]]
    seconds: float
    evaluated: int = 0  # concrete fused plans scored (after executable, x n_split x gated modes)
    by_strategy: dict[str, int] = field(default_factory=dict)  # executable candidates per strategy


@dataclass
class PlanResult:
    case_id: str
    plans: dict[str, list[ScoredPlan]]
    infeasible: dict[str, str]
    search: SearchStats


# ---- capability ---------------------------------------------------------------------------------
def check_buildable(plan: Plan) -> tuple[bool, str]:
    """fusesim.capability.can_build, imported lazily (no code generator -> not buildable)."""
    try:
        from fusesim.capability import can_build
    except ImportError:
        return False, "no code generator"
    ok, reason = can_build(plan)
    return bool(ok), str(reason)


@dataclass(frozen=True)
class Limits:
    """What the search may pick. `generator=True`: only what today's code generator builds is
    buildable (and unlaunchable clusters are skipped early). `generator=False` is the what-if mode
    for hypothetical hardware: every plan counts as buildable for selection (the caller rechecks)."""

    generator: bool = True

    def check(self, plan: Plan) -> tuple[bool, str]:
        return check_buildable(plan) if self.generator else (True, "")

    def max_cluster(self) -> int:
        return _generator_max_cluster() if self.generator else 1 << 30


TODAY = Limits()


def _generator_max_cluster() -> int:
    try:
        from fusesim.capability import MAX_CLUSTER_SIZE
    except ImportError:
        return 1 << 30
    return MAX_CLUSTER_SIZE


def _cluster_sizes(rows: dict[str, np.ndarray], idx: np.ndarray) -> np.ndarray:
    return rows["cm"][idx] * rows["cn"][idx] * rows["ck"][idx]


def _families(hw: Hardware) -> list[str]:
    return sorted(hw.tensor_tflops, key=lambda f: -hw.tensor_tflops[f].bf16)


# ---- fused candidates ----------------------------------------------------------------------------
def _divisors(q: int) -> list[int]:
    small = [d for d in range(1, int(q**0.5) + 1) if q % d == 0]
    return sorted(set(small + [q // d for d in small]))


def fused_candidates(chain: Chain, hw: Hardware, mask: np.ndarray, clusters: np.ndarray,
                     tiles: dict[str, tuple[int, ...]], family: str = "mma_sync") -> dict[str, np.ndarray]:
    """Expand the executable (cluster, tiles) pairs of one instruction family into concrete rows
    (numpy columns). wgmma (template fused_wgmma): one N chunk per cluster (n_passes 1), threads
    from block_m, stages 2..MAX_WGMMA_FUSED_STAGES as far as its SMEM layout allows."""
    ic, im, in_, ik, il = np.nonzero(mask)
    t = {d: np.asarray(tiles[d], dtype=np.int64) for d in "MNKL"}
    base = {"cm": clusters[ic, 0], "cn": clusters[ic, 1], "ck": clusters[ic, 2], "cl": clusters[ic, 3],
            "bm": t["M"][im], "bn": t["N"][in_], "bk": t["K"][ik], "bl": t["L"][il]}
    q = chain.n // (base["cn"] * base["bn"])
    parts = []
    for s in sorted(set(d for qq in np.unique(q) for d in _divisors(int(qq)))):
        sel = q % s == 0
        if not sel.any():
            continue
        rows = {k: v[sel] for k, v in base.items()}
        rows["n_split"] = np.full(int(sel.sum()), s, dtype=np.int64)
        rows["n_passes"] = q[sel] // s
        parts.append(rows)
    rows = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {k: v[:0] for k, v in base.items()}
    if chain.gated:
        seq = {k: v.copy() for k, v in rows.items()}
        seq["mode"] = np.full(len(seq["cm"]), MODE_SEQUENTIAL, dtype=np.int64)
        two = rows["ck"] == 2
        mul = {k: v[two] for k, v in rows.items()}
        mul["mode"] = np.full(int(two.sum()), MODE_MUL, dtype=np.int64)
        rows = {k: np.concatenate([seq[k], mul[k]]) for k in seq}
    else:
        rows["mode"] = np.zeros(len(rows["cm"]), dtype=np.int64)
    if "n_split" not in rows:
        rows["n_split"] = rows["n_passes"] = np.zeros(0, dtype=np.int64)
    rows["grid_m"] = -(-chain.m // (rows["cm"] * rows["bm"]))
    if family == "wgmma":
        keep = (rows["n_passes"] == 1) & ~((rows["mode"] == MODE_SEQUENTIAL) & (rows["bn"] > 128))
        rows = {k: v[keep] for k, v in rows.items()}
    shuffle = rows["cl"] // rows["ck"]
    seq_flag = rows["mode"] == MODE_SEQUENTIAL
    if family == "wgmma":
        rows["threads"] = wgmma_threads(rows["bm"])
        reduce = np.maximum(rows["cn"] * rows["ck"] // rows["cl"], 1)

        def smem(st: int) -> np.ndarray:
            return fused_wgmma_smem_bytes(rows["bm"], rows["bn"], rows["bl"], rows["ck"], shuffle, reduce, st,
                                          seq_flag)
        max_stages = MAX_WGMMA_FUSED_STAGES
    else:
        rows["threads"] = threads_for(chain, hw, rows["bm"], rows["bn"], rows["bl"], seq_flag)

        def smem(st: int) -> np.ndarray:
            return fused_smem_bytes(rows["bm"], rows["bn"], rows["bk"], rows["bl"], rows["ck"], shuffle, st, seq_flag)
        max_stages = MAX_FUSED_STAGES
    # stages is a search dimension: a deeper ring hides more latency but costs occupancy
    per_stage = []
    for st in range(2, max_stages + 1):
        fits = (smem(st) <= hw.smem_per_block_bytes) & (rows["threads"] > 0)
        sub = {k: v[fits] for k, v in rows.items()}
        sub["stages"] = np.full(int(fits.sum()), st, dtype=np.int64)
        per_stage.append(sub)
    return {k: np.concatenate([p[k] for p in per_stage]) for k in per_stage[0]}


def _row(rows: dict[str, np.ndarray], i: int) -> dict[str, int]:
    return {k: int(v[i]) for k, v in rows.items()}


def make_fused_plan(chain: Chain, hw: Hardware, r: dict[str, int], family: str) -> Plan:
    """A concrete fused Plan from one candidate row."""
    cluster = ClusterShape(r["cm"], r["cn"], r["ck"], r["cl"])
    tiles = Tiles(r["bm"], r["bn"], r["bk"], r["bl"])
    gated_mode = MODE_NAMES[r["mode"]]
    seq = gated_mode == "sequential"
    steps = dsm_steps(cluster, tiles, r["n_passes"], r["n_split"], gated_mode, chain.dtype_bytes)
    if family == "wgmma":  # fused_wgmma: E in registers, the register file split evenly over the threads
        smem = fused_wgmma_smem_bytes(tiles.block_m, tiles.block_n, tiles.block_l, cluster.k, cluster.shuffle,
                                      cluster.reduce, r["stages"], seq)
        regs = min(hw.max_registers_per_thread, hw.registers_per_sm // r["threads"] // 8 * 8)
    else:
        smem = fused_smem_bytes(tiles.block_m, tiles.block_n, tiles.block_k, tiles.block_l, cluster.k,
                                cluster.shuffle, r["stages"], seq)
        regs = fused_regs_per_thread(tiles.block_m, tiles.block_n, tiles.block_l, r["threads"], seq)
    kernel = Kernel(name=f"{chain.case_id}_fused", op="fused", grid_blocks=r["grid_m"] * r["n_split"] * cluster.size,
                    cluster_size=cluster.size, threads=r["threads"], smem_bytes=int(smem), tiles=tiles,
                    stages=r["stages"], regs_per_thread=int(regs))
    strategy = "dsm" if cluster.size > 1 else "smem"
    sched = Schedule(order="MNLK", spatial="MN" if r["n_split"] > 1 else "M")
    has_dsm = any(s.level == "dsm" for s in steps)
    plan = Plan(case_id=chain.case_id, chain=chain, strategy=strategy, schedule=sched, cluster=cluster, tiles=tiles,
                grid_m=r["grid_m"], n_split=r["n_split"], n_passes=r["n_passes"], stages=r["stages"],
                threads=r["threads"], instruction=family, gated_mode=gated_mode,
                placement=placement_for(strategy, has_dsm), dsm_comm=steps, kernels=(kernel,))
    return _with_generator_smem(plan)


def _with_generator_smem(plan: Plan) -> Plan:
    """The search prunes with footprint's separate-regions bound; a concrete plan carries the SMEM
    the generator really allocates (it aliases E, the exchange area and the stages when E stays in
    registers; its stages also hold GEMM1's block_k x sub_l D tiles, which can exceed the bound), so
    occupancy in the simulator matches the kernel that runs."""
    try:
        from fusesim.capability import fused_smem_bytes as generator_smem_bytes
    except ImportError:
        return plan
    exact = generator_smem_bytes(plan)
    k = plan.kernels[0]
    if exact == k.smem_bytes:
        return plan
    return plan.with_(kernels=(replace(k, smem_bytes=int(exact)),))


# ---- unfused -------------------------------------------------------------------------------------
GemmOption = tuple[int, int, int, int, int, int]  # block_m, block_n, block_k, stages, threads, split


def _gemm_options(rows: int, cols: int, red: int, gated: bool, hw: Hardware,
                  family: str = "mma_sync") -> list[GemmOption]:
    """(block_m, block_n, block_k, stages, threads, split) tile choices for one GEMM of a family."""
    if family == "wgmma":
        return _wgmma_options(rows, cols, red, gated, hw)
    m16 = -(-rows // 16) * 16
    out = []
    for bm in (16, 32, 64, 128, 256):
        if bm > max(m16, 16) or (bm < 64 and m16 >= 4096):
            continue
        for bn in range(16, 257, 16):  # every 16-multiple dividing the output width (odd N/L too)
            if cols % bn:
                continue
            for bk in (32, 64, 16, 48):
                if red % bk:
                    continue
                fits = [t for t in ((256, 128) if bm * bn >= 64 * 128 else THREAD_CHOICES)
                        if t <= hw.max_threads_per_block and regs_fit(gemm_regs_per_thread(bm, bn, t, gated), t, hw)]
                laid = [t for t in fits if warp_layout_ok(bm, bn, t)]
                threads = (laid or fits or [0])[0]
                if not threads:
                    continue
                stages = 0
                for st in range(2, MAX_GEMM_STAGES + 1):
                    if gemm_smem_bytes(bm, bn, bk, st, gated) <= hw.smem_per_block_bytes:
                        stages = st
                if stages:
                    out.append((bm, bn, bk, stages, threads, 1))
    # a warp grid of >= 16x16 warp tiles must cover the tile (capability.warp_grid); tiles without
    # one (e.g. 16x32 with 4 warps) never build, so they are offered only when no tile has one (the
    # unfused baseline always exists, marked not buildable)
    laid_out = [o for o in out if warp_layout_ok(o[0], o[1], o[4])]
    return laid_out or out


def _wgmma_options(rows: int, cols: int, red: int, gated: bool, hw: Hardware) -> list[GemmOption]:
    """The gemm_wgmma template's tiles (fusesim.capability.wgmma_gemm_problem): block_k 64, the
    deepest ring that fits SMEM, split-K chosen to fill about one wave."""
    if red % 64:
        return []
    m64 = -(-rows // 64) * 64
    # 64-row tiles re-fetch every weight tile once per M tile; when the weights are a sizeable part of
    # L2 those fetches go back to HBM (H200, S1: gemm1 64x64 unsplit 69.5 us vs 128x64 split 2 at
    # the same 96 blocks 59.1 us, results/h200/wgmma_trial_fill.json): streaming GEMMs use 128 rows
    streaming = rows > 64 and red * cols * (2 if gated else 1) * 2 > hw.l2_bytes // 4
    out = []
    for bm in (64, 128):
        if bm > m64 or (streaming and bm == 64):
            continue
        threads = wgmma_threads(bm)
        for bn in (64, 128, 256):
            if cols % bn or (gated and bn > 128) or threads > hw.max_threads_per_block:
                continue
            if not regs_fit(wgmma_gemm_regs_per_thread(bn, gated), threads, hw):
                continue
            stages = max((st for st in range(2, MAX_GEMM_STAGES + 1)
                          if wgmma_gemm_smem_bytes(bm, bn, st, gated) <= hw.smem_per_block_bytes), default=0)
            if stages:
                split = wgmma_split(-(-rows // bm) * (cols // bn), red, hw.sm_count)
                out.append((bm, bn, 64, stages, threads, split))
    return _prefer_unsplit(out, rows, cols, hw.sm_count)


def _prefer_unsplit(opts: list[GemmOption], rows: int, cols: int, sms: int) -> list[GemmOption]:
    """Drop split-K options of a block_m whose smaller block_n already fills ~a wave unsplit: the
    split's fp32 workspace round trip (a 4-byte red.add per output element and part, then 8 B to read
    it back and re-zero it) is pure overhead there (H200: G8 gemm0 128x128 split 2 ran 5-6 us slower
    than 128x64 unsplit, results/h200/wgmma_trial_pow2split.json); cost.gemm_kernel_cost does not
    model the split."""
    filled = {o[0] for o in opts if o[5] == 1 and -(-rows // o[0]) * (cols // o[1]) >= 0.9 * sms}
    return [o for o in opts if o[5] == 1 or o[0] not in filled]


def _gemm_kernel(chain: Chain, name: str, op: str, opt: tuple, gated: bool, tiles: int, family: str) -> Kernel:
    bm, bn, bk, stages, threads = opt[:5]
    split = opt[5] if len(opt) > 5 else 1
    smem = (wgmma_gemm_smem_bytes(bm, bn, stages, gated) if family == "wgmma"
            else gemm_smem_bytes(bm, bn, bk, stages, gated))
    regs = (wgmma_gemm_regs_per_thread(bn, gated) if family == "wgmma"
            else gemm_regs_per_thread(bm, bn, threads, gated))
    return Kernel(name=name, op=op, grid_blocks=tiles * split, cluster_size=1, threads=threads,
                  smem_bytes=int(smem), tiles=Tiles(bm, bn, bk, 0), stages=stages, regs_per_thread=int(regs))


def make_unfused_plan(chain: Chain, o1: tuple, o2: tuple, family: str) -> Plan:
    """Options are (block_m, block_n, block_k, stages, threads[, split]); split-K multiplies grid_blocks."""
    k1 = _gemm_kernel(chain, f"{chain.case_id}_gemm0", "gemm0", o1, chain.gated,
                      -(-chain.m // o1[0]) * (chain.n // o1[1]), family)
    k2 = _gemm_kernel(chain, f"{chain.case_id}_gemm1", "gemm1", o2, False,
                      -(-chain.m // o2[0]) * (chain.l // o2[1]), family)
    return Plan(case_id=chain.case_id, chain=chain, strategy="unfused", schedule=Schedule(order="MNKL", spatial="MN"),
                cluster=ClusterShape(), tiles=k1.tiles, grid_m=0, n_split=1, n_passes=1, stages=k1.stages,
                threads=k1.threads, instruction=family, gated_mode="sequential" if chain.gated else "none",
                placement=placement_for("unfused", False), dsm_comm=(), kernels=(k1, k2))


def search_unfused(chain: Chain, hw: Hardware, top_k: int, require_buildable: bool,
                   limits: Limits = TODAY) -> tuple[list[ScoredPlan], str]:
    from fusesim.planner.cost import gemm_kernel_cost

    out: list[ScoredPlan] = []
    fallback: list[ScoredPlan] = []
    for family in _families(hw):
        opts1 = _gemm_options(chain.m, chain.n, chain.k, chain.gated, hw, family)
        opts2 = _gemm_options(chain.m, chain.l, chain.n, False, hw, family)
        if not opts1 or not opts2:
            continue
        s1 = sorted(opts1, key=lambda o: gemm_kernel_cost(chain, hw, family, "gemm0", o[0], o[1], o[2], o[3],
                                                          threads=o[4])["time_ns"])
        s2 = sorted(opts2, key=lambda o: gemm_kernel_cost(chain, hw, family, "gemm1", o[0], o[1], o[2], o[3],
                                                          threads=o[4])["time_ns"])
        pairs = [(a, b) for i, a in enumerate(s1[:4]) for j, b in enumerate(s2[:4])]
        pairs.sort(key=lambda p: s1.index(p[0]) + s2.index(p[1]))
        for o1, o2 in pairs:
            plan = make_unfused_plan(chain, o1, o2, family)
            ok, why = limits.check(plan)
            sp = ScoredPlan(plan.with_(buildable=ok, notes=() if ok else (f"not buildable: {why}",)), predict(plan, hw))
            (out if ok else fallback).append(sp)
    if not out and not fallback:
        return [], "no GEMM tile fits this machine's SMEM/registers with N, K, L divisible by 16"
    chosen = out if (out or require_buildable) else fallback
    chosen = sorted(chosen, key=_rank_key)[:top_k]
    if not chosen:
        return [], "no buildable unfused plan: " + (fallback[0].plan.notes[0] if fallback else "none")
    return chosen, ""


def _rank_key(sp: ScoredPlan) -> tuple[float, float]:
    return (round(sp.predicted.time_ns, 3), sp.predicted.bytes["l2"] + sp.predicted.bytes["hbm"])


# ---- fused search --------------------------------------------------------------------------------
def _fits(plan: Plan, hw: Hardware) -> bool:
    """Every kernel's block, as the generator lays it out and launches it, fits an SM: SMEM (footprint's
    bound, used to prune, can be lower: GEMM1's D tiles in the stages, two exchange slots per peer for
    sequential gating), threads and registers (the generator's wgmma enumerations fix their threads)."""
    return all(kernel_fits_sm(hw, plan, k) for k in plan.kernels)


@dataclass(frozen=True)
class FamilyRows:
    """One instruction family's fused candidates: rows (numpy columns), the cost model's time and
    L2 + HBM traffic per row."""

    rows: dict[str, np.ndarray]
    time_ns: np.ndarray
    traffic: np.ndarray


def _pick(chain: Chain, hw: Hardware, cands: dict[str, FamilyRows], strategy: str, top_k: int,
          require_buildable: bool, limits: Limits = TODAY) -> tuple[list[ScoredPlan], str]:
    """Best plans of one fused strategy: per family the top_k buildable ones by its own time (ties:
    less L2+HBM traffic), then all of them ranked together (see module doc)."""
    accepted: dict[tuple[str, int], ScoredPlan] = {}
    fallback: dict[tuple[str, int], ScoredPlan] = {}
    reasons: list[str] = []
    last = list(cands)[-1]
    for family, fr in cands.items():
        rows, times, traffic = fr.rows, fr.time_ns, fr.traffic
        cs = _cluster_sizes(rows, np.arange(len(times)))
        idx = np.nonzero(cs == 1 if strategy == "smem" else cs > 1)[0]
        order = idx[np.lexsort((traffic[idx], np.round(times[idx], 3)))]
        n_fallback = 0
        for i in order[:top_k]:  # the unconstrained best, reported when nothing builds
            key = (family, int(i))
            if key not in fallback and n_fallback < top_k and not require_buildable:
                plan = make_fused_plan(chain, hw, _row(rows, key[1]), family)
                if not _fits(plan, hw):
                    continue
                ok, why = limits.check(plan)
                if not ok:
                    n_fallback += 1
                    fallback[key] = ScoredPlan(plan.with_(buildable=False, notes=(f"not buildable: {why}",)),
                                               predict(plan, hw))
        # clusters the generator cannot launch are skipped before the per-plan check
        order = order[_cluster_sizes(rows, order) <= limits.max_cluster()]
        misses = n_ok = 0
        for i in order[: max(SCAN_LIMIT, top_k * 4)]:
            key = (family, int(i))
            if key in accepted:
                continue
            plan = make_fused_plan(chain, hw, _row(rows, key[1]), family)
            if not _fits(plan, hw):
                continue
            ok, why = limits.check(plan)
            if ok:
                misses = 0
                n_ok += 1
                accepted[key] = ScoredPlan(plan.with_(buildable=True), predict(plan, hw))
                if n_ok >= top_k:
                    break
            else:
                misses += 1
                if misses >= FAMILY_GIVE_UP and n_fallback >= top_k and family != last:
                    break  # this family does not build here: the next one may
                if not reasons:
                    reasons.append(f"{family}: {why}")
                if key not in fallback and n_fallback < top_k:
                    n_fallback += 1
                    fallback[key] = ScoredPlan(plan.with_(buildable=False, notes=(f"not buildable: {why}",)),
                                               predict(plan, hw))
    chosen = list(accepted.values())
    if not chosen and not require_buildable:
        chosen = list(fallback.values())
    if not chosen:
        return [], "no buildable plan (" + "; ".join(reasons) + ")"
    chosen.sort(key=_rank_key)
    best_any = min(fallback.values(), key=lambda sp: sp.predicted.time_ns, default=None)
    if best_any is not None and chosen[0].plan.buildable and best_any.predicted.time_ns < chosen[0].predicted.time_ns:
        note = (f"faster plan not buildable: {best_any.plan.summary()} {best_any.plan.instruction} "
                f"predicted {best_any.predicted.time_us:.2f} us ({best_any.plan.notes[0]})")
        chosen[0] = ScoredPlan(chosen[0].plan.with_(notes=chosen[0].plan.notes + (note,)), chosen[0].predicted)
    return chosen[:top_k], ""


def _infeasible_fused(strategy: str, chain: Chain, hw: Hardware, after: list[tuple[str, int]]) -> str:
    if strategy == "dsm" and hw.max_cluster_size < 2:
        return f"{hw.name} has no thread-block clusters (max_cluster_size {hw.max_cluster_size}): no DSM"
    if strategy == "smem":
        # the smallest single-block footprint: E accumulator block_m x L, one act(C) tile, 2 stages
        smem = fused_smem_bytes(16, 16, 16, chain.l, 1, 1, 2, chain.gated)
        if smem > hw.smem_per_block_bytes:
            return (f"intermediate does not fit one block: even 16-row tiles need {smem} B of SMEM "
                    f"(fp32 E accumulator 16 x L={chain.l} + act(C) tile + 2 pipeline stages) "
                    f"> smem_per_block_bytes {hw.smem_per_block_bytes}")
    survivors = ", ".join(f"{n}: {c}" for n, c in after)
    if strategy == "dsm" and after and after[-1][1] > 0:
        return ("no cluster of 2 or more blocks tiles this problem exactly (N, K and L are too small to split "
                f"across blocks); only single-block plans are executable ({survivors})")
    return f"no executable {strategy} candidate survives ({survivors})"


def _family_rows(chain: Chain, hw: Hardware, family: str, surv: Any, scheds: tuple) -> FamilyRows:
    """One family's executable candidates, expanded and scored by the cost model."""
    rows = fused_candidates(chain, hw, executable_mask(surv, family), surv.clusters, surv.tiles or {}, family)
    if not any(x.spatial == "MN" for x in scheds):
        keep = rows["n_split"] == 1
        rows = {k: v[keep] for k, v in rows.items()}
    r = fused_cost(chain, hw, family, rows["cm"], rows["cn"], rows["ck"], rows["cl"], rows["bm"], rows["bn"],
                   rows["bk"], rows["bl"], rows["grid_m"], rows["n_split"], rows["n_passes"], rows["stages"],
                   rows["mode"], threads=rows["threads"])
    vol = r["volumes"]
    traffic = np.asarray(vol["l2_read"] + vol["l2_write"] + vol["hbm_read"] + vol["hbm_write"], dtype=float)
    return FamilyRows(rows, np.asarray(r["time_ns"], dtype=float) + np.zeros(len(rows["cm"])),
                      traffic + np.zeros(len(rows["cm"])))


def run_search(chain: Chain, hw: Hardware, strategies: tuple[str, ...], top_k: int,
               require_buildable: bool, limits: Limits = TODAY) -> PlanResult:
    t0 = time.perf_counter()
    bad = [f"{d} = {v}" for d, v in (("N", chain.n), ("K", chain.k), ("L", chain.l)) if v % 16]
    if bad:
        why = (f"{', '.join(bad)} not a multiple of 16: kernels tile N, K and L exactly in 16-wide MMA steps "
               "(only M is predicated)")
        stats = SearchStats(candidates=Space(chain, hw).count(), after_rule=[], seconds=time.perf_counter() - t0)
        return PlanResult(chain.case_id, {}, {s: why for s in strategies}, stats)
    space = Space(chain, hw)
    raw, after, surv = apply_rules(space)
    exec_count, mask, scheds = executable(surv)
    after = after + [("6 executable (plan semantics)", exec_count)]
    plans: dict[str, list[ScoredPlan]] = {}
    infeasible: dict[str, str] = {}
    by_strategy: dict[str, int] = {}
    evaluated = 0
    fused_wanted = [s for s in strategies if s in FUSED_STRATEGIES]
    if fused_wanted:
        cands = {f: _family_rows(chain, hw, f, surv, scheds) for f in _families(hw)}
        evaluated = sum(len(fr.time_ns) for fr in cands.values())
        for strategy in fused_wanted:
            by_strategy[strategy] = sum(
                int(((_cluster_sizes(fr.rows, np.arange(len(fr.time_ns))) == 1) == (strategy == "smem")).sum())
                for fr in cands.values())
            if not by_strategy[strategy]:
                infeasible[strategy] = _infeasible_fused(strategy, chain, hw, after)
                continue
            chosen, why = _pick(chain, hw, cands, strategy, top_k, require_buildable, limits)
            if chosen:
                plans[strategy] = chosen
            else:
                infeasible[strategy] = why
    if "unfused" in strategies:
        chosen, why = search_unfused(chain, hw, top_k, require_buildable, limits)
        if chosen:
            plans["unfused"] = chosen
        else:
            infeasible["unfused"] = why
    stats = SearchStats(candidates=raw, after_rule=after, seconds=time.perf_counter() - t0, evaluated=evaluated,
                        by_strategy=by_strategy)
    return PlanResult(chain.case_id, plans, infeasible, stats)


# ---- public API ----------------------------------------------------------------------------------
_CACHE: dict[tuple, PlanResult] = {}
_CACHE_MAX = 512


def plan_case(chain: Chain, hw: Hardware, strategies: tuple[str, ...] | list[str] = ALL_STRATEGIES, top_k: int = 1,
              require_buildable: bool = False, rank: str = "cost") -> PlanResult:
    """Plans for one case on one machine: per strategy the top_k best (best first), or a reason.

    "best" in `strategies` adds plans["best"]: the fastest plans over unfused, smem and dsm, ranked by
    simulating each strategy's RERANK_PER_STRATEGY best plans by the cost model (`simulated_ns`).
    `rank`: how each named strategy's own plans are ordered -- "cost" by the planner's cost model
    (the paper's Algorithm 2), "simulated" by simulated time over the same pool "best" simulates
    (that strategy's plans of it), so that a strategy is compared with the others at its best.
    Results are memoized per (chain, hw.fingerprint, arguments, the generator switches that shape the
    simulated kernels): sweeps call this thousands of times.
    """
    from fusesim.errors import InputError

    strategies = tuple(strategies)
    for s in strategies:
        if s not in ALL_STRATEGIES + ("best",):
            raise InputError(None, "strategy", f"unknown strategy {s!r} (one of unfused, smem, dsm, best)",
                             case=chain.case_id)
    if top_k < 1:
        raise InputError(None, "top_k", f"must be at least 1 (got {top_k})", case=chain.case_id)
    if rank not in RANKS:
        raise InputError(None, "rank", f"unknown rank {rank!r} (one of {', '.join(RANKS)})", case=chain.case_id)
    key = (chain, hw.fingerprint, strategies, top_k, require_buildable, rank, tuple(sorted(codegen_switches().items())))
    hit = _CACHE.get(key)
    if hit is None:
        base = tuple(s for s in ALL_STRATEGIES if s in strategies or "best" in strategies)
        simulated = "best" in strategies or rank == "simulated"
        depth = max(top_k, RERANK_SEARCH_DEPTH) if simulated else top_k
        hit = run_search(chain, hw, base, depth, require_buildable)
        if simulated:
            pool = [sp for s in base for sp in _rerank_candidates(hit.plans.get(s, []))]
            pool += _generator_candidates(chain, hw, set(base), {sp.plan.to_json() for sp in pool})
            merged = _by_simulation(pool, hw)
            if rank == "simulated":
                for s in base:
                    own = [sp for sp in merged if sp.plan.strategy == s]
                    if own:
                        hit.plans[s] = own
            if "best" in strategies:
                if merged:
                    hit.plans["best"] = merged[:top_k]
                else:
                    hit.infeasible["best"] = "; ".join(f"{s}: {r}" for s, r in sorted(hit.infeasible.items()))
            for s in base:
                if s not in strategies:
                    hit.plans.pop(s, None)
                    hit.infeasible.pop(s, None)
                elif s in hit.plans:
                    hit.plans[s] = hit.plans[s][:top_k]
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = hit
    return PlanResult(hit.case_id, {k: list(v) for k, v in hit.plans.items()}, dict(hit.infeasible), hit.search)


RERANK_PER_STRATEGY = 8  # per strategy and instruction family, the cost model's top plans that "best" simulates
GENERATOR_FUSED_WGMMA = 40  # fused_wgmma plans of the generator's own enumeration that "best" simulates too
# how deep each strategy is searched for "best": deep enough that every instruction family's top plans
# are there even when the cost model ranks one family's plans all ahead of the other's (the unfused
# search offers 16 tile pairs per family)
RERANK_SEARCH_DEPTH = 20


def _rerank_candidates(ranked: list[ScoredPlan]) -> list[ScoredPlan]:
    """The cost model's top RERANK_PER_STRATEGY plans of each instruction family: the cost model
    compares tiles of one family well but not mma.sync against wgmma (on the H200 it ranked every
    mma.sync unfused plan of G8 ahead of the gemm_wgmma ones, which ran 3.9x faster:
    results/h200/final_paper_gemm_chains.json), so the simulator decides between families."""
    out: list[ScoredPlan] = []
    for family in dict.fromkeys(sp.plan.instruction for sp in ranked):
        out += [sp for sp in ranked if sp.plan.instruction == family][:RERANK_PER_STRATEGY]
    return out


def _generator_candidates(chain: Chain, hw: Hardware, strategies: set[str], seen: set[str]) -> list[ScoredPlan]:
    """Plans "best" simulates besides the cost model's: the generator's own enumerations of its TMA +
    wgmma templates (codegen.handplans: every gemm_wgmma tile pair with split-K filling a wave, and the
    GENERATOR_FUSED_WGMMA fused_wgmma plans first by a rough latency score), which the cost model
    ranks poorly. On the H200 (results/h200/sim_search_paper_*.json, scripts/sim_search.py) the
    simulator's picks from such a pool (with the planner's top 8 per strategy) beat every plan measured
    before on C6 and C7 (how often its pick is within 3% of the fastest: benchmarks/validation.md).
    Only on a machine with wgmma, and only plans that fit it."""
    if "wgmma" not in hw.tensor_tflops:
        return []
    from fusesim.codegen.handplans import fused_wgmma_candidates, wgmma_candidates

    plans = wgmma_candidates(chain, hw.sm_count) if "unfused" in strategies else []
    plans += [p for p in fused_wgmma_candidates(chain, per_case=GENERATOR_FUSED_WGMMA, sms=hw.sm_count)
              if ("smem" if p.cluster.size == 1 else "dsm") in strategies]
    out = []
    for p in plans:
        key = p.to_json()
        if key in seen or not p.buildable or not _fits(p, hw) or max(k.cluster_size for k in p.kernels) > hw.max_cluster_size:
            continue
        seen.add(key)
        out.append(ScoredPlan(p, predict(p, hw)))
    return out


def _by_simulation(cands: list[ScoredPlan], hw: Hardware) -> list[ScoredPlan]:
    """Rank candidates (buildable first) by simulated time (the cost model's top plans of each strategy
    and instruction family, _rerank_candidates): the cost model prunes, the simulator decides. On the
    H200 (results/h200/final_paper_*.json, 2026-12-02 run) the cost model's pick among the planner's
    per-strategy plans was within 3% of the measured best for 7 of 26 paper cases, the simulator's
    for 25 of 26; the paper profiles its top 11 on the GPU instead."""
    from fusesim.sim import simulate

    timed = [replace(sp, simulated_ns=simulate(sp.plan, hw).time_ns) for sp in cands]
    return sorted(timed, key=lambda sp: (not sp.plan.buildable, *simulated_rank(sp.simulated_ns or 0.0, sp.plan),
                                         *_rank_key(sp)))


def simulated_rank(simulated_ns: float, plan: Plan) -> tuple[float, int]:
    """How plans are ordered by their simulated time. On an exact tie the deeper ring first: the
    simulator keeps a fixed number of loads in flight for the mma.sync templates
    (`cp_async_groups_in_flight`) and hides a TMA ring's latency once it covers it, so it cannot
    credit stages beyond those, which the GPU uses to hide load-latency jitter; with the same
    simulated time the occupancy is the same, so the extra stages cannot lose."""
    return (round(simulated_ns, 3), -plan.stages)


def best_plan(chain: Chain, hw: Hardware, strategy: str = "best", require_buildable: bool = False) -> Plan:
    """The single best plan of a strategy ("best": fastest of unfused, smem, dsm); raises Infeasible."""
    res = plan_case(chain, hw, strategies=(strategy,), top_k=1, require_buildable=require_buildable)
    if res.plans.get(strategy):
        return res.plans[strategy][0].plan
    raise Infeasible(res.infeasible.get(strategy, f"no {strategy} plan"))


def schedule_count() -> int:
    return len(loop_schedules())


__all__ = ["Infeasible", "PlanResult", "ScoredPlan", "SearchStats", "best_plan", "plan_case", "check_buildable",
           "make_fused_plan", "make_unfused_plan", "fused_candidates"]
