"""The `Hardware` spec: one validated description of a GPU, loaded from hw_configs/*.yaml.

Every number carries its unit in its key and has a `provenance` entry (datasheet, paper,
measured on a named GPU with the command, or inferred). DSM bandwidth/latency and cluster barrier
cost are tables by cluster size; SM placement is the list of SMs per GPC, from which the number of
co-resident clusters follows (a cluster must fit inside one GPC).
"""

from __future__ import annotations

import math
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    model_validator,
)

from fusesim.errors import InputError, pydantic_error
from fusesim.yamlio import read_mapping, set_dotted

InstructionFamily = Literal["wgmma", "mma_sync"]
DType = Literal["bf16", "fp16"]

# Keys that need no provenance entry (not numbers).
_NO_PROVENANCE = {"name", "description", "provenance"}

# Optional simulator fields (default None: the simulator's built-in behaviour). A config that sets one
# must give its provenance; one that leaves it out needs none and keeps its fingerprint.
_OPTIONAL = {"cp_async_groups_in_flight", "cp_async_bytes_per_sm_cycle", "cp_async_refill_ns",
             "kernel_start_us", "l2_reduction_bandwidth_gbps", "graph_kernel_gap_us", "wgmma_stage_handshake_ns",
             "cluster_barrier_skew_ns", "dsm_bulk_bandwidth_gbps_per_sm",
             "l2_reuse_bytes", "l2_evict_first_bytes", "tma_refill_ns",
             "inter_cluster_ticket_ns", "l2_fragment_reduction_gbps_per_sm", "l2_fragment_reduction_bandwidth_gbps",
             "l2_row_reduction_gbps_per_sm", "l2_row_reduction_bandwidth_gbps", "pdl_release_us", "im2col_decode_ns",
             "inter_cluster_convert_ns", "inter_cluster_convert_round_trip_ns", "wgmma_im2col_arrive_ns",
             "wgmma_im2col_react_ns", "cluster_release_ns"}


# The by-cluster-size tables (keys: cluster sizes 2 .. max_cluster_size); the bulk one is optional.
CLUSTER_BANDWIDTH_TABLES = ("dsm_push_bandwidth_gbps_per_sm", "dsm_pull_bandwidth_gbps_per_sm",
                            "dsm_bulk_bandwidth_gbps_per_sm")
CLUSTER_LATENCY_TABLES = ("dsm_latency_ns", "cluster_barrier_ns")
CLUSTER_TABLES = CLUSTER_BANDWIDTH_TABLES + CLUSTER_LATENCY_TABLES

# the L2's reduction rates: each bounded by l2_bandwidth_gbps (a reduction passes the L2)
L2_REDUCTION_RATES = ("l2_reduction_bandwidth_gbps", "l2_fragment_reduction_gbps_per_sm",
                      "l2_fragment_reduction_bandwidth_gbps", "l2_row_reduction_gbps_per_sm",
                      "l2_row_reduction_bandwidth_gbps")

SMEM_RESERVED_PER_BLOCK = 1024  # bytes of an SM's shared memory the driver reserves for each resident block
MAX_REFILL_NS = 1000.0  # bound on cp_async_refill_ns, tma_refill_ns, wgmma_stage_handshake_ns: work within one stage
MAX_BARRIER_SKEW_NS = 1000.0  # bound on cluster_barrier_skew_ns: blocks of one gang-launched cluster drift apart
# by a fraction of a microsecond between barriers (per-block timelines, results/h200/probe_fused_wgmma_*.json)


@cache
def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals] (0 for one): the integral of 1 - Phi(x)^n over x >= 0
    less that of Phi(x)^n over x < 0, by the midpoint rule (n = 2: 0.564, 4: 1.029, 8: 1.424, 16: 1.766)."""
    if n <= 1:
        return 0.0
    step, total = 1e-3, 0.0
    for i in range(-8000, 8000):
        x = (i + 0.5) * step
        cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
        total += (1.0 - cdf**n if x >= 0 else -(cdf**n)) * step
    return total


class TensorRates(BaseModel):
    """Dense tensor-core throughput of one instruction family, TFLOP/s per dtype (peak sustained)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    bf16: PositiveFloat
    fp16: PositiveFloat


class Hardware(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    description: str = ""
    sm_count: PositiveInt
    clock_mhz: PositiveFloat
    gpc_sm_counts: list[PositiveInt] = Field(min_length=1)
    max_cluster_size: PositiveInt
    portable_cluster_size: PositiveInt
    smem_per_sm_bytes: PositiveInt
    smem_per_block_bytes: PositiveInt
    smem_bandwidth_gbps_per_sm: PositiveFloat
    registers_per_sm: PositiveInt
    max_registers_per_thread: PositiveInt
    max_threads_per_sm: PositiveInt
    max_threads_per_block: PositiveInt
    max_blocks_per_sm: PositiveInt
    tensor_tflops: dict[InstructionFamily, TensorRates] = Field(min_length=1)
    dsm_push_bandwidth_gbps_per_sm: dict[int, PositiveFloat] = Field(default_factory=dict)
    dsm_pull_bandwidth_gbps_per_sm: dict[int, PositiveFloat] = Field(default_factory=dict)
    # bulk copies into a peer's SMEM (cp.async.bulk shared::cluster, fused_wgmma's shuffle and
    # reduce-scatter slices) per sending SM, by cluster size (None: at the push bandwidth)
    dsm_bulk_bandwidth_gbps_per_sm: dict[int, PositiveFloat] | None = None
    dsm_latency_ns: dict[int, PositiveFloat] = Field(default_factory=dict)
    cluster_barrier_ns: dict[int, PositiveFloat] = Field(default_factory=dict)
    l2_bytes: PositiveInt
    l2_bandwidth_gbps: PositiveFloat
    l2_latency_ns: PositiveFloat
    hbm_bytes: PositiveInt
    hbm_bandwidth_gbps: PositiveFloat
    hbm_latency_ns: PositiveFloat
    launch_overhead_us: PositiveFloat
    kernel_gap_us: float = Field(ge=0)
    # ---- optional, used by fusesim.sim only (see fusesim/sim/README.md "Generated-kernel mechanisms")
    # cp.async groups a generated mma.sync pipeline really keeps in flight (None: stages - 1)
    cp_async_groups_in_flight: PositiveInt | None = None
    # bytes per SM clock one SM of a generated mma.sync (cp.async) kernel moves between L2 and
    # itself (None: fusesim.sim.params.SM_GLOBAL_BYTES_PER_CYCLE, as for every other kernel)
    cp_async_bytes_per_sm_cycle: PositiveFloat | None = None
    # a 2-stage generated pipeline (cp.async.wait_group 0): time from a stage's data landing to the
    # next stage's copies being issued (barrier + the producer's address arithmetic) (None: 0)
    cp_async_refill_ns: float | None = Field(default=None, ge=0)
    # a two-stage TMA (wgmma family) pipeline: time from the consumers' release of the free stage
    # (empty-barrier arrive) to the producer thread's next bulk copies being issued (None: 0)
    tma_refill_ns: float | None = Field(default=None, ge=0)
    # the wgmma templates' implicit-im2col producer: from its threads finding a stage empty to the consumers
    # seeing the GEMM0 stage it arrives on then (stages - 2 jobs back) full: the new job's copies issued,
    # cp.async.wait_group, the proxy fence, 128 mbarrier arrivals, the consumers' wake (None: 0)
    wgmma_im2col_arrive_ns: float | None = Field(default=None, ge=0)
    # ... and from the consumers freeing a stage (empty-barrier arrive) to its threads finding it empty,
    # the im2col producer's own reaction, in place of tma_refill_ns for GEMM0's im2col stages (None: tma_refill_ns)
    wgmma_im2col_react_ns: float | None = Field(default=None, ge=0)
    # the mma.sync templates' per-copy implicit im2col loader (load_tile_im2col, before Im2colRows): what
    # one thread spends decoding one 16-byte copy's row and filter tap (four constant divisions, bounds),
    # serial with its warp's MMAs since the same warps issue the copies (None: 0)
    im2col_decode_ns: float | None = Field(default=None, ge=0)
    # the fused_wgmma consumer's shortest pipeline stage by consumer warpgroups (1, 2): full-barrier wait,
    # wgmma issue, commit, wait_group 1, empty-barrier arrive (None: a stage takes its tensor or SMEM time only)
    wgmma_stage_handshake_ns: dict[int, PositiveFloat] | None = None
    # spread of the blocks of a cluster reaching a cluster barrier after work each does on its own: the
    # barrier waits for the latest of n, cluster_barrier_skew_ns x E[max of n standard normals] beyond
    # the typical block (None: the blocks of a cluster arrive together)
    cluster_barrier_skew_ns: float | None = Field(default=None, ge=0)
    # what a barrier.cluster.arrive with .release semantics holds its thread beyond a .relaxed one (a cluster-scope
    # release of the thread's earlier memory operations): charged at fused_wgmma's start barrier, whose arrive
    # comes before the first load is issued, where FUSED_RELAXED_ARRIVE is off; the barriers after work carry it
    # in cluster_barrier_skew_ns, measured on .release barriers (None: 0)
    cluster_release_ns: float | None = Field(default=None, ge=0)
    # fixed cost of every real kernel beyond an empty kernel's launch (None: 0)
    kernel_start_us: float | None = Field(default=None, ge=0)
    # throughput of the generated kernels' fp32 red.global.add into L2 (None: plain L2 bandwidth)
    l2_reduction_bandwidth_gbps: PositiveFloat | None = None
    # red.global.add.v2.f32 of wgmma accumulator fragments (gemm_wgmma's split-K partials) into L2: what
    # one SM sustains, and all SMs together (None: the L2 bandwidth and the SM's load port)
    l2_fragment_reduction_gbps_per_sm: PositiveFloat | None = None
    l2_fragment_reduction_bandwidth_gbps: PositiveFloat | None = None
    # red.global.add.v4.f32 of whole 16-byte row pieces (gemm_wgmma's split-K partials staged in SMEM):
    # per SM and in all (None: the L2 bandwidth and the SM's load port)
    l2_row_reduction_gbps_per_sm: PositiveFloat | None = None
    l2_row_reduction_bandwidth_gbps: PositiveFloat | None = None
    # programmatic dependent launch (gemm_wgmma's second GEMM): from the previous kernel's last block
    # end until the dependent kernel's blocks, launched early, return from griddepcontrol.wait (None:
    # a plain dependent launch, kernel_gap_us then kernel_start_us)
    pdl_release_us: float | None = Field(default=None, ge=0)
    # inter_cluster_reduce's ticket as the generated kernels take it (dsm_comm.cuh inter_cluster_ticket:
    # __threadfence after the red.adds, __syncthreads, one atomicAdd, __syncthreads), once the reds are
    # performed in L2, until the ticket is known (None: one L2 atomic round trip)
    inter_cluster_ticket_ns: float | None = Field(default=None, ge=0)
    # the last block's convert after the ticket (the generated kernels' loop: ld.cg of the fp32 sum,
    # then the bf16 and zero stores that wait for it): a fixed part and one dependent L2 round trip per
    # batch of float4s a thread loads together (capability.CONVERT_BATCH; calibrated with one float4
    # per trip; None: the loads' and stores' bytes only)
    inter_cluster_convert_ns: float | None = Field(default=None, ge=0)
    inter_cluster_convert_round_trip_ns: float | None = Field(default=None, ge=0)
    # gap between dependent kernels replayed from a CUDA graph (None: kernel_gap_us, stream order)
    graph_kernel_gap_us: float | None = Field(default=None, ge=0)
    # how much of what was read is still in L2 when it is read again: the working set a second pass
    # finds half resident (set conflicts, the two L2 partitions; None: l2_bytes, ideal LRU)
    l2_reuse_bytes: PositiveInt | None = None
    # the same for lines loaded with an L2::evict_first policy (the wgmma kernels' weights): the few
    # such lines L2 keeps (None: they compete like any other line, by priority)
    l2_evict_first_bytes: int | None = Field(default=None, ge=0)
    provenance: dict[str, str]

    @model_validator(mode="after")
    def _consistent(self) -> Hardware:
        if sum(self.gpc_sm_counts) != self.sm_count:
            raise ValueError(
                f"gpc_sm_counts: SMs per GPC sum to {sum(self.gpc_sm_counts)}, not sm_count {self.sm_count}"
            )
        if self.max_cluster_size & (self.max_cluster_size - 1):
            raise ValueError(f"max_cluster_size: {self.max_cluster_size} is not a power of two")
        if self.max_cluster_size > max(self.gpc_sm_counts):
            raise ValueError(
                f"max_cluster_size: {self.max_cluster_size} blocks cannot fit in the largest GPC "
                f"({max(self.gpc_sm_counts)} SMs)"
            )
        if self.portable_cluster_size > self.max_cluster_size:
            raise ValueError("portable_cluster_size: larger than max_cluster_size")
        if self.smem_per_block_bytes > self.smem_per_sm_bytes:
            raise ValueError("smem_per_block_bytes: larger than smem_per_sm_bytes")
        for f in L2_REDUCTION_RATES:
            v = getattr(self, f)
            if v is not None and v > self.l2_bandwidth_gbps:
                raise ValueError(f"{f}: larger than l2_bandwidth_gbps (reductions pass the L2)")
        for f in ("l2_reuse_bytes", "l2_evict_first_bytes"):
            if getattr(self, f) is not None and getattr(self, f) > self.l2_bytes:
                raise ValueError(f"{f}: larger than l2_bytes")
        if self.cp_async_refill_ns is not None and self.cp_async_refill_ns > MAX_REFILL_NS:
            raise ValueError(f"cp_async_refill_ns: larger than {MAX_REFILL_NS} ns (a barrier and address arithmetic "
                             "inside one pipeline stage)")
        if self.inter_cluster_ticket_ns is not None and self.inter_cluster_ticket_ns > 10 * self.hbm_latency_ns:
            raise ValueError("inter_cluster_ticket_ns: larger than 10 HBM latencies (a fence and one atomic round trip)")
        for f in ("inter_cluster_convert_ns", "inter_cluster_convert_round_trip_ns"):
            v = getattr(self, f)
            if v is not None and v > 10 * self.hbm_latency_ns:
                raise ValueError(f"{f}: larger than 10 HBM latencies (a fence, or one load round trip and two stores)")
        for f, what in (("wgmma_im2col_arrive_ns", "the producer's work for one stage"),
                        ("wgmma_im2col_react_ns", "a barrier handshake inside one pipeline stage"),
                        ("tma_refill_ns", "a barrier handshake inside one pipeline stage"),
                        ("im2col_decode_ns", "the address arithmetic of one copy")):
            v = getattr(self, f)
            if v is not None and v > MAX_REFILL_NS:
                raise ValueError(f"{f}: larger than {MAX_REFILL_NS} ns ({what})")
        if self.wgmma_stage_handshake_ns is not None:
            if sorted(self.wgmma_stage_handshake_ns) != [1, 2]:
                raise ValueError("wgmma_stage_handshake_ns: needs exactly consumer warpgroups 1 and 2")
            if max(self.wgmma_stage_handshake_ns.values()) > MAX_REFILL_NS:
                raise ValueError(f"wgmma_stage_handshake_ns: larger than {MAX_REFILL_NS} ns (the instruction work "
                                 "of one pipeline stage)")
        if self.cluster_release_ns is not None and self.cluster_release_ns > MAX_BARRIER_SKEW_NS:
            raise ValueError(f"cluster_release_ns: larger than {MAX_BARRIER_SKEW_NS} ns (a cluster-scope release "
                             "fence takes a fraction of a microsecond)")
        if self.cluster_barrier_skew_ns is not None and self.cluster_barrier_skew_ns > MAX_BARRIER_SKEW_NS:
            raise ValueError(f"cluster_barrier_skew_ns: larger than {MAX_BARRIER_SKEW_NS} ns (blocks of one "
                             "cluster drift apart by a fraction of a microsecond between barriers)")
        if self.pdl_release_us is not None and self.pdl_release_us > self.launch_overhead_us + self.kernel_gap_us:
            raise ValueError("pdl_release_us: larger than launch_overhead_us + kernel_gap_us (a dependent launch "
                             "released early cannot wait longer than one launched after the previous kernel)")
        if self.kernel_start_us is not None and self.kernel_start_us > self.launch_overhead_us:
            raise ValueError("kernel_start_us: larger than launch_overhead_us (bounded by an empty kernel's launch)")
        if self.max_threads_per_block > self.max_threads_per_sm:
            raise ValueError("max_threads_per_block: larger than max_threads_per_sm")
        sizes = [2**i for i in range(1, self.max_cluster_size.bit_length()) if 2**i <= self.max_cluster_size]
        for table in CLUSTER_TABLES:
            value = getattr(self, table)
            if value is None:  # an optional table left out
                continue
            keys = sorted(value)
            if keys != sizes:
                raise ValueError(
                    f"{table}: has cluster sizes {keys} but max_cluster_size {self.max_cluster_size} "
                    f"needs exactly {sizes}"
                )
        missing = [k for k in type(self).model_fields if k not in _NO_PROVENANCE and k not in self.provenance
                   and not (k in _OPTIONAL and getattr(self, k) is None)]
        if missing:
            raise ValueError(f"provenance: no entry for {', '.join(missing)}")
        unknown = [k for k in self.provenance if k not in type(self).model_fields]
        if unknown:
            raise ValueError(f"provenance: entry for unknown key {unknown[0]}")
        return self

    # ---- derived quantities -------------------------------------------------------------
    @property
    def cycle_ns(self) -> float:
        return 1e3 / self.clock_mhz

    @property
    def cluster_sizes(self) -> list[int]:
        return [1] + sorted(self.dsm_push_bandwidth_gbps_per_sm)

    def tensor_flops_per_ns(self, family: str, dtype: str = "bf16") -> float:
        """Whole-GPU dense tensor rate in FLOP per ns for an instruction family."""
        rates = self.tensor_tflops.get(family)  # type: ignore[call-overload]
        if rates is None:
            raise KeyError(f"{self.name} has no {family} instructions")
        return getattr(rates, dtype) * 1e3

    def best_instruction(self) -> str:
        return max(self.tensor_tflops, key=lambda f: self.tensor_tflops[f].bf16)

    def dsm_bandwidth_gbps(self, cluster_size: int, push: bool = True) -> float:
        table = self.dsm_push_bandwidth_gbps_per_sm if push else self.dsm_pull_bandwidth_gbps_per_sm
        return table[cluster_size]

    def dsm_bulk_gbps(self, cluster_size: int) -> float:
        """What one SM's bulk copies into peers' SMEM move per second (the push rate when not measured)."""
        bulk = self.dsm_bulk_bandwidth_gbps_per_sm
        return bulk[cluster_size] if bulk else self.dsm_bandwidth_gbps(cluster_size)

    def barrier_skew_ns(self, cluster_size: int) -> float:
        """How long a cluster barrier waits beyond the typical block for the cluster's latest one:
        cluster_barrier_skew_ns x the expected maximum of `cluster_size` standard normals."""
        if not self.cluster_barrier_skew_ns or cluster_size <= 1:
            return 0.0
        return self.cluster_barrier_skew_ns * expected_max_normal(cluster_size)

    def blocks_per_sm(self, smem_bytes: int, threads: int, regs_per_thread: int = 128) -> int:
        """Occupancy: blocks of one kernel that fit on one SM (0 if one block does not fit)."""
        if smem_bytes > self.smem_per_block_bytes or threads > self.max_threads_per_block:
            return 0
        by_smem = self.smem_per_sm_bytes // max(smem_bytes + SMEM_RESERVED_PER_BLOCK, 1)
        by_threads = self.max_threads_per_sm // threads
        by_regs = self.registers_per_sm // max(threads * regs_per_thread, 1)
        return max(0, min(by_smem, by_threads, by_regs, self.max_blocks_per_sm))

    def blocks_fit_together(self, smem_a: int, threads_a: int, regs_a: int, smem_b: int, threads_b: int,
                           regs_b: int) -> bool:
        """Whether one block of each of two kernels fits on one SM together (SMEM with its reserve per
        block, threads, registers)."""
        return (smem_a + smem_b + 2 * SMEM_RESERVED_PER_BLOCK <= self.smem_per_sm_bytes
                and threads_a + threads_b <= self.max_threads_per_sm
                and threads_a * regs_a + threads_b * regs_b <= self.registers_per_sm and self.max_blocks_per_sm >= 2)

    def gpc_cluster_slots(self, cluster_size: int, blocks_per_sm: int = 1) -> list[int]:
        """Clusters that fit at once in each GPC: its blocks on distinct SMs of that GPC."""
        if cluster_size > self.max_cluster_size:
            return [0] * len(self.gpc_sm_counts)
        return [(g // cluster_size) * blocks_per_sm for g in self.gpc_sm_counts]

    def max_active_clusters(self, cluster_size: int, blocks_per_sm: int = 1) -> int:
        return sum(self.gpc_cluster_slots(cluster_size, blocks_per_sm))

    @cached_property
    def fingerprint(self) -> str:
        import hashlib
        import json

        dump = self.model_dump(mode="json")
        for k in _OPTIONAL:  # unset optional fields leave the fingerprint of configs that predate them
            if dump.get(k) is None:
                dump.pop(k, None)
        return hashlib.sha256(json.dumps(dump, sort_keys=True).encode()).hexdigest()[:12]


def load_hardware(path: str | Path, overrides: dict[str, Any] | None = None) -> Hardware:
    """Load and validate a hardware YAML; `overrides` maps dotted YAML paths to new values (sweeps)."""
    raw = read_mapping(path)
    if "cases" in raw and "sm_count" not in raw:
        raise InputError(str(path), None, "a workload (it has cases), not a hardware file: --hw wants a hw_configs YAML")
    for key, value in (overrides or {}).items():
        try:
            raw = set_dotted(raw, key, value)
        except InputError as exc:
            raise InputError(str(path), key, exc.message) from None
    return hardware_from_dict(raw, str(path))


def hardware_from_dict(raw: dict[str, Any], file: str = "<hardware>") -> Hardware:
    try:
        return Hardware.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_error(file, exc) from None
