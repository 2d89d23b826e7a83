"""The `Plan`: the one schedule that the cost model, the simulator and the code generator all read.

The planner alone decides it; its consumers never re-decide tiling, cluster shape, loop order or
placement. A Plan is frozen and round-trips through dict / JSON / YAML unchanged.

Semantics of a fused (`smem` or `dsm`) kernel, for the chain C = A@B, C' = act(C), E = C'@D
(dims M, N, K, L; the paper's cluster shape (cls_m, cls_n, cls_k, cls_l)):

* Grid: `grid_m` clusters along M (each covers cls_m * block_m rows) x `n_split` clusters along N
  (each owns N / n_split columns of C; their partial E tiles are summed in global memory by
  inter_cluster_reduce). L is never spatial across clusters (pruning rule 4).
* Inside a cluster, per M-row group of P = cls_n * cls_k blocks, a block is (n_i, k_j).
  The cluster walks its N range in `n_passes` chunks of cls_n * block_n columns (temporal N);
  per chunk:
  1. GEMM0: block (n_i, k_j) computes C[block_m, block_n] over the K-slice k_j (K / cls_k wide),
     in steps of block_k, `stages` deep software pipeline.  Gated FFN, gated_mode "sequential":
     gate and up both in the same block (2 accumulators); "mul_exchange": cls_k == 2 and block k_j
     computes branch j over the whole K.
  2. dsm_all_exchange (cls_k > 1): the cls_k blocks of slice n_i combine (add partials, or mul
     silu(gate)*up); every one of them then holds act(C) for slice n_i (bf16).
  3. dsm_shuffle (cls_shuffle = cls_l / cls_k > 1): the P blocks form cls_reduce groups of cls_l
     blocks; a group covers cls_shuffle slices of N; a ring passes the slices so each block
     multiplies its D tile by all cls_shuffle slices.
  4. GEMM1: block accumulates E[block_m, block_l] += C'[block_m, slices] @ D[slices, l-range],
     block_l = L / cls_l (the whole of L is covered by the cls_l blocks of a group).
  After the last chunk:
  5. dsm_reduce_scatter (cls_reduce = cls_n * cls_k / cls_l > 1): the cls_reduce blocks sharing an
     L-range sum their fp32 E partials; each keeps block_l / cls_reduce columns.
  6. inter_cluster_reduce (n_split > 1): atomic add of the partial E into global memory.
  7. Store E (bf16).

`unfused` plans are two kernels (GEMM0 with the activation/gating epilogue, then GEMM1); each
kernel's tiles are in `kernels`, and the intermediate lives in global memory (L2/HBM).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import yaml

from fusesim.workload import Chain

STRATEGIES = ("unfused", "smem", "dsm")
LEVELS = ("reg", "smem", "dsm", "global")
TENSORS = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class ClusterShape:
    """(cls_m, cls_n, cls_k, cls_l): blocks per cluster along each dim (paper notation)."""

    m: int = 1
    n: int = 1
    k: int = 1
    l: int = 1  # noqa: E741

    @property
    def size(self) -> int:
        """Physical blocks per cluster: the same blocks run both GEMMs."""
        return self.m * self.n * self.k

    @property
    def shuffle(self) -> int:
        """cls_shuffle = cls_l / cls_k: blocks per ring-shuffle group."""
        return self.l // self.k

    @property
    def reduce(self) -> int:
        """cls_reduce = cls_n * cls_k / cls_l: groups whose partial E tiles are summed."""
        return (self.n * self.k) // self.l

    def is_consistent(self) -> bool:
        p = self.n * self.k
        return (self.l >= self.k and self.l % self.k == 0 and p % self.l == 0
                and all(v >= 1 for v in (self.m, self.n, self.k, self.l)))

    def as_dict(self) -> dict[str, int]:
        return {"m": self.m, "n": self.n, "k": self.k, "l": self.l}


@dataclass(frozen=True)
class Tiles:
    """Per-block tile sizes. For GEMM kernels of an unfused plan, block_l is 0 (unused)."""

    block_m: int
    block_n: int
    block_k: int
    block_l: int = 0


@dataclass(frozen=True)
class Kernel:
    """One launch: what the code generator instantiates and the simulator dispatches."""

    name: str
    op: str  # "gemm0" (GEMM0 + act/gating epilogue), "gemm1", "fused"
    grid_blocks: int  # total thread blocks
    cluster_size: int  # blocks per cluster (1 = no cluster)
    threads: int
    smem_bytes: int  # dynamic SMEM per block
    tiles: Tiles
    stages: int
    regs_per_thread: int = 128

    @property
    def clusters(self) -> int:
        return self.grid_blocks // self.cluster_size


@dataclass(frozen=True)
class DsmStep:
    """One dsm_comm primitive instance in the plan: who talks, how often, how many bytes."""

    primitive: str  # dsm_all_exchange | dsm_shuffle | dsm_reduce_scatter | inter_cluster_reduce
    op: str  # add | mul | ring | scatter_add | atomic_add
    participants: int  # blocks in one group
    times: int  # executions per block over the kernel (e.g. once per N chunk)
    bytes_per_block: int  # bytes one block sends per execution
    level: str  # "dsm" or "global"


@dataclass(frozen=True)
class Schedule:
    """Loop order outer->inner over M, N, K, L, and which dims are spatial (grid)."""

    order: str = "MNLK"
    spatial: str = "M"

    @property
    def temporal(self) -> str:
        return "".join(d for d in self.order if d not in self.spatial)


@dataclass(frozen=True)
class Placement:
    """Where each tensor lives (highest tier that holds it), one of LEVELS."""

    A: str = "global"
    B: str = "global"
    C: str = "smem"
    D: str = "global"
    E: str = "global"


@dataclass(frozen=True)
class Plan:
    case_id: str
    chain: Chain
    strategy: str
    schedule: Schedule
    cluster: ClusterShape
    tiles: Tiles
    grid_m: int  # clusters along M (fused) / 0 for unfused
    n_split: int  # clusters along N (inter_cluster_reduce when > 1)
    n_passes: int  # temporal chunks of N inside a cluster
    stages: int
    threads: int
    instruction: str  # "mma_sync" | "wgmma"
    gated_mode: str  # "none" | "sequential" | "mul_exchange"
    placement: Placement
    dsm_comm: tuple[DsmStep, ...]
    kernels: tuple[Kernel, ...]
    buildable: bool = True
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def grid_blocks(self) -> int:
        return sum(k.grid_blocks for k in self.kernels)

    def with_(self, **changes: Any) -> Plan:
        return replace(self, **changes)

    # ---- serialization ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cluster"]["shuffle"] = self.cluster.shuffle
        d["cluster"]["reduce"] = self.cluster.reduce
        d["cluster"]["size"] = self.cluster.size
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Plan:
        d = dict(d)
        cl = {k: v for k, v in d["cluster"].items() if k in ("m", "n", "k", "l")}
        return cls(
            **{f.name: d[f.name] for f in fields(cls) if f.name in d and f.name not in _NESTED},
            chain=Chain.from_dict(d["chain"]),
            schedule=Schedule(**d["schedule"]),
            cluster=ClusterShape(**cl),
            tiles=Tiles(**d["tiles"]),
            placement=Placement(**d["placement"]),
            dsm_comm=tuple(DsmStep(**s) for s in d["dsm_comm"]),
            kernels=tuple(Kernel(**{**k, "tiles": Tiles(**k["tiles"])}) for k in d["kernels"]),
            notes=tuple(d.get("notes", ())),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return cls.from_dict(json.loads(text))

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=True)

    @classmethod
    def from_yaml(cls, text: str) -> Plan:
        return cls.from_dict(yaml.safe_load(text))

    def summary(self) -> str:
        c = self.cluster
        return (f"{self.strategy}: cluster ({c.m},{c.n},{c.k},{c.l}) tiles "
                f"{self.tiles.block_m}x{self.tiles.block_n}x{self.tiles.block_k}x{self.tiles.block_l} "
                f"grid {self.grid_m}x{self.n_split} passes {self.n_passes} stages {self.stages}"
                + "".join(f", {k.op} split-K over DSM clusters of {k.cluster_size}"
                          for k in self.kernels if self.strategy == "unfused" and k.cluster_size > 1))


_NESTED = {"chain", "schedule", "cluster", "tiles", "placement", "dsm_comm", "kernels", "notes"}
