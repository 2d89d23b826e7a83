"""The search space, in factored form: loop schedules x cluster shapes x block tiles.

The paper's space (Algorithm 2): 41 loop schedules (which of M, N, K, L are spatial, and the order
of the temporal ones) x (cls_m, cls_n, cls_k, cls_l) in {1, 2, 4, 8, 16}^4 x block tiles (any
multiple of 16 up to each dimension). For GPT-6.7B (M=256, N=16384, K=L=4096) that is
41 x 625 x 16 x 1024 x 256 x 256 = 2.75e13 candidates: it is only ever counted, never listed.
Here cluster values are the powers of two up to the machine's max_cluster_size (a100: only 1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import prod

from fusesim.hardware import Hardware
from fusesim.plan import Schedule
from fusesim.workload import Chain

DIMS = "MNKL"
CLUSTER_VALUES = (1, 2, 4, 8, 16)  # the paper's per-dim choices on Hopper (max cluster 16)
MMA_TILE = 16  # the smallest tile: one 16x16x16 MMA
M_PREDICATED_TILES = (16, 32, 64, 128, 256)  # M may end in a partly empty tile (predicated rows)


@dataclass(frozen=True)
class LoopSchedule:
    """Spatial dims (grid, canonical MNKL order) and the temporal loop order (outer to inner)."""

    spatial: str
    temporal: str

    @property
    def order(self) -> str:
        return self.spatial + self.temporal

    def to_schedule(self) -> Schedule:
        return Schedule(order=self.order, spatial=self.spatial)

    def __str__(self) -> str:
        return f"{self.spatial}|{self.temporal}"


def loop_schedules() -> tuple[LoopSchedule, ...]:
    """The 41 spatial/temporal splits: 1 spatial 24, 2 spatial 12, 3 spatial 4, 4 spatial 1."""
    out = []
    for r in range(1, 5):
        for spatial in itertools.combinations(DIMS, r):
            rest = [d for d in DIMS if d not in spatial]
            for temporal in itertools.permutations(rest):
                out.append(LoopSchedule("".join(spatial), "".join(temporal)))
    return tuple(out)


def cluster_values(hw: Hardware) -> tuple[int, ...]:
    """Per-dim cluster values: powers of two up to the machine's max cluster size (the paper's
    {1, 2, 4, 8, 16} on Hopper; a what-if machine with 32-block clusters gets 32 too)."""
    out, v = [], 1
    while v <= hw.max_cluster_size:
        out.append(v)
        v *= 2
    return tuple(out)


def dim_sizes(chain: Chain) -> dict[str, int]:
    return {"M": chain.m, "N": chain.n, "K": chain.k, "L": chain.l}


def raw_tile_count(size: int) -> int:
    """Block tiles before pruning: every multiple of 16 up to the (16-padded) dimension."""
    return -(-size // MMA_TILE)


def dividing_tiles(size: int, dim: str) -> tuple[int, ...]:
    """Rule 1's tiles: multiples of 16 that divide the dimension.

    M is predicated (its last tile may be partly empty), so M also keeps the powers of two of
    M_PREDICATED_TILES below its 16-padded size, and divides the padded size: M = 49 keeps 16, 32, 64."""
    padded = raw_tile_count(size) * MMA_TILE
    if dim == "M":
        keep = {t for t in range(MMA_TILE, padded + 1, MMA_TILE) if padded % t == 0}
        keep |= {t for t in M_PREDICATED_TILES if t <= padded}
        return tuple(sorted(keep))
    return tuple(t for t in range(MMA_TILE, size + 1, MMA_TILE) if size % t == 0)


@dataclass(frozen=True)
class Space:
    chain: Chain
    hw: Hardware

    @property
    def schedules(self) -> tuple[LoopSchedule, ...]:
        return loop_schedules()

    @property
    def cluster_values(self) -> tuple[int, ...]:
        return cluster_values(self.hw)

    def count(self) -> int:
        """Candidates before any rule: schedules x cluster shapes x block tiles."""
        tiles = prod(raw_tile_count(s) for s in dim_sizes(self.chain).values())
        return len(self.schedules) * len(self.cluster_values) ** 4 * tiles
