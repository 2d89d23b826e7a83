"""Global memory: HBM behind a capacity-limited, write-back L2 shared by all SMs.

Residency is tracked per *granule* of a tensor (a rectangle no larger than any tile that touches
it, see `TensorLayout`), in LRU order, with a dirty bit:
- a read of a resident granule is a hit and costs L2 bandwidth only; a miss also costs HBM bytes;
- a write allocates the granule dirty without fetching it (whole-tile stores);
- evicting a dirty granule queues its bytes to HBM as a background write-back;
- an intermediate written and read back while resident therefore never reaches HBM, and tensors
  that are dead after the plan (the unfused intermediate C) are dropped, not flushed.
An atomic add (inter-cluster reduction) is a read-modify-write in L2: L2 write bytes; HBM read
bytes only if the granule had been written before and was evicted since.

Every load pays latency (HBM latency if any byte missed, L2 latency otherwise) after its bytes
have passed both servers; the L2 flow of a cohort is capped by the load bandwidth of the SMs that
issue it (`params.SM_GLOBAL_BYTES_PER_CYCLE`), so a lone block cannot drain the whole HBM.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import simpy

from fusesim.hardware import Hardware
from fusesim.sim import params
from fusesim.sim.fluid import FluidServer

Key = tuple[str, int, int]


@dataclass(frozen=True)
class TensorLayout:
    """A 2-D tensor in global memory and the granule its L2 residency is tracked at.

    `col_period`: for implicit im2col (conv k1 > 1) the K columns of A repeat over the IC
    channels of the image every IC columns; residency follows the image, not the im2col matrix.
    """

    name: str
    rows: int
    cols: int
    elem_bytes: int
    granule_rows: int
    granule_cols: int
    col_period: int = 0

    def keys(self, r0: int, c0: int, nrows: int, ncols: int) -> list[tuple[Key, int]]:
        """Granules covering the tile [r0:r0+nrows, c0:c0+ncols] with their bytes."""
        if self.col_period:
            c0 = c0 % self.col_period
        gr, gc = self.granule_rows, self.granule_cols
        rmax = min(r0 + nrows, self.rows)
        cmax = min(c0 + ncols, self.col_period or self.cols)
        out: list[tuple[Key, int]] = []
        for i in range(r0 // gr, -(-rmax // gr)):
            h = min((i + 1) * gr, rmax) - max(i * gr, r0)
            for j in range(c0 // gc, -(-cmax // gc)):
                w = min((j + 1) * gc, cmax) - max(j * gc, c0)
                if h > 0 and w > 0:
                    out.append(((self.name, i, j), h * w * self.elem_bytes))
        return out


class L2Cache:
    """LRU over granules with dirty bits; returns the HBM traffic each access implies."""

    def __init__(self, capacity_bytes: int):
        self.capacity_bytes = capacity_bytes
        self._lines: OrderedDict[Key, list] = OrderedDict()  # key -> [bytes, dirty]
        self.used_bytes = 0
        self._ever_written: set[Key] = set()

    def __contains__(self, key: Key) -> bool:
        return key in self._lines

    def read(self, key: Key, nbytes: int) -> tuple[int, int]:
        """(miss bytes, write-back bytes) of reading one granule."""
        line = self._lines.get(key)
        if line is not None:
            self._lines.move_to_end(key)
            return 0, 0
        return nbytes, self._insert(key, nbytes, dirty=False)

    def write(self, key: Key, nbytes: int) -> int:
        """Write-allocate a whole granule dirty; returns write-back bytes of what it evicted."""
        self._ever_written.add(key)
        line = self._lines.get(key)
        if line is not None:
            line[1] = True
            self._lines.move_to_end(key)
            return 0
        return self._insert(key, nbytes, dirty=True)

    def atomic(self, key: Key, nbytes: int) -> tuple[int, int]:
        """Read-modify-write in L2: (HBM read bytes, write-back bytes)."""
        line = self._lines.get(key)
        if line is not None:
            line[1] = True
            self._lines.move_to_end(key)
            return 0, 0
        fetch = nbytes if key in self._ever_written else 0  # first touch: zero-initialised output
        self._ever_written.add(key)
        return fetch, self._insert(key, nbytes, dirty=True)

    def _insert(self, key: Key, nbytes: int, dirty: bool) -> int:
        wb = 0
        lines = self._lines
        while lines and self.used_bytes + nbytes > self.capacity_bytes:
            _k, (b, d) = lines.popitem(last=False)
            self.used_bytes -= b
            if d:
                wb += b
        if nbytes <= self.capacity_bytes:
            lines[key] = [nbytes, dirty]
            self.used_bytes += nbytes
        elif dirty:
            wb += nbytes  # larger than the whole cache: streams straight through
        return wb

    def take_dirty(self, tensors: Iterable[str]) -> int:
        """Dirty bytes of these tensors (they must reach HBM eventually); they become clean."""
        names = set(tensors)
        total = 0
        for key in list(self._lines):
            line = self._lines[key]
            if line[1] and key[0] in names:
                total += line[0]
                line[1] = False
        return total

    def drop(self, tensors: Iterable[str]) -> None:
        """Forget dead tensors (freed intermediates): no write-back."""
        names = set(tensors)
        for key in [k for k in self._lines if k[0] in names]:
            self.used_bytes -= self._lines.pop(key)[0]


class MemorySystem:
    """HBM and L2 bandwidth servers plus the L2 residency, with byte counters by level and direction."""

    def __init__(self, env: simpy.Environment, hw: Hardware):
        self.env = env
        self.hw = hw
        self.hbm = FluidServer(env, "hbm", hw.hbm_bandwidth_gbps)
        self.l2 = FluidServer(env, "l2", hw.l2_bandwidth_gbps)
        self.cache = L2Cache(hw.l2_bytes)
        self.sm_load_bytes_per_ns = params.SM_GLOBAL_BYTES_PER_CYCLE * hw.clock_mhz / 1e3
        self.bytes = {"hbm_read": 0, "hbm_write": 0, "l2_read": 0, "l2_write": 0}

    def _cap(self, sms: int) -> float:
        return self.sm_load_bytes_per_ns * sms if sms > 0 else math.inf

    def _writeback(self, nbytes: int) -> None:
        if nbytes:
            self.bytes["hbm_write"] += nbytes
            self.hbm.background(nbytes)

    def load(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int) -> simpy.Event:
        """A cohort's loads of one pipeline stage: `granules` are the distinct granules it touches,
        `l2_bytes` what all its blocks request together (every block reads its own copy from L2)."""
        miss = 0
        wb = 0
        cache = self.cache
        for key, nbytes in granules:
            m, w = cache.read(key, nbytes)
            miss += m
            wb += w
        self._writeback(wb)
        self.bytes["l2_read"] += l2_bytes
        self.bytes["hbm_read"] += miss
        l2_ev = self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms))
        latency = self.hw.hbm_latency_ns if miss else self.hw.l2_latency_ns
        if miss:
            return self.env.process(self._after(self.env.all_of([l2_ev, self.hbm.transfer(miss)]), latency))
        return self.env.process(self._after(l2_ev, latency))

    def store(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int) -> simpy.Event:
        """Whole-tile stores into L2 (write-allocate, write-back)."""
        wb = 0
        for key, nbytes in granules:
            wb += self.cache.write(key, nbytes)
        self._writeback(wb)
        self.bytes["l2_write"] += l2_bytes
        ev = self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms))
        return self.env.process(self._after(ev, self.hw.l2_latency_ns))

    def atomic_add(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int) -> simpy.Event:
        """Reductions performed by L2 (red.global / cp.reduce.async.bulk add)."""
        fetch = 0
        wb = 0
        for key, nbytes in granules:
            f, w = self.cache.atomic(key, nbytes)
            fetch += f
            wb += w
        self._writeback(wb)
        self.bytes["l2_write"] += l2_bytes
        self.bytes["hbm_read"] += fetch
        evs = [self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms))]
        if fetch:
            evs.append(self.hbm.transfer(fetch))
        return self.env.process(self._after(self.env.all_of(evs), self.hw.l2_latency_ns))

    def flush(self, outputs: Iterable[str], dead: Iterable[str]) -> simpy.Event:
        """End of the plan: outputs' dirty bytes go to HBM, dead intermediates are dropped."""
        self.cache.drop(dead)
        self._writeback(self.cache.take_dirty(outputs))
        return self.hbm.drained()

    def _after(self, ev: simpy.Event, latency_ns: float):
        yield ev
        yield self.env.timeout(latency_ns)
