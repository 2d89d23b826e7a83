"""The machine: GPCs of SMs, the kernel launcher and the block/cluster dispatcher.

Coalescing (why this is fast and still exact for our kernels). Every block of a generated kernel
does the same work on a different tile, and the dispatcher starts a wave of resident blocks at the
same instant. Under processor-sharing bandwidth and identical per-SM tensor rates, the blocks of
one wave therefore progress in lock-step: simulating one representative *cohort* — a block that
issues the wave's aggregate traffic (all its blocks' bytes, the distinct tiles they touch for L2
residency) and computes at its share of the wave's SMs — gives the same times and bytes as
simulating every block. A wave ends when its cohort ends; the next wave starts then (waves and
tails follow from the occupancy and the GPC cluster slots). The cost is O(waves x pipeline
stages) events, independent of the number of blocks per wave.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import simpy

from fusesim import capability
from fusesim.hardware import Hardware
from fusesim.plan import Kernel
from fusesim.sim.fluid import FluidServer
from fusesim.sim.memory import MemorySystem
from fusesim.sim.trace import TraceRecorder
from fusesim.workload import Chain

PHASE = object()  # yielded by Cohort.loads() between software pipelines


def smem_operand_bytes(family: str, rows: int, cols: int, depth: int, threads: int, mma_calls: int,
                       stage_bytes: int, elem_bytes: int = 2) -> int:
    """SMEM traffic of one pipeline stage of one block: the stage written by cp.async, plus, for
    mma.sync, every warp reading its A rows and B columns with ldmatrix (`rows` x `cols` output
    tile, `depth` deep, `mma_calls` accumulators sharing the A operand). wgmma reads its operands
    from SMEM in the tensor core's own path, so only the fill is counted there."""
    if family != "mma_sync":
        return stage_bytes
    from fusesim.capability import warp_grid

    warps = max(threads // 32, 1)
    wm, wn = warp_grid(rows, cols, warps) or (1, warps)
    return stage_bytes + mma_calls * (wn * rows + wm * cols) * depth * elem_bytes


def _chain(done: simpy.Event, then: simpy.Event) -> None:
    """Trigger `then` once `done` has been processed (at once if it already has)."""
    if done.processed:
        then.succeed()
    else:
        done.callbacks.append(lambda _e: then.succeed())


def loads_in_flight(hw: Hardware, family: str, stages: int) -> int:
    """Pipeline stages a block's loads run ahead of its MMAs: `stages - 1` by construction of the
    software pipeline; for the generated mma.sync kernels (cp.async groups) at most
    `hw.cp_async_groups_in_flight` when the hardware file states how many the GPU sustains."""
    window = max(stages - 1, 1)
    if family == "mma_sync" and hw.cp_async_groups_in_flight is not None:
        window = min(window, hw.cp_async_groups_in_flight)
    return window


def sm_port_bytes_per_ns(hw: Hardware, family: str) -> float | None:
    """Bytes per ns one SM of a kernel of this instruction family moves between L2 and itself:
    `hw.cp_async_bytes_per_sm_cycle` for the generated mma.sync (cp.async) kernels when the
    hardware file states it, else None (the memory system's default, params.SM_GLOBAL_BYTES_PER_CYCLE)."""
    if family == "mma_sync":
        return ldst_port_bytes_per_ns(hw)
    return None


def ldst_port_bytes_per_ns(hw: Hardware) -> float | None:
    """Bytes per ns one SM moves with 16-byte ld/st.global (no TMA): the calibrated share of the L2
    bandwidth such loads reach, `hw.cp_async_bytes_per_sm_cycle`, when the hardware file states it."""
    if hw.cp_async_bytes_per_sm_cycle is not None:
        return hw.cp_async_bytes_per_sm_cycle * hw.clock_mhz / 1e3
    return None


class GPU:
    """SMs grouped in GPCs (uneven sizes from `hw.gpc_sm_counts`), HBM + L2, and the trace."""

    def __init__(self, env: simpy.Environment, hw: Hardware, trace: bool, l2_priority: dict[str, int] | None = None,
                 l2_class_capacity: dict[int, int] | None = None):
        self.env = env
        self.hw = hw
        self.mem = MemorySystem(env, hw, l2_priority, l2_class_capacity)
        self.gpc_first_sm: list[int] = []
        sm_gpc: list[int] = []
        for g, n in enumerate(hw.gpc_sm_counts):
            self.gpc_first_sm.append(len(sm_gpc))
            sm_gpc += [g] * n
        self.trace = TraceRecorder(sm_gpc) if trace else None
        self.dsm_bytes = 0
        self.flops = 0

    def cluster_slots(self, cluster_size: int, blocks_per_sm: int) -> list[tuple[int, ...]]:
        """Where resident clusters go, in dispatch order: each inside one GPC on distinct SMs.

        One block per SM first, round-robin over GPCs (the hardware spreads work), then a second
        layer on the same SMs when occupancy allows more than one block per SM.
        """
        per_gpc = [n // cluster_size for n in self.hw.gpc_sm_counts]
        order: list[tuple[int, ...]] = []
        for _layer in range(blocks_per_sm):
            for slot in range(max(per_gpc, default=0)):
                for g, count in enumerate(per_gpc):
                    if slot < count:
                        first = self.gpc_first_sm[g] + slot * cluster_size
                        order.append(tuple(range(first, first + cluster_size)))
        return order


class Cohort:
    """One wave of identical blocks, simulated as one representative (see the module docstring).

    Subclasses provide `loads()` (what the producer warp's TMA brings into SMEM stage by stage) and
    `consume()` (the consumer warpgroups: MMAs per stage, exchanges, epilogue). The producer runs
    up to `stages` loads ahead of the consumer: that bound is the software pipeline's overlap.
    """

    def __init__(self, gpu: GPU, kernel: Kernel, clusters: list[int], slots: list[tuple[int, ...]],
                 family: str, dtype: str):
        self.gpu = gpu
        self.env = gpu.env
        self.hw = gpu.hw
        self.mem = gpu.mem
        self.kernel = kernel
        self.clusters = clusters
        self.blocks = len(clusters) * kernel.cluster_size  # w: blocks this representative stands for
        sm_ids = sorted({sm for s in slots for sm in s})
        self.sm_ids = tuple(sm_ids)
        self.sms = len(sm_ids)
        self.cluster_size = kernel.cluster_size
        self.family = family
        self.sm_flops_per_ns = self.hw.tensor_flops_per_ns(family, dtype) / self.hw.sm_count
        cs = self.cluster_size
        self.dsm = None
        if cs > 1:
            link = self.hw.dsm_bandwidth_gbps(cs, push=True)
            self.dsm = FluidServer(self.env, f"dsm{cs}", link * self.sms)
            self.dsm_latency_ns = self.hw.dsm_latency_ns[cs]
            self.barrier_ns = self.hw.cluster_barrier_ns[cs]
            self.skew_ns = self.hw.barrier_skew_ns(cs)
        self.stages = max(kernel.stages, 1)
        self.window = loads_in_flight(self.hw, family, self.stages)
        self.port = sm_port_bytes_per_ns(self.hw, family)
        # the last contributor's convert after a ticket reads and writes with plain 16-byte ld/st.global in
        # every template (also the TMA + wgmma ones, whose other traffic is bulk copies)
        self.convert_port = ldst_port_bytes_per_ns(self.hw)
        # a one-deep cp.async pipeline issues the next copies only after this stage's have landed
        self.refill_ns = (self.hw.cp_async_refill_ns or 0.0) if family == "mma_sync" and self.stages == 2 else 0.0
        # a TMA ring (both wgmma templates): a freed stage is refilled only after the consumers'
        # empty-barrier arrive reaches the producer thread, which then issues the bulk copies; the
        # other stages - 1 loads stay in flight meanwhile, so a deep ring hides it and a two-stage
        # ring pays it every stage
        self.tma_refill_ns = (self.hw.tma_refill_ns or 0.0) if family == "wgmma" else 0.0
        # the TMA ring's producer fills every stage at the start (all are empty); the consumers free
        # stage t - 1 only during stage t (after wgmma.wait_group 1), so stage 0 frees none
        self.tma_ring = family == "wgmma" and self.stages > 1
        # the wgmma templates' implicit im2col: GEMM0's A rows come by 16-byte cp.async (the ld/st
        # path) beside the weights' TMA loads, so such a stage moves its A bytes at the ld/st rate
        self.ldst_port = ldst_port_bytes_per_ns(self.hw)
        # ... and each producer thread arrives on such a stage only `im2col_lag` loads after issuing its
        # copies (capability.wgmma_im2col_lag: stages - 2), once they have landed: the consumers see
        # stage t full only when the producer has issued load t + lag, i.e. refilled the stage they
        # freed two stages earlier, so a deeper ring does not let them run further ahead
        self.im2col_lag = capability.wgmma_im2col_lag(self.stages) if family == "wgmma" else 0
        self.im2col_arrive_ns = self.hw.wgmma_im2col_arrive_ns or 0.0
        # ... and those threads find a freed stage empty after their own reaction, not the TMA thread's
        react = self.hw.wgmma_im2col_react_ns  # (only wgmma stages are lagged)
        self.im2col_react_ns = self.tma_refill_ns if react is None else react
        self._pulled = self._issued = 0  # loads taken from loads(), loads issued (the latter later by delay_ns)
        self._unarrived: deque[tuple[int, simpy.Event, simpy.Event]] = deque()  # (index, landed, full)
        self._peeked = None  # the next load when _last_issued looked ahead
        self._hold_first = False
        self._blocked = False
        self._last_load_ns = 0.0
        self._pending: deque[simpy.Event] = deque()
        self._loads: Iterator[tuple[list, int]] | None = None
        self.trace = gpu.trace

    # ---- the two warp roles -------------------------------------------------------------------
    def loads(self):  # pragma: no cover - abstract
        """Yield (granules, l2_bytes) per pipeline stage, in issue order."""
        raise NotImplementedError

    def consume(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self):
        self._loads = iter(self.loads())
        self.next_phase()
        yield from self.consume()

    def next_phase(self) -> None:
        """Start a software pipeline: the prologue puts `stages - 1` loads in flight (a TMA ring:
        `stages`, then none on its first stage).

        `loads()` yields PHASE between pipelines: the generated kernels run one cp.async pipeline
        per GEMM0 chunk and per GEMM1 (slice, E sub-tile), so the producer never prefetches across
        that boundary and every phase pays its own fill latency."""
        self._blocked = False
        for _ in range(self.window + (1 if self.tma_ring else 0)):
            self._issue()
        self._hold_first = self.tma_ring

    def _issue(self, refill: bool = False) -> None:
        """Issue the next load of the current pipeline (nothing at a PHASE boundary); a `refill` of a
        stage the consumers just freed after the producer's reaction (`tma_refill_ns`, or for an im2col
        stage its producer threads' own, `im2col_react_ns`).

        The producer is not a separate process: it acts only at a phase start or when a stage
        frees, so doing its work right there is the same schedule with fewer events."""
        assert self._loads is not None
        if self._blocked:
            return
        nxt = self._next_load()
        if nxt is None:
            return
        if nxt is PHASE:
            self._blocked = True
            return
        granules, l2_bytes, *ldst = nxt  # (+ the bytes of it that come by ld/st, see stage_port)
        port = self.stage_port(l2_bytes, ldst[0]) if ldst else self.port
        lagged = bool(ldst) and ldst[0] > 0
        self._pulled += 1
        delay_ns = (self.im2col_react_ns if lagged else self.tma_refill_ns) if refill else 0.0
        if delay_ns <= 0:
            self._pending.append(self._start(granules, l2_bytes, port, lagged))
            return
        slot = self.env.event()  # the consumer waits on the stage before its copies are even issued
        self._pending.append(slot)

        def issue(_e: simpy.Event) -> None:
            self._start(granules, l2_bytes, port, lagged).callbacks.append(lambda _l: slot.succeed())

        self.env.timeout(delay_ns).callbacks.append(issue)

    def _start(self, granules: list, l2_bytes: int, port: float | None, lagged: bool) -> simpy.Event:
        """Issue one load now; the event the consumers wait on: its bytes landed, and for an im2col
        stage (`lagged`) also the producer's arrival `im2col_lag` loads later (after the last load:
        once every copy has landed, the template's cp.async.wait_group 0)."""
        landed = self._load(granules, l2_bytes, port)
        index = self._issued
        self._issued += 1
        full = landed
        if lagged and self.im2col_lag > 0:
            full = self.env.event()
            self._unarrived.append((index, landed, full))
        if not self._unarrived:
            return full
        # the producer's work for this job before the arrival is seen (hw.wgmma_im2col_arrive_ns)
        work = [self.env.timeout(self.im2col_arrive_ns)] if self.im2col_arrive_ns else []
        while self._unarrived and self._unarrived[0][0] <= index - self.im2col_lag:
            _i, done, arrived = self._unarrived.popleft()
            _chain(self.env.all_of([done, *work]) if work else done, arrived)
        if self._unarrived and self._last_issued():
            done = self.env.all_of([*work, *(ev for _i, ev, _f in self._unarrived)])
            while self._unarrived:
                _chain(done, self._unarrived.popleft()[2])
        return full

    def _next_load(self):
        assert self._loads is not None
        if self._peeked is not None:
            nxt, self._peeked = self._peeked, None
            return nxt
        return next(self._loads, None)

    def _last_issued(self) -> bool:
        """Whether the load just issued was the kernel's last (peeks at the next one)."""
        assert self._loads is not None
        if self._issued < self._pulled:  # another is about to be issued
            return False
        if self._peeked is None:
            self._peeked = next(self._loads, None)
        return self._peeked is None

    def stage_port(self, l2_bytes: int, ldst_bytes: int) -> float | None:
        """An SM's rate for a stage of which `ldst_bytes` come by 16-byte cp.async and the rest by TMA
        (the wgmma templates' implicit im2col): one port, each part at its own rate, in turn."""
        if self.ldst_port is None or ldst_bytes <= 0 or l2_bytes <= 0:
            return self.port
        tma = self.port or self.mem.sm_load_bytes_per_ns
        return l2_bytes / (ldst_bytes / self.ldst_port + max(l2_bytes - ldst_bytes, 0) / tma)

    def _load(self, granules: list, l2_bytes: int, port: float | None) -> simpy.Event:
        start = self.env.now
        ev = self.mem.load(granules, l2_bytes, self.sms, port)
        if self.trace is not None:
            ev.callbacks.append(lambda _e, s=start: self._trace_load(s))
        return ev

    def _trace_load(self, issued_ns: float) -> None:
        assert self.trace is not None
        start = max(issued_ns, self._last_load_ns)
        self._last_load_ns = self.env.now
        self.trace.span(self.sm_ids, "load", "load", start, self.env.now)

    # ---- building blocks for consume() --------------------------------------------------------
    def stage_mma(self, flops_per_block: float, smem_bytes_per_block: float = 0.0, issue_ns: float = 0.0):
        """Wait for the next SMEM stage, refill the stage freed by the previous MMA (load t+S-1,
        as the generated pipeline does), run this stage's MMAs at the cohort's share of the
        tensor cores -- or of the SMEM bandwidth, when the operand traffic between SMEM and the
        warps (`smem_bytes_per_block`, see `smem_operand_bytes`) takes longer: they overlap.
        `issue_ns`: the warps' own work issuing the refill's copies (`im2col_issue_ns`), serial with
        their MMAs."""
        ev = self._pending.popleft()
        if not ev.processed:
            yield ev
        if self.refill_ns:  # wait_group 0, __syncthreads, then the producer's address arithmetic
            yield self.env.timeout(self.refill_ns)
        if issue_ns > 0:
            yield self.env.timeout(issue_ns)
        if self._hold_first:
            self._hold_first = False
        elif self.stages > 1:
            self._issue(refill=True)
        start = self.env.now
        self.gpu.flops += flops_per_block * self.blocks
        tensor_ns = flops_per_block * self.blocks / (self.sm_flops_per_ns * self.sms)
        smem_ns = smem_bytes_per_block * self.blocks / (self.hw.smem_bandwidth_gbps_per_sm * self.sms)
        yield self.env.timeout(max(tensor_ns, smem_ns))
        if self.stages == 1:  # a single buffer is refilled only after its MMAs
            self._issue()
        if self.trace is not None:
            self.trace.span(self.sm_ids, "mma", "mma", start, self.env.now)

    def im2col_issue_ns(self, chain: Chain, block_m: int, block_k: int) -> float:
        """A thread's address decode for its copies of one im2col A tile (block_m x block_k) when the
        mma.sync templates decode every copy (load_tile_im2col; capability.im2col_rows_hoisted says
        when the rows are decoded once per block instead): copies per thread x `hw.im2col_decode_ns`."""
        cv = chain.conv
        if (self.family != "mma_sync" or cv is None or cv.k1 <= 1 or not self.hw.im2col_decode_ns
                or capability.im2col_rows_hoisted(chain, block_k)):
            return 0.0
        copies = -(-block_m * block_k // 8 // max(self.kernel.threads, 1))
        return copies * self.hw.im2col_decode_ns

    def ticket(self, ticket_bytes: int) -> simpy.Event:
        """inter_cluster_ticket (dsm_comm.cuh), once a block's red.adds are performed in L2:
        __threadfence, __syncthreads, one atomicAdd per block, __syncthreads. Its L2 traffic, and at
        least the calibrated protocol time (`hw.inter_cluster_ticket_ns`) when the hardware file
        states it (None: one L2 atomic round trip)."""
        ev = self.mem.atomic_add([], ticket_bytes, self.sms, sm_bytes_per_ns=self.port)
        if not self.hw.inter_cluster_ticket_ns:
            return ev
        return self.env.all_of([ev, self.env.timeout(self.hw.inter_cluster_ticket_ns)])

    def convert_floor(self, float4s_per_thread: int) -> simpy.Event | None:
        """The last block's convert after the ticket (every template's loop: ld.cg of the fp32 sum,
        then the bf16 and zero stores that wait for it): at least the calibrated fixed part plus one
        dependent L2 round trip per batch of `capability.CONVERT_BATCH` float4s a thread loads
        together (None when the hardware file states neither: the loads' and stores' bytes alone)."""
        fixed, per = self.hw.inter_cluster_convert_ns, self.hw.inter_cluster_convert_round_trip_ns
        if fixed is None and per is None:
            return None
        trips = -(-max(float4s_per_thread, 1) // max(capability.CONVERT_BATCH, 1))
        return self.env.timeout((fixed or 0.0) + (per or 0.0) * trips)

    def dsm_push(self, bytes_per_block: float, pull: bool = False, bulk: bool = False) -> simpy.Event:
        """Remote SMEM traffic on each SM's DSM link: pushes (st.shared::cluster) at the push
        bandwidth, pulls (ld.shared::cluster) capped at the lower pull bandwidth, bulk copies
        (cp.async.bulk shared::cluster) at the bulk rate. `bytes_per_block` are wire bytes
        (fusesim.planner.dsm_comm.wire_bytes_per_round: payload plus what the access pattern adds),
        the bytes the calibration's accesses move at the measured bandwidth."""
        total = bytes_per_block * self.blocks
        self.gpu.dsm_bytes += total
        assert self.dsm is not None
        cap = float("inf")
        if pull:
            cap = self.hw.dsm_bandwidth_gbps(self.cluster_size, push=False) * self.sms
        elif bulk:
            cap = self.hw.dsm_bulk_gbps(self.cluster_size) * self.sms
        return self.dsm.transfer(total, cap_bytes_per_ns=cap)

    def dsm_step(self, name: str, bytes_per_block: float, pull: bool = False):
        """One dsm_comm round as the generated kernel runs it: remote stores (or loads), the last
        byte lands one DSM latency later, then the cluster barrier (arrive.release / wait.acquire)
        that publishes it. Peers run in lock-step, so their bytes land when ours do."""
        if self.dsm is None or bytes_per_block <= 0:
            return
        start = self.env.now
        yield self.dsm_push(bytes_per_block, pull)
        yield self.env.timeout(self.dsm_latency_ns + self.barrier_ns + self.skew_ns)
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, "exchange", start, self.env.now)

    def smem_rmw(self, name: str, bytes_per_block: float):
        """Register <-> own-SMEM traffic the generated code does outside the pipeline (E partials),
        at the SM's SMEM bandwidth, shared by the blocks on the SM."""
        if bytes_per_block <= 0:
            return
        start = self.env.now
        yield self.env.timeout(bytes_per_block * self.blocks / (self.hw.smem_bandwidth_gbps_per_sm * self.sms))
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, "smem", start, self.env.now)

    def cluster_barrier(self, name: str, skew: bool = True):
        """barrier.cluster arrive + wait: the barrier's cost and, after work each block did on its own
        (`skew`; not at a kernel's start: a cluster's blocks are launched together), the wait for the
        cluster's latest block (`Hardware.barrier_skew_ns`)."""
        if self.cluster_size <= 1:
            return
        start = self.env.now
        yield self.env.timeout(self.barrier_ns + (self.skew_ns if skew else 0.0))
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, "barrier", start, self.env.now)

    def timed(self, ev: simpy.Event, name: str, cat: str):
        start = self.env.now
        yield ev
        if self.trace is not None:
            self.trace.span(self.sm_ids, name, cat, start, self.env.now)


def dispatch(gpu: GPU, kernel: Kernel, make_cohort, blocks_per_sm: int):
    """The block/cluster dispatcher of one kernel: waves of resident clusters until the grid is done."""
    slots = gpu.cluster_slots(kernel.cluster_size, blocks_per_sm)
    if not slots:
        raise ValueError(f"kernel {kernel.name}: no GPC can hold a cluster of {kernel.cluster_size}")
    n_clusters = kernel.clusters
    first = 0
    while first < n_clusters:
        count = min(len(slots), n_clusters - first)
        cohort: Cohort = make_cohort(list(range(first, first + count)), slots[:count])
        yield from cohort.run()
        first += count
