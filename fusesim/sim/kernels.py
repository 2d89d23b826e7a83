"""What each generated kernel's blocks do, read straight from the Plan (see fusesim/plan.py).

* `GemmCohort`: one GEMM kernel of an unfused plan (GEMM0 with the activation/gating epilogue, or
  GEMM1). Tiles are rasterised in groups of `params.RASTER_GROUP_M` M-tiles; when the grid has more
  blocks than output tiles the extra factor is split-K with an atomic-add epilogue.
* `FusedCohort`: the smem / dsm kernel. Per N chunk: GEMM0 over the block's K slice, then
  dsm_all_exchange, then GEMM1 over the shuffle group's slices with the dsm_shuffle ring pushes
  overlapped with the MMAs of the current slice; after the last chunk dsm_reduce_scatter, then
  inter_cluster_reduce or a plain store of E. inter_cluster_reduce as fused.cu.j2 runs it: fp32
  red.adds of every block's E slice into the workspace W (L2 atomics, its first touch fetched from
  HBM), a ticket atomicAdd per block, then the last of the n_split clusters of an M tile (the
  clusters of N column n_split - 1: dispatched last) reads the fp32 slice, stores bf16 E, stores
  zeros into W and resets the ticket. No memset. GEMM1 streams D through the
  same SMEM stages as GEMM0 in steps of `block_k` rows of D (a stage never holds more than one
  GEMM0 stage's worth), so the producer prefetches D while the consumer exchanges C.
DSM steps are executed exactly as listed in `plan.dsm_comm` (bytes per block, times per block).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property
from math import gcd

import simpy

from fusesim import capability
from fusesim.hardware import Hardware
from fusesim.plan import DsmStep, Kernel, Plan
from fusesim.planner.dsm_comm import dsm_split_wire_bytes_per_block, wire_bytes_per_round
from fusesim.sim import params
from fusesim.sim.gpu import GPU, PHASE, Cohort, smem_operand_bytes
from fusesim.sim.memory import Key, TensorLayout

Granules = list[tuple[Key, int]]


INTERMEDIATES = ("C", "G", "U", "S")  # C = act(A@B); G, U, S: PyTorch's gate, up, silu(gate) (baseline.py)
WORKSPACE = "W"  # inter_cluster_reduce's fp32 M x L workspace (fused.cu.j2 `ws`, the gpu runner allocates it)
WORKSPACE_BYTES = 4
SPLIT_WORKSPACE = "W:"  # + output name: a split-K GEMM's fp32 workspace (gemm_wgmma.cu.j2 `ws`)
TICKET_BYTES = 4  # one int per (M tile, block position) of a split


def kernel_io(kernel: Kernel, chain) -> tuple[str, list[str], str, int]:
    """(lhs, rhs tensors, output, reduction length) of an unfused GEMM kernel.

    Plans use op gemm0 (A @ B, or A @ [Bg, Bu] gated, into C) and gemm1 (C @ D into E);
    fusesim.sim.baseline also builds kernels with op "gemm:LHS*RHS->OUT" for the separate GEMMs
    PyTorch runs (shapes as GEMM0's, K reduction)."""
    if kernel.op == "gemm0":
        return "A", (["Bg", "Bu"] if chain.gated else ["B"]), "C", chain.k
    if kernel.op == "gemm1":
        return "C", ["D"], "E", chain.n
    spec = kernel.op.removeprefix("gemm:")
    lhs, _, rest = spec.partition("*")
    rhs, _, out = rest.partition("->")
    return lhs, [rhs], out, (chain.n if lhs in INTERMEDIATES else chain.k)


def eltwise_io(kernel: Kernel) -> tuple[list[str], str]:
    """Inputs and output of an element-wise kernel, op "eltwise:IN[,IN]->OUT" (baseline.py)."""
    ins, _, out = kernel.op.removeprefix("eltwise:").partition("->")
    return ins.split(","), out


def kernel_split(kernel: Kernel, chain) -> int:
    """Split-K factor of an unfused GEMM kernel: grid_blocks = split x output tiles."""
    _lhs, _rhs, out, _kred = kernel_io(kernel, chain)
    cols = chain.l if out == "E" else chain.n
    tiles = -(-chain.m // kernel.tiles.block_m) * -(-cols // kernel.tiles.block_n)
    return max(kernel.grid_blocks // max(tiles, 1), 1)


def split_workspaces(plan: Plan) -> dict[str, tuple[int, int, Kernel]]:
    """fp32 workspaces of the split-K GEMM kernels of an unfused plan (gemm_wgmma.cu.j2: one
    M x cols slab per accumulated operand, gate and up for a gated GEMM0; one such slab per split part,
    stacked by rows, where the parts sum in slices): name -> (rows, cols, kernel)."""
    if plan.strategy != "unfused":
        return {}
    ch = plan.chain
    out: dict[str, tuple[int, int, Kernel]] = {}
    for kern in plan.kernels:
        if kern.op.startswith("eltwise:") or kernel_split(kern, ch) <= 1 or kern.cluster_size > 1:
            continue  # no split, or split-K through DSM (no workspace)
        _lhs, rhs, name, _kred = kernel_io(kern, ch)
        cols = ch.l if name == "E" else ch.n
        slices = kernel_split(kern, ch) if capability.kernel_split_shared(plan, kern) else 1
        out[SPLIT_WORKSPACE + name] = (ch.m * slices, cols * len(rhs), kern)
    return out


def _gcd_all(values: list[int]) -> int:
    g = 0
    for v in values:
        g = gcd(g, v)
    return max(g, 1)


def layouts_for(plan: Plan) -> dict[str, TensorLayout]:
    """Global tensors of the plan with a residency granule that divides every tile touching them."""
    ch = plan.chain
    eb = ch.dtype_bytes
    rows_cols = {"A": (ch.m, ch.k), "B": (ch.k, ch.n), "Bg": (ch.k, ch.n), "Bu": (ch.k, ch.n),
                 "D": (ch.n, ch.l), "E": (ch.m, ch.l), "W": (ch.m, ch.l)}
    rows_cols.update({t: (ch.m, ch.n) for t in INTERMEDIATES})
    shapes: dict[str, list[tuple[int, int]]] = {k: [] for k in rows_cols}
    if plan.strategy == "unfused":
        for kern in plan.kernels:
            t = kern.tiles
            if kern.op.startswith("eltwise:"):
                ins, out = eltwise_io(kern)
                for name in [*ins, out]:
                    shapes[name].append((t.block_m, t.block_n))
                continue
            lhs, rhs, out, _ = kernel_io(kern, ch)
            shapes[lhs].append((t.block_m, t.block_k))
            for b in rhs:
                shapes[b].append((t.block_k, t.block_n))
            shapes[out].append((t.block_m, t.block_n))
    else:
        t = plan.tiles
        cl = plan.cluster
        block_l = t.block_l or ch.l // cl.l
        shapes["A"].append((t.block_m, t.block_k))
        for b in ("B", "Bg", "Bu"):
            shapes[b].append((t.block_k, t.block_n))
        shapes["D"].append((_d_step_rows(plan), gemm1_sub_cols(plan)))
        shapes["E"].append((t.block_m, max(block_l // cl.reduce, 1)))
        shapes["W"].append((t.block_m, max(block_l // cl.reduce, 1)))
    for name, (rows, cols, kern) in split_workspaces(plan).items():
        rows_cols[name] = (rows, cols)
        shapes[name] = [(kern.tiles.block_m, kern.tiles.block_n)]
    out = {}
    for name, (rows, cols) in rows_cols.items():
        sh = shapes[name] or [(rows, cols)]
        period = 0
        gr = _gcd_all([r for r, _ in sh])
        gc = _gcd_all([c for _, c in sh])
        if name == "A" and ch.conv is not None:
            period = ch.conv.ic
            gc = gcd(gc, period)
        fp32 = name == WORKSPACE or name.startswith(SPLIT_WORKSPACE)
        out[name] = TensorLayout(name, rows, cols, WORKSPACE_BYTES if fp32 else eb, gr, gc, period)
    return out


def l2_priority(plan: Plan) -> dict[str, int]:
    """Eviction priority per tensor (higher stays): outputs, then the intermediate, then inputs by
    decreasing reuse (ties: smaller first, then A, B, D) -- the ranking of fusesim.planner.dataflow.
    Reuse = how many times apart in time a tensor is streamed (readers of one wave share a stream)."""
    ch = plan.chain
    if plan.strategy == "unfused":
        k0, k1 = plan.kernels[0].tiles, plan.kernels[-1].tiles
        reuse = {"A": -(-ch.n // k0.block_n), "B": -(-ch.m // k0.block_m), "D": -(-ch.m // k1.block_m)}
    else:
        reuse = {"A": plan.n_split * plan.n_passes, "B": plan.grid_m, "D": plan.grid_m}
    size = {"A": ch.a_bytes, "B": ch.b_bytes, "D": ch.d_bytes}
    ranked = sorted("ABD", key=lambda t: (-reuse[t], size[t], "ABD".index(t)))
    prio = {t: 10 - i for i, t in enumerate(ranked)}
    prio["Bg"] = prio["Bu"] = prio["B"]
    for t in INTERMEDIATES:
        prio[t] = 20
    prio["E"] = 30
    prio[WORKSPACE] = 25  # after E, before the inputs: the analyzer's order
    for name in split_workspaces(plan):
        prio[name] = 25
    return prio


# L2 classes of the wgmma templates' TMA cache hints (fused_wgmma.cu.j2, gemm_wgmma.cu.j2): weights
# stream with L2::evict_first, activations are kept with L2::evict_last, stores and reductions carry
# no hint.
EVICT_FIRST, EVICT_NORMAL, EVICT_LAST = 0, 20, 40


def l2_policy(plan: Plan, hw: Hardware) -> tuple[dict[str, int], dict[int, int]]:
    """(eviction priority per tensor, bytes per priority class) the L2 model runs the plan with.

    With `hw.l2_evict_first_bytes` set, the wgmma kernels' hints are the classes: B, D evict_first,
    capped at that many bytes, A and the unfused intermediate evict_last, the rest normal. The
    mma.sync kernels give no hints: where the hardware file states `l2_reuse_bytes` (the measured
    reuse capacity) they run on plain LRU. Otherwise -- and so for wgmma plans on the H200 config,
    which leaves the cap unset -- the analyzer's ranking (`l2_priority`: outputs, the intermediate,
    then inputs by reuse) stands in."""
    if plan.instruction == "wgmma" and hw.l2_evict_first_bytes is not None:
        prio = {t: EVICT_FIRST for t in ("B", "Bg", "Bu", "D")}
        prio["A"] = EVICT_LAST
        for t in INTERMEDIATES:
            prio[t] = EVICT_LAST if plan.strategy == "unfused" else EVICT_NORMAL
        for t in ("E", WORKSPACE, *split_workspaces(plan)):
            prio[t] = EVICT_NORMAL
        return prio, {EVICT_FIRST: hw.l2_evict_first_bytes}
    if plan.instruction != "wgmma" and hw.l2_reuse_bytes is not None:
        return {}, {}
    return l2_priority(plan), {}


def gemm1_sub_l(block_l: int) -> int:
    """Columns of E a fused block accumulates in registers at a time during GEMM1 when E lives in
    SMEM (fusesim.planner.footprint.gemm1_sub_l's rule)."""
    return next((c for c in (128, 64, 32, 16) if block_l % c == 0), block_l)


def e_in_registers(plan: Plan) -> bool:
    """fused.cu.j2's E_REGS: the block's fp32 E stays in registers through GEMM1 (one sub-tile of
    block_l columns, no SMEM partials), as fusesim.capability decides for the generator."""
    if not plan.tiles.block_l or plan.strategy == "unfused":
        return False
    if plan.instruction == "wgmma":  # fused_wgmma: each E sub-tile lives in registers
        return True
    try:
        from fusesim.capability import e_in_regs
    except ImportError:  # pragma: no cover - capability ships with fusesim
        return False
    return e_in_regs(plan)


def gemm1_sub_cols(plan: Plan) -> int:
    """fused.cu.j2's SUBL: block_l when E is in registers, else gemm1_sub_l(block_l); fused_wgmma.cu.j2's
    SUBL: the widest wgmma n dividing block_l (capability.fused_wgmma_sub_l)."""
    block_l = plan.tiles.block_l or plan.chain.l // plan.cluster.l
    if plan.instruction == "wgmma" and plan.strategy != "unfused":
        from fusesim.capability import fused_wgmma_sub_l

        return fused_wgmma_sub_l(block_l) or block_l
    return block_l if e_in_registers(plan) else gemm1_sub_l(block_l)


def _d_step_rows(plan: Plan) -> int:
    t = plan.tiles
    return t.block_k if t.block_k and t.block_n % t.block_k == 0 else t.block_n


def _counts(items) -> list[tuple[tuple[int, ...], int]]:
    """Distinct items with multiplicities, sorted (deterministic order)."""
    out: dict[tuple[int, ...], int] = {}
    for it in items:
        out[it] = out.get(it, 0) + 1
    return sorted(out.items())


def _add(gran: dict[Key, int], keys: list[tuple[Key, int]]) -> int:
    """Merge a tile's granules into the stage's set; returns the tile's real bytes (edges clipped:
    TMA moves nothing for rows/columns beyond the tensor)."""
    total = 0
    for key, nbytes in keys:
        gran[key] = nbytes
        total += nbytes
    return total


def raster(tiles_m: int, tiles_n: int, split: int, split_inner: bool = False) -> list[tuple[int, int, int]]:
    """Block index -> (m tile, n tile, k split): grouped M-raster, split outermost (blockIdx.z), or
    innermost (`split_inner`: the split parts of a tile are one cluster, gemm_wgmma's DSM split-K)."""
    g = params.RASTER_GROUP_M
    tiles = [(m, n) for m0 in range(0, tiles_m, g) for n in range(tiles_n) for m in range(m0, min(m0 + g, tiles_m))]
    if split_inner:
        return [(m, n, s) for m, n in tiles for s in range(split)]
    return [(m, n, s) for s in range(split) for m, n in tiles]


class GemmCohort(Cohort):
    """A wave of one unfused GEMM kernel: out[M,Ncols] = lhs[M,Kred] @ rhs[Kred,Ncols] (x2 if gated)."""

    def __init__(self, gpu: GPU, plan: Plan, kernel: Kernel, clusters: list[int], slots, order,
                 layouts: dict[str, TensorLayout]):
        super().__init__(gpu, kernel, clusters, slots, plan.instruction, plan.chain.dtype)
        self.plan = plan
        ch = plan.chain
        t = kernel.tiles
        self.bm, self.bn, self.bk = t.block_m, t.block_n, t.block_k
        lhs, rhs, out, kred = kernel_io(kernel, ch)
        self.lhs = layouts[lhs]
        self.rhs = [layouts[b] for b in rhs]
        self.out = layouts[out]
        tiles = -(-ch.m // self.bm) * -(-self.out.cols // self.bn)
        self.split = max(kernel.grid_blocks // tiles, 1)
        # split part s reduces k tiles [s*T//split, (s+1)*T//split) of the T = ceil(kred / block_k)
        # (gemm_wgmma.cu.j2; one part of all T tiles without split-K)
        ktiles = -(-kred // self.bk)
        self.parts = [(s * ktiles // self.split, (s + 1) * ktiles // self.split) for s in range(self.split)]
        self.steps = max(hi - lo for lo, hi in self.parts)
        self.coords = [order[b] for c in clusters for b in range(c * kernel.cluster_size, (c + 1) * kernel.cluster_size)]
        self.eb = ch.dtype_bytes
        self.ws = layouts.get(SPLIT_WORKSPACE + out) if self.split > 1 else None
        self.dsm_split = self.split > 1 and kernel.cluster_size > 1
        # gemm_wgmma's implicit im2col: gemm0's A rows by cp.async beside the weights' TMA loads
        # (with WGMMA_IM2COL_TMA the A tile is one TMA im2col load: a TMA stage like the others)
        self.im2col_ldst = (plan.instruction == "wgmma" and kernel.op == "gemm0"
                            and capability.wgmma_im2col_copies(plan.chain))
        # gemm_wgmma.cu.j2 stages a split-K partial in its drained ring and red.adds row pieces where
        # it fits (capability's rule), else every thread red.adds its accumulator fragments
        self.staged_rows = (plan.instruction == "wgmma" and self.ws is not None and not self.dsm_split
                            and capability.wgmma_split_rows_staged(self.bm, self.bn, kernel.stages, len(self.rhs) > 1))
        # ... and sums the parts in slices, a share per part, where the partial is large (capability's rule)
        self.split_shared = self.ws is not None and capability.kernel_split_shared(plan, kernel)
        self.split_lean = self.split_shared and capability.kernel_split_lean(plan, kernel)

    def _active(self, step: int, s: int) -> bool:
        lo, hi = self.parts[s]
        return step < hi - lo

    def loads(self) -> Iterator[tuple[Granules, int]]:
        bm, bn, bk = self.bm, self.bn, self.bk
        a_rows = _counts((m, s) for m, _n, s in self.coords)
        b_cols = _counts((n, s) for _m, n, s in self.coords)
        for step in range(self.steps):
            # distinct tiles -> distinct granules (a granule never spans two tiles of one tensor);
            # parts with fewer k tiles than the longest are done
            rows = [((m, s), c) for (m, s), c in a_rows if self._active(step, s)]
            cols = [((n, s), c) for (n, s), c in b_cols if self._active(step, s)]
            gran, l2_bytes = self.lhs.keys_grid([m * bm for (m, _s), _c in rows],
                                                [(self.parts[s][0] + step) * bk for (_m, s), _c in rows], bm, bk,
                                                [c for _k, c in rows])
            a_bytes = l2_bytes
            k0s = [(self.parts[s][0] + step) * bk for (_n, s), _c in cols]
            for r in self.rhs:
                g, b = r.keys_grid(k0s, [n * bn for (n, _s), _c in cols], bk, bn, [c for _k, c in cols])
                gran += g
                l2_bytes += b
            yield (gran, l2_bytes, a_bytes) if self.im2col_ldst else (gran, l2_bytes)

    def consume(self):
        yield self.env.timeout(params.BLOCK_PROLOGUE_CYCLES * self.hw.cycle_ns)
        flops = 2 * self.bm * self.bn * self.bk * len(self.rhs)
        nb = len(self.rhs)
        smem = smem_operand_bytes(self.family, self.bm, self.bn, self.bk, self.kernel.threads, nb,
                                  (self.bm * self.bk + nb * self.bk * self.bn) * self.eb, self.eb)
        issue = self.im2col_issue_ns(self.plan.chain, self.bm, self.bk) if self.kernel.op == "gemm0" else 0.0
        for step in range(self.steps):
            share = sum(self._active(step, s) for _m, _n, s in self.coords) / max(len(self.coords), 1)
            yield from self.stage_mma(flops * share, smem * share, issue)
        if self.dsm_split:
            yield from self._dsm_split_epilogue()
            return
        if self.ws is not None:
            yield from self._split_epilogue()
            return
        if self.family == "wgmma" and capability.GEMM_STAGED_STORE:  # gemm_wgmma.cu.j2 stages the bf16 tile
            yield from self.smem_rmw("output tile (stage)", 2 * self.bm * self.bn * self.eb)  # then row pieces
        gran, l2_bytes = self._tiles(self.out, [((m, n), c) for (m, n), c in _counts((m, n) for m, n, _s in self.coords)])
        yield from self.timed(self.mem.store(gran, l2_bytes, self.sms, self.port), "store " + self.out.name, "store")

    def _tiles(self, layout: TensorLayout, tiles: list[tuple[tuple[int, int], int]],
               width: int = 1) -> tuple[Granules, int]:
        """Granules and requested bytes of output tiles (m, n) with counts; `width` operand slabs
        side by side (a gated GEMM's workspace holds gate and up)."""
        gran: dict[Key, int] = {}
        l2_bytes = 0
        for (m, n), count in tiles:
            for w in range(width):
                c0 = w * self.out.cols + n * self.bn
                l2_bytes += count * _add(gran, layout.keys(m * self.bm, c0, self.bm, self.bn))
        return list(gran.items()), l2_bytes

    def _split_epilogue(self):
        """Split-K as gemm_wgmma.cu.j2 runs it: every block red.adds its fp32 partial tile(s) into
        the workspace (its first touch fetched from HBM), takes a ticket; the last block of each
        tile (split part split - 1, dispatched last) reads the sums, stores the bf16 output and
        zeros into the workspace, and resets the ticket."""
        assert self.ws is not None
        if self.split_shared:
            yield from self._shared_split_epilogue()
            return
        width = len(self.rhs)
        mine = [((m, n), c) for (m, n), c in _counts((m, n) for m, n, _s in self.coords)]
        gran, l2_bytes = self._tiles(self.ws, mine, width)
        # red.add.v4 of staged rows or red.add.v2 of the accumulator fragments: the calibrated rates of
        # each (per SM and in all), not the L2 reduction throughput fitted on the fused kernels' rows
        if self.staged_rows:
            yield from self.smem_rmw("split-K partial (stage)", 2 * self.bm * self.bn * WORKSPACE_BYTES * width)
        ev = self.mem.atomic_add(gran, l2_bytes, self.sms, cold=True, sm_bytes_per_ns=self.port,
                                 fragments=not self.staged_rows, rows=self.staged_rows)
        yield from self.timed(ev, "split-K red.add", "store")
        yield from self.timed(self.ticket(TICKET_BYTES * len(self.coords)), "ticket", "store")
        last = [((m, n), c) for (m, n), c in _counts((m, n) for m, n, s in self.coords if s == self.split - 1)]
        if not last:
            return
        w_gran, w_bytes = self._tiles(self.ws, last, width)
        sms = min(self.sms, sum(c for _k, c in last))  # only the last blocks' SMs move these bytes
        floor = self.convert_floor(-(-self.bm * max(self.bn // 4, 1) // max(self.kernel.threads, 1)))
        yield from self.timed(self.mem.load(w_gran, w_bytes, sms, self.convert_port), "read workspace", "store")
        o_gran, o_bytes = self._tiles(self.out, last)
        tickets = TICKET_BYTES * sum(c for _k, c in last)
        ev = self.mem.store(o_gran + w_gran, o_bytes + w_bytes + tickets, sms, self.convert_port)
        yield from self.timed(ev, "store " + self.out.name + ", zero workspace", "store")
        if floor is not None:
            yield from self.timed(floor, "convert (dependent round trips)", "store")


    def _slice_granules(self, parts: list[tuple[int, int, int]], width: int) -> list[tuple[Key, int]]:
        """Granules of split part s's slice of output tile (m, n), for each (m, n, s) of `parts` (the
        slices stack by rows: part s's M x cols slab begins at row s * M)."""
        assert self.ws is not None
        rows = self.ws.rows // self.split
        gran: dict[Key, int] = {}
        for m, n, s in parts:
            for w in range(width):
                _add(gran, self.ws.keys(s * rows + m * self.bm, w * self.out.cols + n * self.bn, self.bm, self.bn))
        return list(gran.items())

    def _shared_split_epilogue(self):
        """Split-K in slices as gemm_wgmma.cu.j2 runs it where `capability.gemm_split_shared` holds: every
        block stages its fp32 partial in its drained ring and stores it into its own slice of the workspace
        (16-byte row pieces, full lines: no fetch), the parts of a tile wait for each other
        (fs::split_parts_barrier: the ticket's fence and atomicAdd, an acquire poll and a second atomicAdd,
        one L2 round trip each beyond the ticket), then every part reads its 1/split share of the tile
        from the other parts' slices (its own share from SMEM), and stores that share of the output; no
        zeros are written back. Lean (`capability.kernel_split_lean`): a part stores only the shares the other
        parts sum, and the barrier is one atomicInc and the poll."""
        width = len(self.rhs)
        part_bytes = self.bm * self.bn * WORKSPACE_BYTES * width
        yield from self.smem_rmw("split-K partial (stage)", 2 * part_bytes)
        parts = list(self.coords)  # (m, n, split part) per block
        gran = self._slice_granules(parts, width)
        # lean (capability.kernel_split_lean): the share a part sums itself stays in its SMEM; one ticket per part
        stored = part_bytes * (self.split - 1) // self.split if self.split_lean else part_bytes
        tickets = 1 if self.split_lean else 2
        ev = self.mem.store(gran, stored * len(parts), self.sms, self.port)
        yield from self.timed(ev, "split-K partial (slice)", "store")
        yield from self.timed(self.ticket(tickets * TICKET_BYTES * len(parts)), "split-K parts barrier", "store")
        yield from self.timed(self.env.timeout(tickets * self.hw.l2_latency_ns), "split-K parts barrier (poll)", "store")
        share = (self.split - 1) / self.split
        ev = self.mem.load(gran, int(part_bytes * share * len(parts)), self.sms, self.convert_port)
        yield from self.timed(ev, "read slices (share)", "store")
        o_gran, o_bytes = self._tiles(self.out, [((m, n), 1) for (m, n), _c in _counts((m, n) for m, n, _s in parts)])
        yield from self.timed(self.mem.store(o_gran, o_bytes, self.sms, self.convert_port), "store " + self.out.name, "store")
        positions = -(-self.bm * max(self.bn // 4, 1) // self.split // max(self.kernel.threads, 1))
        batch = capability.split_sum_batch(self.bm, self.bn, self.split, self.kernel.threads, width == 2,
                                           self.split_lean)  # float4 positions per round trip
        floor = self.convert_floor(-(-positions // batch) * capability.CONVERT_BATCH)
        if floor is not None:
            yield from self.timed(floor, "sum shares (dependent round trips)", "store")

    def _dsm_split_epilogue(self):
        """Split-K through DSM as gemm_wgmma.cu.j2 runs it when a cluster holds the split parts of a
        tile: the consumers park the fp32 partial in the drained ring, a cluster barrier publishes
        it, dsm_reduce_scatter (dsm_comm.cuh) has every part sum its block_n / split columns over
        the peers -- each thread one DSM round trip per float4 it owns, the peers' loads in flight
        together -- and store them as bf16, and a last cluster barrier lets the peers exit."""
        width = len(self.rhs)
        part_bytes = self.bm * self.bn * WORKSPACE_BYTES * width
        yield from self.smem_rmw("split-K partial (park)", part_bytes)
        yield from self.cluster_barrier("barrier (partials parked)")
        start = self.env.now
        slice_cols = max(self.bn // self.split, 1)
        float4s = -(-self.bm * max(slice_cols // 4, 1) * width // max(self.kernel.threads, 1))
        wire = dsm_split_wire_bytes_per_block(self.bm, self.bn, self.split, width)
        serial = self.env.timeout(max(float4s - 1, 0) * self.dsm_latency_ns)
        yield self.env.all_of([self.dsm_push(wire, pull=True), serial])
        yield self.env.timeout(self.dsm_latency_ns)
        if self.trace is not None:
            self.trace.span(self.sm_ids, "dsm_reduce_scatter", "exchange", start, self.env.now)
        # the cohort's blocks together store every tile they hold, once
        tiles = [((m, n), 1) for (m, n), _c in _counts((m, n) for m, n, _s in self.coords)]
        gran, l2_bytes = self._tiles(self.out, tiles)
        yield from self.timed(self.mem.store(gran, l2_bytes, self.sms, self.port), "store " + self.out.name, "store")
        yield from self.cluster_barrier("barrier (before exit)")


class EltwiseCohort(Cohort):
    """A wave of an element-wise kernel (PyTorch's activation / gating multiply): each block reads
    its block_m x block_n chunk of every input and writes the output chunk; ALU time is negligible
    next to its memory traffic."""

    def __init__(self, gpu: GPU, plan: Plan, kernel: Kernel, clusters: list[int], slots, order,
                 layouts: dict[str, TensorLayout]):
        super().__init__(gpu, kernel, clusters, slots, plan.instruction, plan.chain.dtype)
        ins, out = eltwise_io(kernel)
        self.ins = [layouts[t] for t in ins]
        self.out = layouts[out]
        self.bm, self.bn = kernel.tiles.block_m, kernel.tiles.block_n
        self.coords = _counts(order[c][:2] for c in clusters)

    def _chunks(self, layouts: list[TensorLayout]) -> tuple[Granules, int]:
        gran: dict[Key, int] = {}
        nbytes = 0
        for (m, n), count in self.coords:
            for lay in layouts:
                nbytes += count * _add(gran, lay.keys(m * self.bm, n * self.bn, self.bm, self.bn))
        return list(gran.items()), nbytes

    def loads(self) -> Iterator[tuple[Granules, int]]:
        yield self._chunks(self.ins)

    def consume(self):
        yield from self.stage_mma(0.0)
        gran, nbytes = self._chunks([self.out])
        yield from self.timed(self.mem.store(gran, nbytes, self.sms, self.port), "store " + self.out.name, "store")


class FusedCohort(Cohort):
    """A wave of clusters of the fused (smem or dsm) kernel."""

    def __init__(self, gpu: GPU, plan: Plan, kernel: Kernel, clusters: list[int], slots,
                 layouts: dict[str, TensorLayout]):
        super().__init__(gpu, kernel, clusters, slots, plan.instruction, plan.chain.dtype)
        self.plan = plan
        ch = plan.chain
        t = plan.tiles
        cl = plan.cluster
        # fused_wgmma's implicit im2col: GEMM0's A rows by cp.async beside the weights' TMA loads
        # (with WGMMA_IM2COL_TMA the A tile is one TMA im2col load: a TMA stage like the others)
        self.im2col_ldst = plan.instruction == "wgmma" and capability.wgmma_im2col_copies(ch)
        self.cl = cl
        self.bm, self.bn, self.bk = t.block_m, t.block_n, t.block_k
        self.bl = t.block_l or ch.l // cl.l
        self.eb = ch.dtype_bytes
        self.layouts = layouts
        self.gated = ch.gated
        self.mode = plan.gated_mode
        self.k_slice = ch.k if self.mode == "mul_exchange" else ch.k // cl.k
        self.k_steps = -(-self.k_slice // self.bk)
        self.d_rows = _d_step_rows(plan)
        self.d_steps_per_slice = -(-self.bn // self.d_rows)
        self.e_regs = e_in_registers(plan)
        self.sub_l = gemm1_sub_cols(plan)
        self.sub_passes = -(-self.bl // self.sub_l)
        self.n_passes = plan.n_passes
        self.steps: dict[str, list[DsmStep]] = {}
        for s in plan.dsm_comm:
            self.steps.setdefault(s.primitive, []).append(s)
        # blocks of each cluster: (m_sub, n_i, k_j) -> global coordinates of the cohort's blocks
        grid_m = plan.grid_m
        self.blocks_xy: list[tuple[int, int, int, int]] = []  # (m tile, n_c, n_i, k_j)
        for c in clusters:
            m_c, n_c = c % grid_m, c // grid_m
            for m_sub in range(cl.m):
                for n_i in range(cl.n):
                    for k_j in range(cl.k):
                        self.blocks_xy.append((m_c * cl.m + m_sub, n_c, n_i, k_j))

    # N tile index (in units of block_n) of slice n_i of chunk p in cluster column n_c
    def _n_tile(self, n_c: int, p: int, n_i: int) -> int:
        return (n_c * self.n_passes + p) * self.cl.n + n_i

    def _b_tensors(self, k_j: int) -> list[str]:
        if not self.gated:
            return ["B"]
        if self.mode == "mul_exchange":
            return ["Bg" if k_j == 0 else "Bu"]
        return ["Bg", "Bu"]

    def loads(self) -> Iterator[tuple[Granules, int] | object]:
        bm, bn, bk, bl = self.bm, self.bn, self.bk, self.bl
        sub = self.sub_l
        cl = self.cl
        lay = self.layouts
        mul = self.mode == "mul_exchange"
        rows = _counts((m, k_j) for m, _nc, _ni, k_j in self.blocks_xy)
        # D does not depend on the block's M position: group blocks by (n_c, n_i, k_j)
        nik = _counts((nc, ni, k_j) for _m, nc, ni, k_j in self.blocks_xy)
        a_r0 = [m * bm for (m, _k), _c in rows]
        a_cnt = [c for _r, c in rows]
        # D: per block group, its shuffle group g, L position q and own ring slice
        d_geo = []
        for (nc, ni, k_j), count in nik:
            g, q = divmod(ni * cl.k + k_j, cl.l)
            d_geo.append((nc, g, q, ni - g * cl.shuffle, count))
        d_cnt = [c for *_x, c in d_geo]
        for p in range(self.n_passes):
            if p:
                yield PHASE
            cols = _counts((self._n_tile(nc, p, ni), k_j) for _m, nc, ni, k_j in self.blocks_xy)
            by_tensor: dict[str, tuple[list[int], list[int], list[int]]] = {}
            for (n, k_j), count in cols:
                for name in self._b_tensors(k_j):
                    ks, ns, cs = by_tensor.setdefault(name, ([], [], []))
                    ks.append(0 if mul else k_j * self.k_slice)
                    ns.append(n * bn)
                    cs.append(count)
            a_k = [0 if mul else k_j * self.k_slice for (_m, k_j), _c in rows]
            for step in range(self.k_steps):
                off = step * bk
                gran, l2_bytes = lay["A"].keys_grid(a_r0, [k + off for k in a_k], bm, bk, a_cnt)
                a_bytes = l2_bytes
                for name, (ks, ns, cs) in by_tensor.items():
                    g, nbytes = lay[name].keys_grid([k + off for k in ks], ns, bk, bn, cs)
                    gran += g
                    l2_bytes += nbytes
                yield (gran, l2_bytes, a_bytes) if self.im2col_ldst else (gran, l2_bytes)
            # GEMM1: block b = n_i*cls_k + k_j is position q = b % cls_l of shuffle group g = b // cls_l;
            # the group covers slices g*shuffle .. of this chunk, the block the L range q. At ring
            # step t a block holds slice (n_i + t) % shuffle of its group (fused.cu.j2's `ring`).
            # one cp.async pipeline over (ring step, E sub-tile, k tile): fused.cu.j2's GEMM1
            shuffle = cl.shuffle
            yield PHASE
            for t in range(shuffle):
                base = [self._n_tile(nc, p, g * shuffle + (own + t) % shuffle) * bn for nc, g, _q, own, _c in d_geo]
                for sl in range(self.sub_passes):
                    c0s = [q * bl + sl * sub for _nc, _g, q, _o, _c in d_geo]
                    for tt in range(self.d_steps_per_slice):
                        off = tt * self.d_rows
                        yield lay["D"].keys_grid([r + off for r in base], c0s, self.d_rows, sub, d_cnt)

    def _per_chunk(self, primitive: str) -> list[list[float]]:
        """DSM bytes per block of each execution of `primitive` as the kernel moves them (payload + the
        access pattern's overhead, fusesim.planner.dsm_comm.wire_bytes_per_round), grouped by N chunk."""
        per = [[] for _ in range(self.n_passes)]
        for s in self.steps.get(primitive, []):
            wire = wire_bytes_per_round(s, self.plan.tiles, self.plan.cluster, self.plan.instruction)
            for i in range(s.times):
                per[min(i * self.n_passes // max(s.times, 1), self.n_passes - 1)].append(wire)
        return per

    def consume(self):
        bm, bn, bk = self.bm, self.bn, self.bk
        yield self.env.timeout(params.BLOCK_PROLOGUE_CYCLES * self.hw.cycle_ns)
        yield from self.cluster_barrier("barrier (peers exist)", skew=False)
        nb = len(self._b_tensors(0))
        flops0 = 2 * bm * bn * bk * nb
        flops1 = 2 * bm * self.d_rows * self.sub_l
        threads = self.kernel.threads
        smem0 = smem_operand_bytes(self.family, bm, bn, bk, threads, nb, (bm * bk + nb * bk * bn) * self.eb, self.eb)
        smem1 = smem_operand_bytes(self.family, bm, self.sub_l, self.d_rows, threads, 1,
                                   self.d_rows * self.sub_l * self.eb, self.eb)
        issue0 = self.im2col_issue_ns(self.plan.chain, bm, bk)
        e_sub_bytes = 2 * bm * self.sub_l * 4  # fp32 read + write of one E sub-tile
        exchange = self._per_chunk("dsm_all_exchange")
        shuffle_bytes = self._per_chunk("dsm_shuffle")
        shuffle = self.cl.shuffle
        for p in range(self.n_passes):
            if p:
                self.next_phase()
            for _ in range(self.k_steps):
                yield from self.stage_mma(flops0, smem0, issue0)
            # dsm_all_exchange: push the partials to the cls_k - 1 peers, one cluster barrier; the
            # fragment-layout 8-byte stores move twice the payload (wire bytes, dsm_comm.py), which
            # is what occupies the link
            for nbytes in exchange[p]:
                yield from self.dsm_step("dsm_all_exchange", nbytes)
            if self.cl.k > 1 and shuffle == 1:  # after each block's combine of the peers' partials
                yield from self.cluster_barrier("barrier (exchange buffer free)")
            # GEMM1 with the ring: at each step push the slice held (if another step follows),
            # multiply it, then a cluster barrier (the pushed slice has landed)
            ring = sum(shuffle_bytes[p])
            self.next_phase()
            for t in range(shuffle):
                push = None
                start = self.env.now
                if ring and t < shuffle - 1:
                    push = self.dsm_push(ring / (shuffle - 1))
                for _sl in range(self.sub_passes):
                    # without E_REGS an E sub-tile's fp32 partial comes from SMEM into registers at
                    # its first k tile and goes back at its last (fused.cu.j2; once per chunk when
                    # there is a single sub-tile)
                    if not self.e_regs and (self.sub_passes > 1 or t == 0):
                        yield from self.smem_rmw("E partial (load)", e_sub_bytes / 2)
                    for _ in range(self.d_steps_per_slice):
                        yield from self.stage_mma(flops1, smem1)
                    if not self.e_regs and (self.sub_passes > 1 or t == shuffle - 1):
                        yield from self.smem_rmw("E partial (store)", e_sub_bytes / 2)
                if push is not None:
                    yield push
                    yield self.env.timeout(self.dsm_latency_ns)
                    if self.trace is not None:
                        self.trace.span(self.sm_ids, "dsm_shuffle", "exchange", start, self.env.now)
                if shuffle > 1:
                    yield from self.cluster_barrier("barrier (ring step)")
            if self.e_regs:  # the stages are drained: E is parked in SMEM for the Store phase
                yield from self.smem_rmw("E park", e_sub_bytes / 2)
        # dsm_reduce_scatter: barrier (partials complete), then each block pulls its slice from peers
        for s in self.steps.get("dsm_reduce_scatter", []):
            for _ in range(s.times):
                yield from self.cluster_barrier("barrier (partials complete)")
                start = self.env.now
                # dsm_comm.cuh: each thread walks its float4s of the owned slice; per float4 it loads
                # the peers' values (concurrently) and hands the sum to the store before the next
                # one, so a thread waits one DSM round trip per float4 it owns
                serial = self.env.timeout(max(self._scatter_float4s_per_thread() - 1, 0) * self.dsm_latency_ns)
                wire = wire_bytes_per_round(s, self.plan.tiles, self.plan.cluster)
                yield self.env.all_of([self.dsm_push(wire, pull=True), serial])
                yield self.env.timeout(self.dsm_latency_ns)
                if self.trace is not None:
                    self.trace.span(self.sm_ids, "dsm_reduce_scatter", "exchange", start, self.env.now)
        yield from self._store_e()
        yield from self.cluster_barrier("barrier (before exit)")

    def _scatter_float4s_per_thread(self) -> int:
        """float4s of the owned E slice (block_m x block_l / cls_reduce) each thread sums."""
        width = max(self.bl // self.cl.reduce, 1)
        return -(-self.bm * max(width // 4, 1) // max(self.kernel.threads, 1))

    def _e_slices(self, last_only: bool = False) -> list[tuple[tuple[int, ...], int]]:
        """(m tile, first column) of the E slice each block owns after dsm_reduce_scatter, with counts
        (`last_only`: blocks of the clusters that convert the tile, N column n_split - 1)."""
        cl = self.cl
        width = max(self.bl // cl.reduce, 1)
        last = self.plan.n_split - 1
        out = []
        for m, nc, ni, k_j in self.blocks_xy:
            if last_only and nc != last:
                continue
            g, q = divmod(ni * cl.k + k_j, cl.l)
            out.append((m, q * self.bl + g * width))
        return _counts(out)

    def _slices(self, layout: TensorLayout, slices) -> tuple[Granules, int]:
        width = max(self.bl // self.cl.reduce, 1)
        gran: dict[Key, int] = {}
        l2_bytes = 0
        for (m, c0), count in slices:
            l2_bytes += count * _add(gran, layout.keys(m * self.bm, c0, self.bm, width))
        return list(gran.items()), l2_bytes

    def _store_e(self):
        if not self.steps.get("inter_cluster_reduce"):
            gran, l2_bytes = self._e_store_slices
            yield from self.timed(self.mem.store(gran, l2_bytes, self.sms, self.port), "store E", "store")
            return
        # fp32 red.add of every block's slice into the workspace, then a fence and the ticket
        yield from self.timed(self._red_add_e(), "inter_cluster_reduce", "store")
        yield from self._ticket_and_convert()

    @cached_property
    def _workspace_slices(self) -> tuple[Granules, int]:
        return self._slices(self.layouts[WORKSPACE], self._e_slices())

    @cached_property
    def _e_store_slices(self) -> tuple[Granules, int]:
        return self._slices(self.layouts["E"], self._e_slices())

    @staticmethod
    def _part(slices: tuple[Granules, int], part: int, parts: int) -> tuple[Granules, int]:
        """Part `part` of `parts` (equal column chunks, the E sub-tiles) of (granules, L2 bytes)."""
        gran, l2_bytes = slices
        n = len(gran)
        return gran[part * n // parts:(part + 1) * n // parts], l2_bytes // parts

    def _red_add_e(self, part: int = 0, parts: int = 1) -> simpy.Event:
        """red.add of part `part` of `parts` (equal column chunks) of every block's E slice into W:
        at the inter_cluster_reduce throughput the hardware file states, and at most what one SM
        sustains in the instruction's form (`_red_fragments`)."""
        gran, l2_bytes = self._part(self._workspace_slices, part, parts)
        frag = self._red_fragments()
        return self.mem.atomic_add(gran, l2_bytes, self.sms, cold=True, sm_bytes_per_ns=self.port,
                                   fp32_red=True, fragments=frag, rows=not frag)

    def _red_fragments(self) -> bool:
        """fused.cu.j2 red.adds whole float4 row pieces of E (red.global.add.v4, from SMEM or the
        reduce-scatter's sums)."""
        return False

    def _ticket_and_convert(self):
        e, w = self.layouts["E"], self.layouts[WORKSPACE]
        yield from self.timed(self.ticket(TICKET_BYTES * len(self.blocks_xy)), "ticket", "store")
        last = self._e_slices(last_only=True)
        if not last:
            return
        # the last cluster of each tile: read the fp32 sum, store bf16 E and zeros into W, reset the ticket;
        # only the last blocks' SMs move these bytes
        w_gran, w_bytes = self._slices(w, last)
        sms = min(self.sms, sum(c for _k, c in last))
        floor = self.convert_floor(self._scatter_float4s_per_thread())  # the owned slice, as the scatter's
        yield from self.timed(self.mem.load(w_gran, w_bytes, sms, self.convert_port), "read workspace", "store")
        e_gran, e_bytes = self._slices(e, last)
        tickets = TICKET_BYTES * sum(c for _k, c in last)
        ev = self.mem.store(e_gran + w_gran, e_bytes + w_bytes + tickets, sms, self.convert_port)
        yield from self.timed(ev, "store E, zero workspace", "store")
        if floor is not None:
            yield from self.timed(floor, "convert (dependent round trips)", "store")


class FusedWgmmaCohort(FusedCohort):
    """A wave of clusters of the fused_wgmma kernel (fused_wgmma.cu.j2), one N chunk (n_passes 1).

    One TMA pipeline over every tile of the block -- GEMM0's A/B k tiles, then GEMM1's D tiles in
    (E sub-tile, shuffle step, k tile) order -- with `stages - 1` loads in flight, so D streams in
    while GEMM0 and the exchange run. dsm_comm completes on the receiver's mbarrier, with no cluster
    barrier per round: dsm_all_exchange st.async's the fp32 partials (then the block waits for its
    peers' bytes, one DSM latency after they are sent); dsm_shuffle bulk-copies the block's act(C)
    slice to every block of its shuffle group at once (an all-gather: the same bytes as the ring's
    cls_shuffle - 1 steps), and GEMM1 starts on its own slice while the others travel;
    dsm_reduce_scatter bulk-copies E slices to their owners as soon as E is complete (after a cluster
    barrier only when its receive slots reuse the ring). The start barrier is arrived after mbarrier
    init and waited before the first push, so it overlaps the first loads; one barrier before exit."""

    def run(self):
        # every thread, the producer's too, arrives on the start cluster barrier before the first load is
        # issued: with .release semantics that arrive holds it for a cluster-scope release. (The exit arrive's
        # release is not charged apart: the cluster-barrier skew was measured on .release barriers and holds it.)
        yield from self.release_arrive()
        yield from super().run()

    def release_arrive(self):
        """The start cluster barrier's arrive with .release semantics (`capability.fused_wgmma_release_arrives`):
        hw.cluster_release_ns beyond a relaxed one."""
        rel = self.hw.cluster_release_ns or 0.0
        if rel <= 0 or not capability.fused_wgmma_release_arrives(self.plan):  # (a cluster plan's only)
            return
        start = self.env.now
        yield self.env.timeout(rel)
        if self.trace is not None:
            self.trace.span(self.sm_ids, "barrier arrive (release)", "barrier", start, self.env.now)

    def loads(self) -> Iterator[tuple[Granules, int] | object]:
        # the mma.sync kernel's loads with its PHASE boundaries removed: one ring for every tile
        for item in super().loads():
            if item is not PHASE:
                yield item

    def release_drained(self) -> None:
        """fused_wgmma.cu.j2 drains its wgmmas (wgmma.wait_group 0) at the end of GEMM0 and of each E sub-tile
        and frees the stage they read right there, not during the next stage as within a loop: the producer
        refills it now, and the next stage frees none."""
        if self.tma_ring and not self._hold_first:
            self._issue(refill=True)
            self._hold_first = True

    def stage_mma(self, flops_per_block: float, smem_bytes_per_block: float = 0.0):
        """A stage as in Cohort.stage_mma, but never shorter than the consumer's barrier handshakes
        and wgmma issue (hw.wgmma_stage_handshake_ns for its block_m / 64 consumer warpgroups): with
        small tiles they take longer than the stage's tensor time."""
        start = self.env.now
        yield from super().stage_mma(flops_per_block, smem_bytes_per_block)
        floor = self.hw.wgmma_stage_handshake_ns or {}
        rest = floor.get(min(max(self.bm // 64, 1), 2), 0.0) - (self.env.now - start)
        if rest > 0:
            yield self.env.timeout(rest)

    def consume(self):
        bm, bn, bk = self.bm, self.bn, self.bk
        cl = self.cl
        t_start = self.env.now
        yield self.env.timeout(params.BLOCK_PROLOGUE_CYCLES * self.hw.cycle_ns)
        nb = len(self._b_tensors(0))
        flops0 = 2 * bm * bn * bk * nb
        flops1 = 2 * bm * self.d_rows * self.sub_l
        smem0 = (bm * bk + nb * bk * bn) * self.eb
        smem1 = self.d_rows * self.sub_l * self.eb
        for _ in range(self.k_steps):
            yield from self.stage_mma(flops0, smem0)
        self.release_drained()
        if self.cluster_size > 1 and self.env.now < t_start + self.barrier_ns:  # the start barrier's wait
            yield from self.cluster_barrier_until(t_start + self.barrier_ns)
        for nbytes in self._per_chunk("dsm_all_exchange")[0]:
            yield from self.dsm_arrival("dsm_all_exchange", nbytes, bulk=False)  # st.async, at the push rate
        # combine: the peers' partials from SMEM, act(C) as bf16 into the block's slice
        xbytes = (cl.k - 1) * (2 if self.mode == "sequential" else 1) * bm * bn * 4
        yield from self.smem_rmw("act(C) to SMEM", bm * bn * self.eb + xbytes)
        ring = sum(self._per_chunk("dsm_shuffle")[0])
        push = self.dsm_push(ring, bulk=True) if ring else None
        start = self.env.now
        kt1 = self.d_steps_per_slice
        # without a reduce-scatter, inter_cluster_reduce red.adds each E sub-tile straight from the
        # accumulators (fused_wgmma.cu.j2); the consumer warps that issue them drain at the SM's
        # fragment-red rate before their next sub-tile's wgmmas (the memory pipe's queue is short), so
        # the reductions do not overlap the following sub-tiles
        red_inline = cl.reduce <= 1 and bool(self.steps.get("inter_cluster_reduce"))
        # without either, the consumer threads store each bf16 E sub-tile straight from their
        # accumulators (4-byte stores, 16 bytes per row and warp quad): the same short queue
        store_inline = cl.reduce <= 1 and not red_inline
        # except the last sub-tile, when the template stages it in the drained ring (FUSED_STAGED_E):
        # bf16 rows to SMEM, then 16-byte st.global row pieces at the calibrated 16-byte ld/st rate (the
        # convert's)
        staged_last = store_inline and capability.fused_wgmma_e_staged(self.plan)
        for sl in range(self.sub_passes):
            for t in range(cl.shuffle):
                if t == 1 and sl == 0 and push is not None:  # the other slices have landed
                    yield push
                    yield self.env.timeout(self.dsm_latency_ns)
                    if self.trace is not None:
                        self.trace.span(self.sm_ids, "dsm_shuffle", "exchange", start, self.env.now)
                for _ in range(kt1):
                    yield from self.stage_mma(flops1, smem1)
            self.release_drained()
            if cl.reduce > 1:  # the E sub-tile goes to SMEM for the reduce-scatter
                yield from self.smem_rmw("E partial", bm * self.sub_l * 4)
            elif red_inline:  # the consumer threads red.add the sub-tile from their accumulators
                yield from self.timed(self._red_add_e(sl, self.sub_passes), "inter_cluster_reduce (sub-tile)", "store")
            elif staged_last and sl == self.sub_passes - 1:
                yield from self.smem_rmw("E sub-tile (stage)", 2 * bm * self.sub_l * self.eb)
                gran, l2_bytes = self._part(self._e_store_slices, sl, self.sub_passes)
                yield from self.timed(self.mem.store(gran, l2_bytes, self.sms, self.convert_port),
                                      "store E (staged sub-tile)", "store")
            elif store_inline:
                yield from self.timed(self._store_e_fragments(sl, self.sub_passes), "store E (sub-tile)", "store")
        # the exit barrier's arrive (`fused_wgmma_early_exit_arrive`): once the reduce-scatter's slices have
        # landed, so that the sum and the stores run under it
        early = capability.fused_wgmma_early_exit_arrive(self.plan)
        arrived = None
        for s in self.steps.get("dsm_reduce_scatter", []):
            if self._scatter_aliased():
                yield from self.cluster_barrier("barrier (ring drained)")
            yield from self.dsm_arrival("dsm_reduce_scatter", wire_bytes_per_round(s, self.plan.tiles, cl,
                                                                                   self.plan.instruction))
            arrived = self.env.now if early else None
            yield from self.smem_rmw("reduce-scatter sum", cl.reduce * bm * max(self.bl // cl.reduce, 1) * 4)
        if red_inline:
            yield from self._ticket_and_convert()
        elif not store_inline:
            yield from self._store_e()
        if arrived is None:
            yield from self.cluster_barrier("barrier (before exit)")
        else:  # released a barrier's cost (and the latest block's lag) after the arrive
            yield from self.cluster_barrier_until(arrived + self.barrier_ns + self.skew_ns, "barrier (before exit)")

    def _store_e_fragments(self, part: int, parts: int) -> simpy.Event:
        """Part `part` of `parts` (the E sub-tiles) of every block's E stored from the accumulator
        fragments. Such stores write 2 x dtype bytes per lane, a partial sector per row and warp quad; an
        SM issues them at the request rate calibrate measured for red.global.add.v2.f32 in the same
        fragment layout (`l2_fragment_reduction_gbps_per_sm`, 8 bytes per lane, a full sector per row and
        quad), so at 2 x dtype / 8 of its bytes (bf16: 15 GB/s per SM on the H200). Without that rate in
        the hardware file, at the SM's port."""
        gran, l2_bytes = self._part(self._e_store_slices, part, parts)
        rate = self.hw.l2_fragment_reduction_gbps_per_sm
        return self.mem.store(gran, l2_bytes, self.sms, rate * 2 * self.eb / 8 if rate else self.port)

    def _red_fragments(self) -> bool:
        """Without a reduce-scatter fused_wgmma.cu.j2 red.adds E from the accumulators in their
        fragment layout (red.global.add.v2); after one, the summed float4 row pieces (v4)."""
        return self.cl.reduce <= 1

    def _scatter_aliased(self) -> bool:
        from fusesim.capability import fused_wgmma_layout

        return fused_wgmma_layout(self.plan).receive_aliased

    def dsm_arrival(self, name: str, bytes_per_block: float, bulk: bool = True):
        """A push that completes on the receiver's mbarrier: the bytes on the links (bulk copies at
        the bulk rate, st.async at the push rate), then one DSM latency until the last lands (peers
        run in lock-step: ours land when theirs do)."""
        if self.dsm is None or bytes_per_block <= 0:
            return
        start = self.env.now
        yield self.dsm_push(bytes_per_block, bulk=bulk)
        yield self.env.timeout(self.dsm_latency_ns)
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, "exchange", start, self.env.now)

    def cluster_barrier_until(self, t_ns: float, name: str = "barrier (peers exist)"):
        start = self.env.now
        yield self.env.timeout(max(t_ns - self.env.now, 0.0))
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, "barrier", start, self.env.now)
