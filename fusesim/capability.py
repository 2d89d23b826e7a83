"""What the code generator can build: the one check the planner uses to set `Plan.buildable`.

Pure Python (no torch, no nvcc), so planning runs anywhere. It is a feasibility check of the
plan *as given*, never a second tiling decision: the generator instantiates exactly the plan's
tiles, cluster shape, stages and threads, and this module says whether that instantiation exists.

What the generated kernels are (fusesim/codegen):
* instruction family `mma_sync` (mma.sync m16n8k16 bf16 -> fp32, ldmatrix, cp.async multistage
  pipeline): every strategy.
* instruction family `wgmma` (TMA loads into a 128-byte-swizzled mbarrier ring, wgmma.mma_async
  m64nNk16, one producer warpgroup + block_m / 64 consumer warpgroups): template gemm_wgmma for
  `unfused` plans (see `wgmma_gemm_problem`) and template fused_wgmma for `smem` / `dsm` plans with
  one N chunk (see `fused_wgmma_problem`; dsm_comm pushes with st.async and bulk DSM copies that
  complete on the receiver's mbarrier, layout in `fused_wgmma_layout`). Split-K is expressed by a kernel's grid_blocks = split x its
  output tiles (any split 1..16; part s reduces k tiles [s*T/split, (s+1)*T/split) of the T =
  depth / 64; fp32 workspace + per-tile ticket; the last block runs the epilogue), or, when the
  kernel's cluster_size equals its split (non-gated, split <= 8, `dsm_split_problem`), through DSM:
  the split parts of a tile are one cluster that parks fp32 partials in the drained ring and sums
  them with dsm_reduce_scatter (no workspace, no ticket).
* `unfused`: two kernels, gemm0 (activation or gating epilogue, bf16 C' to global) and gemm1.
* `smem` / `dsm`: one fused kernel. The fp32 E accumulator of a block (block_m x block_l) stays in
  registers through GEMM1 when `e_in_regs(plan)` (one N chunk, <= 128 floats per thread) and then
  shares SMEM with the pipeline stages and the exchange area; otherwise it lives in SMEM and GEMM1
  walks it in sub-tiles of `gemm1_sub_l(plan)` columns. C' slices live in SMEM (two buffers when
  dsm_shuffle runs); dsm_all_exchange pushes fp32 partials into a receive area.
* M is predicated (any M); N, K, L must divide exactly as the plan's semantics state.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fusesim.plan import Kernel, Plan
from fusesim.workload import Chain

if TYPE_CHECKING:
    from fusesim.hardware import Hardware

SMEM_LIMIT_BYTES = 232448 - 1024  # H100/H200 opt-in per-block maximum, less static SMEM and margin
# an H100 SXM's or H200's SM: 228 KiB of shared memory, 1 KiB of it reserved per resident block; 132 SMs
SM_SMEM_BYTES = 233472
SM_BLOCK_RESERVED_BYTES = 1024
SM_COUNT = 132
SUPPORTED_THREADS = (128, 256)
SUPPORTED_ACTIVATIONS = ("relu", "gelu", "silu", "none")
PAD_BF16 = 8  # elements of padding per SMEM row (16 bytes): conflict-free ldmatrix
PAD_F32 = 4  # floats of padding per fp32 SMEM row
MAX_STAGES = 8
MAX_CLUSTER_SIZE = 16  # the launch wrapper sets the non-portable attribute; Hopper stops at 16
INSTRUCTIONS = ("mma_sync", "wgmma")
# gemm_wgmma template (unfused GEMM kernels)
WGMMA_BLOCK_M = (64, 128)  # one consumer warpgroup per 64 rows
WGMMA_BLOCK_N = (64, 128, 256)  # wgmma n; gated kernels (two accumulators) stop at 128
WGMMA_BLOCK_K = 64  # one 128-byte swizzle row of bf16
WGMMA_MAX_SPLIT = 16  # split-K parts: k tiles split as evenly as possible (part s: [s*T/split, (s+1)*T/split))
WGMMA_SMEM_SLACK = 1024  # the ring starts on a 1024-byte boundary of the dynamic SMEM


def wgmma_threads(block_m: int) -> int:
    """Producer warpgroup + block_m / 64 consumer warpgroups."""
    return 128 * (1 + block_m // 64)


def wgmma_gemm_stage_bytes(block_m: int, block_n: int, gated: bool) -> int:
    """One gemm_wgmma ring stage: A block_m x 64 and B 64 x block_n (twice gated), bf16."""
    return (block_m + block_n * (2 if gated else 1)) * WGMMA_BLOCK_K * 2


def wgmma_gemm_smem_bytes(block_m: int, block_n: int, stages: int, gated: bool) -> int:
    """gemm_wgmma SMEM: stages x `wgmma_gemm_stage_bytes`, a full and an empty mbarrier per stage,
    and the 1024-byte alignment slack."""
    return stages * wgmma_gemm_stage_bytes(block_m, block_n, gated) + 16 * stages + WGMMA_SMEM_SLACK


# How gemm_wgmma.cu.j2 writes a GEMM's output (the generator reads these when it renders, the simulator
# models the same kernel): a GEMM without split-K stages its bf16 tile in SMEM and stores 16-byte row
# pieces (False: every thread stores its accumulator fragments, 8 rows of 16 B per warp store); a
# split-K GEMM stages its fp32 partial and red.adds v4 row pieces where the partial fits its ring
# (False: red.add.v2 of the fragments). Both measured faster on the H200 (results/h200/store_trial.json).
GEMM_STAGED_STORE = True
GEMM_STAGED_RED = True
# A staged split-K gemm_wgmma GEMM (no cluster) whose fp32 partial tile (gate and up, gated) has at least this
# many bytes sums its parts in slices (`gemm_split_shared`): every part stores its partial into its own slice of
# the workspace (plain 16-byte stores), the parts of a tile wait for each other (fs::split_parts_barrier), then
# each sums its 1/split share of the tile from every slice and stores it. Otherwise (or 0): every part red.adds
# into one workspace tile, and the tile's last part converts it and re-zeroes it. On since 2026-12-06 at 32 KiB:
# per-block timelines put the weight-streaming gemm1's tail in moving the partial out (G5, G8, S1, S7: 0.9-2.5 us),
# the fence and ticket (1.3-2.2 us) and the last part's convert (1.3-2.2 us; results/h200/probe_splitk_tail_h100.json),
# and the 46 fastest unfused wgmma plans with split-K of final5, built three ways and timed twice in one run (an H100, all
# verified): the 23 plans with a GEMM at or above 32 KiB took 0.933-1.029x the red.add time (median 0.983x; the
# weight-streaming cases' 18 plans 0.964-0.991x), slices for every split GEMM 0.908-1.051x (the 64x64 tiles'
# 16 KiB partials mostly slower, up to 1.05x); results/h200/split_shared_trial_run{1,2}_h100.json. compute-sanitizer's
# memcheck, racecheck and synccheck on the gemm_wgmma families clean (results/h200/sanitize_split_shared_h100.json).
# A form whose last part alone summed the slices was slower everywhere (results/h200/split_slices_trial_h100.json).
GEMM_SPLIT_SHARED_MIN_BYTES = 32768
# Split-K in slices, lean (`kernel_split_lean`, where `gemm_split_shared` holds): a part does not store the share of
# its partial that it sums itself (it reads that share from its SMEM; 1/split of the slice stores), and the parts'
# barrier is one atomicInc per part on a ticket that counts arrivals through epochs (parts x 65536 arrivals, then
# it wraps) instead of an atomicAdd, the poll and a second atomicAdd whose last part re-zeroed the ticket: one L2
# round trip less on every part's path to its sum; and each thread loads its float4s of the share from every other
# slice in one round trip where that keeps 16 float4s or fewer in flight (`split_sum_batch`). False: the store of the
# whole partial, the re-zeroed ticket and 8 / (split - 1) positions per round trip. On since 2026-12-07: every plan of
# final8's lists that sums in slices (48), built both ways, all verified, took 0.935-1.001x the time lean (median
# 0.987x; weight-streaming 0.983-1.001x, G4, G6, G9, S8 0.935-0.964x; the geometric mean of two runs,
# results/h200/split_lean_trial_run{1,2}_h100.json, an H100); the shortlist's 27 such plans 0.979-0.997x in a whole
# run beside one without it (final10lean / final10, benchmarks/h100.md); compute-sanitizer's memcheck, racecheck and
# synccheck on the gemm_wgmma families clean with it (results/h200/sanitize_split_lean_h100.json)
GEMM_SPLIT_LEAN = True
# float4s of the fp32 sum each thread of a split's last contributor loads before it stores any, in the
# convert after the ticket (all templates): one L2 round trip per batch; 1 = one per float4 (before)
CONVERT_BATCH = 4
# the mma.sync templates' implicit im2col A loader (3x3 conv chains): each copy's row decoded once per
# block and the tap once per k tile (tile.cuh Im2colRows), where IC is a multiple of block_k; False:
# every 16-byte copy decodes its row and tap with four constant divisions (load_tile_im2col, before)
IM2COL_ROWS_HOISTED = True
# fused_wgmma.cu.j2 without a reduce-scatter or inter_cluster_reduce: its last E sub-tile goes through the
# drained operand ring as bf16 rows and leaves as 16-byte row pieces (`fused_wgmma_e_staged`); False:
# every consumer thread stores its accumulator fragments (4-byte stores, 8 rows of 16 B per warp store)
FUSED_STAGED_E = True
# fused_wgmma's exit cluster barrier (a block's SMEM must outlive the peers' pushes into it and its own
# bulk copies' reads of it): with a reduce-scatter each block arrives as soon as its slices have landed and
# waits only at its exit, so the sum and the stores run under the barrier (`fused_wgmma_early_exit_arrive`);
# False: arrive and wait at the exit (cluster_sync)
FUSED_EARLY_EXIT_ARRIVE = True
# the wgmma templates' implicit im2col A (k1 x k1 conv chains) by TMA in im2col mode: thread 0 issues one
# load per stage (the image's pixels for one filter tap, zeros outside it), completing on the stage's
# barrier like every other TMA load; False: the producer warpgroup's cp.async copies, arriving LAG stages
# later (tile.cuh Im2colRows). On since 2026-12-05: C5-C8's 36 plans and the 4 representatives, all verified,
# took 0.82-1.01x the time (median 0.925x; fused 0.883x, unfused 0.958x; results/h200/im2col_tma_trial_h100.json,
# an H100)
WGMMA_IM2COL_TMA = True
# fused_wgmma's producer warp waits on the entry cluster barrier between its jobs, just before the first whose
# ring slot the consumers free after their own wait on it (`fused_wgmma_producer_early_wait`), where the loop
# has one; False: after the loop, where compute-sanitizer's racecheck deadlocks on such kernels. On since
# 2026-12-06: warp 0 waiting converged (aligned) made the aliased family's racecheck finish clean in 8 s
# (results/h200/sanitize_aliased_early_wait_h100.json), and 35 plans built both ways all verified at 0.989-1.013x
# the time, geomean 1.001x (results/h200/producer_wait_trial_h100.json, an H100). A first form, thread 0 waiting
# alone (non-aligned), hung on the GPU (results/h200/producer_early_wait_hang_h100.json)
FUSED_PRODUCER_EARLY_WAIT = True
# fused_wgmma's GEMM1 loop over a C' slice's k tiles (KT1 = block_n / 64) unrolled; False: `#pragma unroll 1`,
# where ptxas serialized the wgmmas of some plans (C7520 "wgmma.mma_async instructions are serialized due to
# ... WG.AR in divergent path": 5 of the final run's 413, C1's dsm plans and G1's 64x128x64x256 one). On since
# 2026-12-06: the final run's three fastest fused_wgmma plans with block_n > 64 per case (45), built both ways,
# all verified, took 0.935-1.017x the time unrolled (median 1.000x, geomean 0.996x; C1 dsm 0.945x, G1 0.935x;
# results/h200/gemm1_unroll_trial_h100.json, an H100)
FUSED_GEMM1_UNROLL = True
# fused_wgmma's cluster barrier arrives at entry (after the mbarrier-init fence) and at exit (after the block's
# acquire waits on everything addressed to it) with .relaxed instead of .release semantics
# (`fused_wgmma_relaxed_arrive`); False: barrier.cluster.arrive.release, a cluster-scope release of every earlier
# memory operation of the thread. On since 2026-12-06: the two fastest cluster plans of each of the 17 cases whose
# floor is under 10 us in the last whole run (34), built both ways, all verified, took 0.886-0.974x the time relaxed
# (median 0.932x, 0.48-1.02 us less, median 0.76; results/h200/relaxed_arrive_trial_h100.json, an H100)
FUSED_RELAXED_ARRIVE = True
# gemm_wgmma's second GEMM, the programmatic dependent launch, asks for more dynamic SMEM than half an SM's where two
# of its blocks would share an SM but none fits beside the first GEMM's block (`gemm_solo_sm`): its blocks launch
# while the first GEMM runs, onto the SMs that one leaves free, and doubled up there (up to their occupancy) they left
# other SMs idle once the first GEMM ended. Trial after final7 (results/h200/deep_ring_per_gemm_run{1,2}_h100.json, an
# H100, two runs): S8's fastest unfused plans, gemm0 96 blocks of 145 KiB, gemm1 64-128 blocks of 97 KiB without a
# cluster or in clusters of 2, took 0.882-0.926x the time with gemm1 one block per SM (as with its ring 8 deep, 129 KiB: 0.899-0.916x);
# where gemm1 fits beside gemm0 (G4, G6, C3-C8, G10; no clusters or clusters of 2) one block per SM changed
# 0.986-1.013x; in clusters of 4 or 8 it took 1.131x (S8), 1.188x (G4, 8), 1.260x (G6), 0.999x (G9). On since
# 2026-12-06 23:40 UTC: every plan of final8's lists the rule changes (26 in C1-C3, G2, G4, G6, G7, G9, G10, S5, S6,
# S8), built both ways, all verified, took 0.864-0.999x the time
# (median 0.941x; G4 0.868-0.922x, G6 0.864-0.892x, S8 0.893-0.934x, S5 0.924x, S6 0.941x, G9 0.940-0.954x, C1-C3
# 0.977-0.989x, G2, G7, G10 0.994-0.999x; the mean of two runs, results/h200/solo_sm_trial_run{1,2}_h100.json, an H100)
GEMM_SOLO_SECONDARY = True


@dataclass(frozen=True)
class Switch:
    """One generator switch: its key in a measured file's "codegen" block, the module constant that holds it,
    what the generator did before the switch existed (`before`: the kernels of a file without a "codegen"
    block), and what a recorded block without the key ran (`absent`; None: every recorded block names the key,
    it came with the first one, so a block without it asks for no change and the current value stays)."""

    key: str
    constant: str
    before: bool | int
    absent: bool | int | None


SWITCHES = (
    Switch("gemm_staged_store", "GEMM_STAGED_STORE", before=False, absent=None),
    Switch("gemm_staged_red", "GEMM_STAGED_RED", before=False, absent=None),
    Switch("gemm_split_shared_min_bytes", "GEMM_SPLIT_SHARED_MIN_BYTES", before=0, absent=0),  # red.add, all
    Switch("convert_batch", "CONVERT_BATCH", before=1, absent=1),  # before the batched convert
    Switch("im2col_rows_hoisted", "IM2COL_ROWS_HOISTED", before=False, absent=False),
    Switch("fused_staged_e", "FUSED_STAGED_E", before=False, absent=False),
    Switch("fused_early_exit_arrive", "FUSED_EARLY_EXIT_ARRIVE", before=False, absent=False),
    Switch("wgmma_im2col_tma", "WGMMA_IM2COL_TMA", before=False, absent=False),  # the cp.async im2col loader
    Switch("fused_producer_early_wait", "FUSED_PRODUCER_EARLY_WAIT", before=False, absent=False),  # wait after the loop
    Switch("fused_gemm1_unroll", "FUSED_GEMM1_UNROLL", before=False, absent=False),  # GEMM1's k-tile loop rolled
    Switch("fused_relaxed_arrive", "FUSED_RELAXED_ARRIVE", before=False, absent=False),  # the .release arrives
    Switch("gemm_solo_secondary", "GEMM_SOLO_SECONDARY", before=False, absent=False),  # its ring's SMEM only
    Switch("gemm_split_lean", "GEMM_SPLIT_LEAN", before=False, absent=False),  # whole partial, re-zeroed ticket
)
# what a measured file without a "codegen" block ran: the gemm_wgmma template before the staging
FRAGMENT_EPILOGUE = {s.key: s.before for s in SWITCHES}


def codegen_switches() -> dict[str, bool | int]:
    """The generator switches in effect (bench records them next to its measurements)."""
    return {s.key: globals()[s.constant] for s in SWITCHES}


def _switch_value(s: Switch, switches: dict[str, bool | int]) -> bool | int:
    """The value `s` takes under a recorded block `switches`: its own, or `s.absent` when the block lacks it
    (the current value for an empty block, which asks for none)."""
    if s.key in switches:
        value = switches[s.key]
    elif switches and s.absent is not None:
        value = s.absent
    else:
        value = globals()[s.constant]
    return int(value) if isinstance(s.before, int) and not isinstance(s.before, bool) else bool(value)


@contextmanager
def generator_switches(switches: dict[str, bool | int]) -> Iterator[None]:
    """Render (or simulate) as the generator did with these switches (codegen_switches' keys; a key the
    block lacks takes its `Switch.absent`, the generator before that switch existed; an empty block
    changes nothing)."""
    saved = codegen_switches()
    module = globals()
    for s in SWITCHES:
        module[s.constant] = _switch_value(s, switches)
    try:
        yield
    finally:
        for s in SWITCHES:
            module[s.constant] = saved[s.key]


def recorded_switches(block: dict[str, bool | int] | None) -> dict[str, bool | int]:
    """Every switch's value in a measured file's "codegen" block as `generator_switches` reads it (None or
    empty: the file has none, `FRAGMENT_EPILOGUE`)."""
    with generator_switches(block or FRAGMENT_EPILOGUE):
        return codegen_switches()


# the wgmma templates' implicit im2col A loader (k1 x k1 conv chains): False keeps those chains on mma_sync
# (environment FUSESIM_WGMMA_IM2COL=0 / 1 overrides the default)
WGMMA_IM2COL = os.environ.get("FUSESIM_WGMMA_IM2COL", "1") != "0"


def wgmma_im2col(chain: Chain) -> bool:
    """Whether the wgmma templates load GEMM0's A by implicit im2col: a k1 x k1 conv chain (k1 > 1),
    whose A rows the producer warpgroup copies with cp.async (tile.cuh Im2colRows::load_sw128) into
    the swizzled ring while one thread issues the weights' TMA loads."""
    return chain.conv is not None and chain.conv.k1 > 1


def wgmma_im2col_tma(chain: Chain) -> bool:
    """Whether the wgmma templates load GEMM0's implicit-im2col A by TMA in im2col mode (WGMMA_IM2COL_TMA):
    one load per stage by the producer thread, no cp.async copies and no lagged arrivals."""
    return WGMMA_IM2COL_TMA and wgmma_im2col(chain)


def wgmma_im2col_copies(chain: Chain) -> bool:
    """Whether the wgmma templates' producer warpgroup copies GEMM0's implicit-im2col A by cp.async (the loader
    before WGMMA_IM2COL_TMA, and of the files recorded with it off)."""
    return wgmma_im2col(chain) and not WGMMA_IM2COL_TMA


def wgmma_im2col_lag(stages: int) -> int:
    """How many loads after an implicit-im2col stage the wgmma templates' producer threads arrive on
    its full barrier (their `LAG`): they wait for their own copies with cp.async.wait_group LAG, and
    LAG <= stages - 2, since the consumers free stage t - 1 only once stage t is full (0: at once)."""
    return max(stages - 2, 0)


def im2col_rows_hoisted(chain: Chain, block_k: int) -> bool:
    """Whether the generated A loader decodes its rows once per block (Im2colRows): a 3x3 conv
    chain whose k tiles never straddle a filter tap, with the switch on."""
    cv = chain.conv
    return IM2COL_ROWS_HOISTED and cv is not None and cv.k1 > 1 and cv.ic % block_k == 0


def pdl_secondary(plan: Plan, kernel: Kernel) -> bool:
    """Whether the generator launches `kernel` as a programmatic dependent launch: gemm_wgmma's
    second GEMM (it fetches its first weight tiles, then griddepcontrol.wait for the first GEMM)."""
    return plan.strategy == "unfused" and plan.instruction == "wgmma" and kernel.op == "gemm1"


def wgmma_split_rows_staged(block_m: int, block_n: int, stages: int, gated: bool) -> bool:
    """Whether a split-K gemm_wgmma GEMM stages its fp32 partial (rows of block_n + 4 floats, twice
    gated) in its drained ring and red.adds 16-byte row pieces; otherwise every thread red.adds its
    accumulator fragments (8-byte pieces of 8 rows per warp; always so with GEMM_STAGED_RED off)."""
    return GEMM_STAGED_RED and (2 if gated else 1) * block_m * (block_n + 4) * 4 <= stages * wgmma_gemm_stage_bytes(block_m, block_n, gated)


def warp_grid(rows: int, cols: int, warps: int) -> tuple[int, int] | None:
    """Warps (wm, wn) tiling a rows x cols tile; each warp tile a multiple of 16 x 16.

    Prefers the most square warp tile (fewest ldmatrix loads per mma)."""
    best: tuple[int, int] | None = None
    best_score = None
    wm = 1
    while wm <= warps:
        if warps % wm == 0:
            wn = warps // wm
            if rows % (16 * wm) == 0 and cols % (16 * wn) == 0:
                tm, tn = rows // wm, cols // wn
                score = abs(tm - tn) + (0 if tm * tn <= 64 * 64 else 1000)
                if best_score is None or score < best_score:
                    best, best_score = (wm, wn), score
        wm *= 2
    return best


MAX_E_REGS_PER_THREAD = 128  # fp32 E accumulators a thread may hold across GEMM1


def e_in_regs(plan: Plan) -> bool:
    """E lives in registers through GEMM1 (one N chunk, small enough block tile, and the shared
    layout fits): its SMEM copy is needed only at the Store phase, so E and the exchange area
    share the pipeline stages' SMEM."""
    t = plan.tiles
    return (plan.n_passes == 1 and t.block_m * t.block_l <= MAX_E_REGS_PER_THREAD * plan.threads
            and warp_grid(t.block_m, t.block_l, plan.threads // 32) is not None
            and _layout(plan, True).total <= SMEM_LIMIT_BYTES)


def gemm1_sub_l(plan: Plan) -> int:
    """Columns of E a block accumulates in registers at a time during GEMM1."""
    return _sub_l(plan, e_in_regs(plan))


def _sub_l(plan: Plan, e_regs: bool) -> int:
    bl = plan.tiles.block_l
    if e_regs:
        return bl
    for cand in (128, 64, 32, 16):
        if bl % cand == 0 and cand <= bl:
            return cand
    return bl


@dataclass(frozen=True)
class FusedLayout:
    """SMEM of the fused kernel, bytes. Separate regions in the order E acc, C' buffers, exchange,
    stages; or, when `aliased`, C' buffers then one region shared by stages, exchange and E."""

    e_acc: int
    c_buf: int
    x_buf: int
    stages: int
    aliased: bool = False

    @property
    def total(self) -> int:
        if self.aliased:
            return self.c_buf + max(self.stages, self.x_buf, self.e_acc)
        return self.e_acc + self.c_buf + self.x_buf + self.stages


def fused_layout(plan: Plan) -> FusedLayout:
    return _layout(plan, e_in_regs(plan))


def _layout(plan: Plan, e_regs: bool) -> FusedLayout:
    t, c = plan.tiles, plan.cluster
    gated_seq = plan.gated_mode == "sequential"
    sub_l = _sub_l(plan, e_regs)
    e_acc = t.block_m * (t.block_l + PAD_F32) * 4
    n_cbuf = 2 if c.shuffle > 1 else 1
    c_buf = n_cbuf * t.block_m * (t.block_n + PAD_BF16) * 2
    x_slots = (c.k - 1) * (2 if gated_seq else 1)
    x_buf = x_slots * t.block_m * (t.block_n + PAD_F32) * 4
    a_tile = t.block_m * (t.block_k + PAD_BF16)
    b_tile = t.block_k * (t.block_n + PAD_BF16) * (2 if gated_seq else 1)
    d_tile = t.block_k * (sub_l + PAD_BF16)
    stage = max(a_tile + b_tile, d_tile) * 2
    return FusedLayout(e_acc, c_buf, x_buf, plan.stages * stage, aliased=e_regs)


def gemm_smem_bytes(block_m: int, block_n: int, block_k: int, stages: int, gated: bool) -> int:
    a_tile = block_m * (block_k + PAD_BF16)
    b_tile = block_k * (block_n + PAD_BF16) * (2 if gated else 1)
    return stages * (a_tile + b_tile) * 2


def _common(plan: Plan) -> str | None:
    ch = plan.chain
    if plan.strategy not in ("unfused", "smem", "dsm"):
        return f"unknown strategy {plan.strategy!r}"
    if ch.dtype != "bf16":
        return f"dtype {ch.dtype}: only bf16 kernels are generated"
    if plan.instruction not in INSTRUCTIONS:
        return f"instruction {plan.instruction!r}: the generator emits {' or '.join(INSTRUCTIONS)}"
    if plan.instruction == "wgmma" and ch.conv is not None and ch.conv.k1 > 1:
        if not WGMMA_IM2COL:
            return "wgmma family: implicit im2col is switched off (capability.WGMMA_IM2COL); conv k1 > 1 needs mma_sync"
        if ch.conv.ic % WGMMA_BLOCK_K:
            return (f"wgmma family: implicit im2col needs IC = {ch.conv.ic} to be a multiple of {WGMMA_BLOCK_K} "
                    "(a k tile must not straddle a filter tap); use mma_sync")
    if ch.activation not in SUPPORTED_ACTIVATIONS:
        return f"activation {ch.activation!r} not supported"
    if ch.gated and ch.activation != "silu":
        return "gated FFN: only silu gating is generated"
    if ch.k % 8 or ch.n % 8 or ch.l % 8:
        return "K, N and L must be multiples of 8 (16-byte global loads)"
    if ch.conv is not None:
        if ch.conv.ic % 8:
            return f"conv chain: IC = {ch.conv.ic} must be a multiple of 8 (16-byte im2col loads)"
        if ch.conv.k1 % 2 == 0:
            return "conv chain: k1 must be odd ('same' padding)"
    if not 2 <= plan.stages <= MAX_STAGES:
        return f"stages = {plan.stages}: the pipeline supports 2..{MAX_STAGES}"
    return None


# The parts of a tile summed in slices wait for each other, so the whole grid must be resident at once: one block
# per SM (the template's launch bounds), at most this many blocks, the SMs of the H100 SXM and the H200 it was
# measured on; a larger grid keeps the red.add, and prepare() refuses a grid a smaller GPU cannot hold (9201)
SPLIT_SHARED_MAX_GRID = SM_COUNT


def gemm_split_shared(block_m: int, block_n: int, stages: int, gated: bool, split: int, cluster_size: int,
                      grid_blocks: int) -> bool:
    """Whether a gemm_wgmma GEMM sums its split-K parts in slices, each part a share of the tile
    (`GEMM_SPLIT_SHARED_MIN_BYTES`, a grid of at most `SPLIT_SHARED_MAX_GRID` blocks), rather than by red.add into
    one tile that its last part converts."""
    partial_bytes = (2 if gated else 1) * block_m * block_n * 4
    return (GEMM_SPLIT_SHARED_MIN_BYTES > 0 and split > 1 and cluster_size == 1 and grid_blocks <= SPLIT_SHARED_MAX_GRID
            and wgmma_split_rows_staged(block_m, block_n, stages, gated) and partial_bytes >= GEMM_SPLIT_SHARED_MIN_BYTES)


def kernel_split_shared(plan: Plan, kern: Kernel) -> bool:
    """`gemm_split_shared` for one kernel of a plan, its tiles, split and gating read from the plan: the one rule
    the generator, the simulator and the analyzer apply (False for anything but an unfused wgmma plan's GEMMs)."""
    if plan.strategy != "unfused" or plan.instruction != "wgmma" or len(plan.kernels) != 2:
        return False
    for k, cols, _depth, gated in _gemm_kernels(plan):
        if k == kern:
            t = k.tiles
            return gemm_split_shared(t.block_m, t.block_n, k.stages, gated, kernel_split(k, plan.chain.m, cols),
                                     k.cluster_size, k.grid_blocks)
    return False


def kernel_split_lean(plan: Plan, kern: Kernel) -> bool:
    """Whether a GEMM that sums its split-K parts in slices (`kernel_split_shared`) does it lean (`GEMM_SPLIT_LEAN`):
    no store of its own share, one epoch-counting atomic per part at the barrier."""
    return GEMM_SPLIT_LEAN and kernel_split_shared(plan, kern)


def split_sum_batch(block_m: int, block_n: int, split: int, threads: int, gated: bool, lean: bool) -> int:
    """float4 positions of its share a thread sums per L2 round trip in the slices' sum (each position one load
    from each of the other split - 1 slices, twice gated): 8 / (split - 1), 1 from 9 parts; lean, enough for the
    whole share in one round trip where that keeps 16 loads or fewer in flight per thread."""
    base = 1 if split - 1 >= 8 else 8 // (split - 1)
    one = -(-(block_m * block_n // 4) // (split * threads))
    fits = one * (split - 1) * (2 if gated else 1) <= 16
    return one if lean and fits and one > base else base


# dynamic SMEM a one-block-per-SM gemm_wgmma GEMM asks for at launch: half an SM's, so that two such blocks and
# their reserves exceed it
SOLO_SM_BYTES = SM_SMEM_BYTES // 2


def gemm_solo_sm(plan: Plan, kern: Kernel) -> bool:
    """Whether the generator launches `kern` one block per SM (`GEMM_SOLO_SECONDARY`): gemm_wgmma's second GEMM
    without a cluster, a grid within the SMs, two of its blocks fitting an SM but none beside the first GEMM's."""
    if not GEMM_SOLO_SECONDARY or not pdl_secondary(plan, kern) or len(plan.kernels) != 2:
        return False
    (k0, _c0, _d0, gated0), (k1, _c1, _d1, _g1) = _gemm_kernels(plan)
    if kern != k1 or k1.cluster_size != 1 or k1.grid_blocks > SM_COUNT:
        return False
    own = wgmma_gemm_smem_bytes(k1.tiles.block_m, k1.tiles.block_n, k1.stages, False) + SM_BLOCK_RESERVED_BYTES
    first = wgmma_gemm_smem_bytes(k0.tiles.block_m, k0.tiles.block_n, k0.stages, gated0) + SM_BLOCK_RESERVED_BYTES
    return 2 * own <= SM_SMEM_BYTES < own + first


def kernel_launch_smem_bytes(plan: Plan, kern: Kernel) -> int:
    """Dynamic SMEM an unfused wgmma GEMM asks for at launch (which sets its blocks per SM): its ring's, or
    `SOLO_SM_BYTES` where `gemm_solo_sm`; the generator and the simulator read this."""
    return max(kern.smem_bytes, SOLO_SM_BYTES) if gemm_solo_sm(plan, kern) else kern.smem_bytes


def kernel_regs_per_thread(plan: Plan, kern: Kernel) -> int:
    """Registers per thread that set a kernel's occupancy: the plan's, except for the gemm_wgmma template's
    GEMMs, whose register use follows from their accumulators (`wgmma_gemm_regs_per_thread`)."""
    if plan.strategy == "unfused" and plan.instruction == "wgmma" and kern.op in ("gemm0", "gemm1"):
        return wgmma_gemm_regs_per_thread(kern.tiles.block_n, plan.chain.gated and kern.op == "gemm0")
    return kern.regs_per_thread


def kernel_blocks_per_sm(hw: Hardware, plan: Plan, kern: Kernel) -> int:
    """Blocks of the kernel, as launched (its dynamic SMEM request, threads, registers), resident per SM of `hw`."""
    return hw.blocks_per_sm(kernel_launch_smem_bytes(plan, kern), kern.threads, kernel_regs_per_thread(plan, kern))


def kernel_fits_sm(hw: Hardware, plan: Plan, kern: Kernel) -> bool:
    """Whether a block of the kernel, as launched, fits an SM of `hw` (SMEM, threads, registers)."""
    return kernel_regs_per_thread(plan, kern) <= hw.max_registers_per_thread and kernel_blocks_per_sm(hw, plan, kern) >= 1


def kernel_split(kern: Kernel, rows: int, cols: int) -> int:
    """Split-K factor of an unfused GEMM kernel: grid_blocks / output tiles (0 if not a whole multiple)."""
    t = kern.tiles
    tiles = -(-rows // t.block_m) * (cols // t.block_n) if t.block_m > 0 and t.block_n > 0 else 0
    return kern.grid_blocks // tiles if tiles and kern.grid_blocks % tiles == 0 else 0


WGMMA_REG_OVERHEAD = 32  # registers per thread beside the accumulators (addresses, descriptors, loop state)


def wgmma_gemm_regs_per_thread(block_n: int, gated: bool) -> int:
    """Registers per thread of a gemm_wgmma kernel: a consumer thread holds block_n / 2 fp32
    accumulators per operand (gate and up when gated) and the block is allocated uniformly, the
    producer warpgroup included. On the H200 two 384-thread blocks of block_n 64 share an SM and
    two of block_n 128 do not (results/h200/dsm_split_trial_*.json): 32 + 32 <= 85 < 64 + 32."""
    return ((block_n // 2) * (2 if gated else 1) + WGMMA_REG_OVERHEAD + 7) // 8 * 8


DSM_SPLIT_MAX = 8  # portable cluster size: the split parts of a tile reduce through DSM in one cluster
DSM_SPLIT_PITCH_PAD = 4  # floats of padding per row of the fp32 partial parked in the ring (gemm_wgmma.cu.j2 LDP)


def dsm_split_partial_bytes(block_m: int, block_n: int) -> int:
    """SMEM the fp32 partial tile of a DSM split-K part takes (it reuses the drained ring)."""
    return block_m * (block_n + DSM_SPLIT_PITCH_PAD) * 4


def dsm_split_problem(kern: Kernel, split: int, gated: bool) -> str | None:
    """Why a gemm_wgmma kernel cannot reduce its split-K parts through DSM (cluster_size = split:
    the parts of a tile form a cluster, park fp32 partials in SMEM, and dsm_reduce_scatter sums
    block_n / split columns each); None: it can."""
    t = kern.tiles
    if kern.cluster_size != split or split < 2:
        return (f"cluster_size {kern.cluster_size} must equal the split-K factor {split} (>= 2): "
                "a cluster holds the split parts of one tile")
    if split > DSM_SPLIT_MAX:
        return f"DSM split-K of {split} parts exceeds the portable cluster size {DSM_SPLIT_MAX}"
    if gated:
        return "DSM split-K is generated for the non-gated GEMMs only"
    if t.block_n % (4 * split):
        return f"block_n {t.block_n} does not give each of the {split} parts whole float4 columns"
    ring = kern.stages * wgmma_gemm_stage_bytes(t.block_m, t.block_n, False)
    if dsm_split_partial_bytes(t.block_m, t.block_n) > ring:
        return (f"the fp32 partial ({dsm_split_partial_bytes(t.block_m, t.block_n)} B) does not fit the "
                f"{kern.stages}-stage ring ({ring} B)")
    return None


def wgmma_gemm_problem(kern: Kernel, rows: int, cols: int, depth: int, gated: bool) -> str | None:
    """Why the gemm_wgmma template cannot instantiate this kernel (None: it can). Supported:
    block_m 64 | 128 (threads 256 | 384), block_n 64 | 128 | 256 (gated <= 128) dividing the output
    width, block_k 64 dividing the depth, stages 2..MAX_STAGES within SMEM, split 1..16 with at least
    one k tile per part; no cluster (split-K through the L2 workspace), or a cluster of the split
    parts (split-K through DSM, `dsm_split_problem`)."""
    t = kern.tiles
    if t.block_m not in WGMMA_BLOCK_M or t.block_n not in WGMMA_BLOCK_N or t.block_k != WGMMA_BLOCK_K:
        return (f"{kern.name}: wgmma tiles {t.block_m}x{t.block_n}x{t.block_k} (block_m in {WGMMA_BLOCK_M}, "
                f"block_n in {WGMMA_BLOCK_N}, block_k {WGMMA_BLOCK_K})")
    if gated and t.block_n > 128:
        return f"{kern.name}: gated wgmma kernel with block_n {t.block_n} > 128 (two accumulators exceed registers)"
    if kern.threads != wgmma_threads(t.block_m):
        return f"{kern.name}: threads = {kern.threads}, the wgmma template runs {wgmma_threads(t.block_m)} for block_m {t.block_m}"
    if cols % t.block_n:
        return f"{kern.name}: block_n = {t.block_n} must divide {cols}"
    split = kernel_split(kern, rows, cols)
    if not 1 <= split <= WGMMA_MAX_SPLIT:
        return (f"{kern.name}: grid_blocks {kern.grid_blocks} is not 1..{WGMMA_MAX_SPLIT} x the output tiles "
                "(split-K)")
    if kern.cluster_size != 1:
        why = dsm_split_problem(kern, split, gated)
        if why:
            return f"{kern.name}: {why}"
    if depth % WGMMA_BLOCK_K:
        return f"{kern.name}: reduction {depth} must be a multiple of block_k {WGMMA_BLOCK_K}"
    if depth // WGMMA_BLOCK_K < split:
        return f"{kern.name}: split {split} exceeds the {depth // WGMMA_BLOCK_K} k tiles of the reduction"
    if not 2 <= kern.stages <= MAX_STAGES:
        return f"{kern.name}: stages = {kern.stages}"
    smem = wgmma_gemm_smem_bytes(t.block_m, t.block_n, kern.stages, gated)
    if smem > SMEM_LIMIT_BYTES:
        return f"{kern.name}: needs {smem} B of SMEM (limit {SMEM_LIMIT_BYTES})"
    return None


def _gemm_kernels(plan: Plan) -> tuple[tuple[Kernel, int, int, bool], ...]:
    """(kernel, output width, reduction, gated) of the unfused plan's two GEMMs."""
    ch = plan.chain
    return ((plan.kernels[0], ch.n, ch.k, ch.gated), (plan.kernels[1], ch.l, ch.n, False))


def _check_unfused(plan: Plan) -> str | None:
    ch = plan.chain
    if len(plan.kernels) != 2:
        return f"unfused plan with {len(plan.kernels)} kernels (want gemm0, gemm1)"
    if plan.instruction == "wgmma":
        for kern, n_out, k_in, gated in _gemm_kernels(plan):
            why = wgmma_gemm_problem(kern, ch.m, n_out, k_in, gated)
            if why:
                return why
        return None
    for kern, n_out, k_in, gated in _gemm_kernels(plan):
        t = kern.tiles
        if kern.threads not in SUPPORTED_THREADS:
            return f"{kern.name}: threads = {kern.threads} (supported {SUPPORTED_THREADS})"
        if kern.cluster_size != 1:
            return f"{kern.name}: unfused GEMM kernels run without clusters"
        if not 2 <= kern.stages <= MAX_STAGES:
            return f"{kern.name}: stages = {kern.stages}"
        if t.block_k % 16 or k_in % t.block_k:
            return f"{kern.name}: block_k = {t.block_k} must be a multiple of 16 dividing {k_in}"
        if n_out % t.block_n:
            return f"{kern.name}: block_n = {t.block_n} must divide {n_out}"
        if warp_grid(t.block_m, t.block_n, kern.threads // 32) is None:
            return f"{kern.name}: no warp layout for a {t.block_m}x{t.block_n} tile with {kern.threads} threads"
        smem = gemm_smem_bytes(t.block_m, t.block_n, t.block_k, kern.stages, gated)
        if smem > SMEM_LIMIT_BYTES:
            return f"{kern.name}: needs {smem} B of SMEM (limit {SMEM_LIMIT_BYTES})"
        if kernel_split(kern, ch.m, n_out) != 1:
            return f"{kern.name}: grid_blocks {kern.grid_blocks} != output tiles (split-K is generated by wgmma only)"
    return None


FUSED_WGMMA_SUB_L = (256, 192, 128, 64)  # E sub-tile widths (wgmma n) a consumer holds in registers


def fused_wgmma_sub_l(block_l: int) -> int:
    """Columns of E a fused_wgmma consumer accumulates at a time: the widest wgmma n dividing block_l."""
    return next((s for s in FUSED_WGMMA_SUB_L if block_l % s == 0), 0)


@dataclass(frozen=True)
class FusedWgmmaLayout:
    """SMEM of the fused_wgmma kernel, bytes from a 1024-aligned base: the operand ring (GEMM0's A and
    B tiles, GEMM1's D tiles), the shuffle group's act(C) slices, a region shared by the exchange's
    receive slots and (reduce-scatter only) the fp32 E partial, the reduce-scatter receive slots (a
    region of their own, so slices are pushed without a cluster barrier; inside the drained ring and
    slices when only that fits), the mbarriers and the alignment slack."""

    ring: int
    c_slots: int
    exchange: int
    e_partial: int
    e_receive: int
    barriers: int

    def _total(self, aliased: bool) -> int:
        extra = 0 if aliased else self.e_receive
        return self.ring + self.c_slots + max(self.exchange, self.e_partial) + extra + self.barriers + WGMMA_SMEM_SLACK

    @property
    def receive_aliased(self) -> bool:
        return (self._total(False) > SMEM_LIMIT_BYTES and self.e_receive <= self.ring + self.c_slots)

    @property
    def total(self) -> int:
        return self._total(self.receive_aliased)


def fused_wgmma_layout(plan: Plan) -> FusedWgmmaLayout:
    t, c = plan.tiles, plan.cluster
    nb = 2 if plan.gated_mode == "sequential" else 1
    sub_l = fused_wgmma_sub_l(t.block_l) or 64
    stage = max(t.block_m * 128 + nb * t.block_n * 128, sub_l * 128)
    shuffle, reduce = c.shuffle, max(c.reduce, 1)
    exchange = (c.k - 1) * nb * t.block_m * t.block_n * 4
    e_partial = t.block_m * t.block_l * 4 if reduce > 1 else 0
    e_receive = (reduce - 1) * t.block_m * (t.block_l // reduce) * 4
    return FusedWgmmaLayout(plan.stages * stage, shuffle * t.block_m * t.block_n * 2, exchange, e_partial, e_receive,
                            8 * (2 * plan.stages + shuffle + 2))


def fused_wgmma_e_staged(plan: Plan) -> bool:
    """Whether fused_wgmma.cu.j2 stages the plan's last E sub-tile in SMEM (FUSED_STAGED_E): E goes
    straight out as bf16 (no reduce-scatter, no inter_cluster_reduce) and the sub-tile's rows, padded
    by 16 bytes, fit the drained operand ring."""
    t = plan.tiles
    rows_bytes = t.block_m * ((fused_wgmma_sub_l(t.block_l) or 64) + 8) * 2
    return (FUSED_STAGED_E and max(plan.cluster.reduce, 1) <= 1 and plan.n_split == 1
            and rows_bytes <= fused_wgmma_layout(plan).ring)


def fused_wgmma_ring_jobs(plan: Plan) -> tuple[int, int]:
    """(GEMM0's k tiles, all jobs) that fused_wgmma.cu.j2's producer fills through the operand ring, in the
    consumers' order (its KT0 and JOBS): GEMM0's A/B stages, then GEMM1's D tiles per E sub-tile, shuffle
    step and C' k tile."""
    t, c = plan.tiles, plan.cluster
    k_slice = plan.chain.k if plan.gated_mode == "mul_exchange" else plan.chain.k // c.k
    kt0 = -(-k_slice // WGMMA_BLOCK_K)
    sub_l = fused_wgmma_sub_l(t.block_l) or 64
    return kt0, kt0 + (t.block_l // sub_l) * (c.l // c.k) * (t.block_n // WGMMA_BLOCK_K)


def fused_wgmma_producer_early_wait(plan: Plan) -> bool:
    """Whether fused_wgmma.cu.j2's producer warp waits on the entry cluster barrier between its load jobs,
    before the first job whose ring slot the consumers free only after their own wait on it (job KT0 +
    STAGES), instead of after the loop (FUSED_PRODUCER_EARLY_WAIT). On the GPU the barrier completes once
    every thread has arrived, before the loads, and the kernel verifies with the wait after the loop;
    compute-sanitizer's racecheck, though, deadlocks on it: its deadlock report has every other thread in
    that wait and the producer thread waiting for the slot (results/h200/racecheck_probe_*_h100.json).
    Only plans with a cluster and more jobs than that."""
    kt0, jobs = fused_wgmma_ring_jobs(plan)
    return FUSED_PRODUCER_EARLY_WAIT and plan.cluster.size > 1 and jobs > kt0 + plan.stages


def fused_wgmma_early_exit_arrive(plan: Plan) -> bool:
    """Whether fused_wgmma.cu.j2 arrives on its exit cluster barrier once the reduce-scatter's slices have
    landed (FUSED_EARLY_EXIT_ARRIVE). Only with a reduce-scatter: on an H100, 33 cluster plans with one
    took 0.981x the time (median), 33 without one (the arrive before inter_cluster_reduce's ticket) 0.999x,
    one of them 1.02x (results/h200/exit_arrive_trial*.json)."""
    return (FUSED_EARLY_EXIT_ARRIVE and plan.instruction == "wgmma" and plan.strategy != "unfused"
            and plan.cluster.size > 1 and max(plan.cluster.reduce, 1) > 1)


def fused_wgmma_release_arrives(plan: Plan) -> bool:
    """Whether fused_wgmma.cu.j2's start and exit cluster barriers arrive with .release semantics (a cluster
    plan without FUSED_RELAXED_ARRIVE): each holds its threads for a cluster-scope release, the start one
    before the producer issues its first load (what the simulator charges: hw.cluster_release_ns)."""
    return (plan.instruction == "wgmma" and plan.strategy != "unfused" and plan.cluster.size > 1
            and not FUSED_RELAXED_ARRIVE)


def fused_wgmma_problem(plan: Plan) -> str | None:
    """Why the fused_wgmma template cannot instantiate this smem/dsm plan (None: it can). Supported:
    block_m 64 | 128 (threads 128 x (1 + block_m / 64)), block_n 64 | 128 | 256 (sequential gating
    <= 128), block_k 64, block_l a multiple of 64 (E in sub-tiles of fused_wgmma_sub_l), one N chunk
    (n_passes 1), K slices of whole k tiles when cls_k > 1 (a single slice may end in a zero-filled
    tail), SMEM within the limit. A k1 x k1 conv chain loads A by implicit im2col (`wgmma_im2col`;
    `_common` requires IC to be a multiple of 64 before this runs)."""
    ch, c, t = plan.chain, plan.cluster, plan.tiles
    if t.block_m not in WGMMA_BLOCK_M or t.block_n not in WGMMA_BLOCK_N or t.block_k != WGMMA_BLOCK_K:
        return (f"fused wgmma tiles {t.block_m}x{t.block_n}x{t.block_k} (block_m in {WGMMA_BLOCK_M}, "
                f"block_n in {WGMMA_BLOCK_N}, block_k {WGMMA_BLOCK_K})")
    if plan.gated_mode == "sequential" and t.block_n > 128:
        return f"fused wgmma, sequential gating with block_n {t.block_n} > 128 (two accumulators exceed registers)"
    if t.block_l % 64 or not fused_wgmma_sub_l(t.block_l):
        return f"fused wgmma: block_l = {t.block_l} must be a multiple of 64"
    if plan.threads != wgmma_threads(t.block_m):
        return f"fused wgmma: threads = {plan.threads}, the template runs {wgmma_threads(t.block_m)} for block_m {t.block_m}"
    if plan.n_passes != 1:
        return f"fused wgmma: n_passes = {plan.n_passes} (one N chunk per cluster; E stays in registers)"
    if c.k > 1 and plan.gated_mode != "mul_exchange" and (ch.k // c.k) % WGMMA_BLOCK_K:
        return f"fused wgmma: K slice {ch.k // c.k} of cls_k = {c.k} must be a multiple of {WGMMA_BLOCK_K}"
    smem = fused_wgmma_layout(plan).total
    if smem > SMEM_LIMIT_BYTES:
        return f"fused wgmma kernel needs {smem} B of SMEM (ring, C' slices, exchange / E; limit {SMEM_LIMIT_BYTES})"
    return None


def fused_smem_bytes(plan: Plan) -> int:
    """Dynamic SMEM the generator allocates for a fused (smem / dsm) plan of either family."""
    return fused_wgmma_layout(plan).total if plan.instruction == "wgmma" else fused_layout(plan).total


def _check_fused_common(plan: Plan) -> str | None:
    """The plan semantics (fusesim/plan.py) both fused families implement."""
    ch, c, t = plan.chain, plan.cluster, plan.tiles
    if plan.grid_m * c.m * t.block_m < ch.m:
        return f"grid_m * cls_m * block_m = {plan.grid_m * c.m * t.block_m} does not cover M = {ch.m}"
    if plan.n_split * plan.n_passes * c.n * t.block_n != ch.n:
        return "n_split * n_passes * cls_n * block_n must equal N"
    if c.l * t.block_l != ch.l:
        return f"cls_l * block_l = {c.l * t.block_l} must equal L = {ch.l}"
    gm = plan.gated_mode
    if ch.gated and gm not in ("sequential", "mul_exchange"):
        return f"gated FFN needs gated_mode sequential or mul_exchange (got {gm!r})"
    if not ch.gated and gm != "none":
        return f"gated_mode {gm!r} on a non-gated chain"
    if gm == "mul_exchange" and c.k != 2:
        return "mul_exchange needs cls_k = 2 (one block per branch)"
    if ch.k % (1 if gm == "mul_exchange" else c.k):
        return f"K = {ch.k} does not split into cls_k = {c.k} slices"
    slice_l = t.block_l // c.reduce
    if t.block_l % c.reduce or slice_l % 8:
        return f"block_l / cls_reduce = {t.block_l}/{c.reduce} must be a whole multiple of 8"
    return None


def _check_fused(plan: Plan) -> str | None:
    ch, c, t = plan.chain, plan.cluster, plan.tiles
    if not c.is_consistent():
        return f"inconsistent cluster shape ({c.m},{c.n},{c.k},{c.l})"
    if c.size > MAX_CLUSTER_SIZE:
        return f"cluster of {c.size} blocks (max {MAX_CLUSTER_SIZE})"
    if plan.strategy == "smem" and c.size != 1:
        return "smem strategy with a cluster larger than 1"
    if plan.instruction == "wgmma":
        return _check_fused_common(plan) or fused_wgmma_problem(plan)
    if plan.threads not in SUPPORTED_THREADS:
        return f"threads = {plan.threads} (supported {SUPPORTED_THREADS})"
    if t.block_m % 16 or t.block_n % 16 or t.block_k % 16 or t.block_l % 16:
        return "block_m, block_n, block_k, block_l must be multiples of 16"
    why = _check_fused_common(plan)
    if why:
        return why
    k_slice = ch.k if plan.gated_mode == "mul_exchange" else ch.k // c.k
    if k_slice % t.block_k:
        return f"K slice {k_slice} must be a multiple of block_k = {t.block_k}"
    if t.block_n % t.block_k:
        return f"block_n = {t.block_n} must be a multiple of block_k = {t.block_k} (GEMM1 steps over C')"
    warps = plan.threads // 32
    if warp_grid(t.block_m, t.block_n, warps) is None:
        return f"no warp layout for GEMM0 tile {t.block_m}x{t.block_n} with {plan.threads} threads"
    if warp_grid(t.block_m, gemm1_sub_l(plan), warps) is None:
        return f"no warp layout for GEMM1 tile {t.block_m}x{gemm1_sub_l(plan)} with {plan.threads} threads"
    smem = fused_layout(plan).total
    if smem > SMEM_LIMIT_BYTES:
        return f"fused kernel needs {smem} B of SMEM (E acc, C' buffers, exchange, stages; limit {SMEM_LIMIT_BYTES})"
    return None


def can_build(plan: Plan) -> tuple[bool, str]:
    """(True, "") when fusesim.codegen emits this exact plan; else (False, the first reason)."""
    why = _common(plan)
    if why is None:
        why = _check_unfused(plan) if plan.strategy == "unfused" else _check_fused(plan)
    return (why is None, why or "")
