"""Global memory: HBM behind a capacity-limited, write-back L2 shared by all SMs.

Residency is tracked per *granule* of a tensor (a rectangle no larger than any tile that touches
it, see `TensorLayout`), in LRU order, with a dirty bit:
- a read of a resident granule is a hit and costs L2 bandwidth only; a miss also costs HBM bytes;
- a write allocates the granule dirty without fetching it (whole-tile stores);
- evicting a dirty granule queues its bytes to HBM as a background write-back;
- an intermediate written and read back while resident therefore never reaches HBM, and tensors
  that are dead after the plan (the unfused intermediate C) are dropped, not flushed.
An atomic add is a read-modify-write in L2: L2 write bytes; HBM read bytes if the granule is not
resident and either had been written before (evicted since) or lives in HBM already (`cold=True`:
the inter_cluster_reduce workspace, zeroed by the previous launch, misses on its first touch).

Every load pays latency (HBM latency if any byte missed, L2 latency otherwise) after its bytes
have passed both servers; the L2 flow of a cohort is capped by the load bandwidth of the SMs that
issue it (`params.SM_GLOBAL_BYTES_PER_CYCLE`), so a lone block cannot drain the whole HBM.
"""

from __future__ import annotations

import math
from collections import OrderedDict, defaultdict
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
        if (nrows == gr and ncols == gc and not r0 % gr and not c0 % gc and r0 + nrows <= self.rows
                and c0 + ncols <= (self.col_period or self.cols)):  # the common case: one whole granule
            return [((self.name, r0 // gr, c0 // gc), nrows * ncols * self.elem_bytes)]
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


    def keys_grid(self, r0s: list[int], c0s: list[int], nrows: int, ncols: int,
                  counts: list[int] | None = None) -> tuple[list[tuple[Key, int]], int]:
        """Granules of the tiles at every (r0, c0) pair (zip of r0s/c0s) and their requested bytes
        (times `counts`): the batched form of keys() for a stage of many blocks."""
        gr, gc = self.granule_rows, self.granule_cols
        width = self.col_period or self.cols
        if nrows == gr and ncols == gc and not self.col_period:
            name, eb = self.name, self.elem_bytes
            full = nrows * ncols * eb
            out = []
            total = 0
            for idx, (r0, c0) in enumerate(zip(r0s, c0s, strict=True)):
                if r0 % gr or c0 % gc:
                    break
                if r0 + nrows <= self.rows and c0 + ncols <= width:
                    b = full
                else:
                    b = max(0, min(nrows, self.rows - r0)) * max(0, min(ncols, width - c0)) * eb
                out.append(((name, r0 // gr, c0 // gc), b))
                total += b * (counts[idx] if counts else 1)
            else:
                return out, total
        out = []
        total = 0
        for idx, (r0, c0) in enumerate(zip(r0s, c0s, strict=True)):
            ks = self.keys(r0, c0, nrows, ncols)
            out += ks
            total += sum(b for _k, b in ks) * (counts[idx] if counts else 1)
        return out, total


class L2Cache:
    """LRU over granules with dirty bits and per-tensor eviction priority; returns the HBM traffic
    each access implies.

    Priority models the L2 cache hints generated kernels give (TMA loads with evict_first for
    operands streamed once, evict_last / normal for reused ones; outputs kept): a victim is the
    least recently used granule of the lowest-priority class present. With every tensor in one
    class this is plain LRU. The engine ranks tensors as fusesim.planner.dataflow does (outputs
    first, then inputs by decreasing reuse), so hits follow the same capacity split.
    """

    def __init__(self, capacity_bytes: int, priority: dict[str, int] | None = None,
                 class_capacity: dict[int, int] | None = None):
        self.capacity_bytes = capacity_bytes
        self.priority = dict(priority or {})
        # priority class -> the most bytes it may hold (L2::evict_first lines: L2 keeps only a few)
        self.class_capacity = dict(class_capacity or {})
        self._class_bytes: dict[int, int] = defaultdict(int)
        self._classes: dict[int, OrderedDict[Key, list]] = {}  # priority -> key -> [bytes, dirty]
        self._order: list[int] = []  # priorities present, ascending (eviction order)
        self._by_name: dict[str, OrderedDict[Key, list]] = {}
        self.used_bytes = 0
        self._ever_written: set[Key] = set()

    def _cls(self, key: Key) -> OrderedDict[Key, list]:
        c = self._by_name.get(key[0])
        if c is not None:
            return c
        p = self.priority.get(key[0], 0)
        c = self._classes.get(p)
        if c is None:
            c = self._classes[p] = OrderedDict()
            self._order = sorted(self._classes)
        self._by_name[key[0]] = c
        return c

    def __contains__(self, key: Key) -> bool:
        return key in self._cls(key)

    def read_many(self, granules: Iterable[tuple[Key, int]]) -> tuple[int, int]:
        """read() over a stage's granules: (miss bytes, write-back bytes). The hot path of the
        simulator, hence the local bindings."""
        miss = 0
        wb = 0
        by_name = self._by_name
        cap = self.capacity_bytes
        insert = self._insert
        for key, nbytes in granules:
            c = by_name.get(key[0])
            if c is None:
                c = self._cls(key)
            if key in c:
                c.move_to_end(key)
                continue
            miss += nbytes
            if self.used_bytes + nbytes <= cap and not self.class_capacity:
                c[key] = [nbytes, False]
                self.used_bytes += nbytes
                self._class_bytes[self.priority.get(key[0], 0)] += nbytes
            else:
                wb += insert(c, key, nbytes, False)
        return miss, wb

    def read(self, key: Key, nbytes: int) -> tuple[int, int]:
        """(miss bytes, write-back bytes) of reading one granule."""
        c = self._cls(key)
        if key in c:
            c.move_to_end(key)
            return 0, 0
        return nbytes, self._insert(c, key, nbytes, dirty=False)

    def write(self, key: Key, nbytes: int) -> int:
        """Write-allocate a whole granule dirty; returns write-back bytes of what it evicted."""
        self._ever_written.add(key)
        c = self._cls(key)
        line = c.get(key)
        if line is not None:
            line[1] = True
            c.move_to_end(key)
            return 0
        return self._insert(c, key, nbytes, dirty=True)

    def atomic(self, key: Key, nbytes: int, cold: bool = False) -> tuple[int, int]:
        """Read-modify-write in L2: (HBM read bytes, write-back bytes). `cold`: the tensor's data is
        in HBM, so a first touch fetches it too."""
        c = self._cls(key)
        line = c.get(key)
        if line is not None:
            line[1] = True
            c.move_to_end(key)
            return 0, 0
        fetch = nbytes if cold or key in self._ever_written else 0  # else: zero-initialised output
        self._ever_written.add(key)
        return fetch, self._insert(c, key, nbytes, dirty=True)

    def _insert(self, cls: OrderedDict[Key, list], key: Key, nbytes: int, dirty: bool) -> int:
        if nbytes > self.capacity_bytes:
            return nbytes if dirty else 0  # larger than the whole cache: streams straight through
        wb = 0
        mine = self.priority.get(key[0], 0)
        classes = self._classes
        own_cap = self.class_capacity.get(mine)
        if own_cap is not None:
            if nbytes > own_cap:
                return nbytes if dirty else 0  # the class keeps nothing this large: straight through
            while self._class_bytes[mine] + nbytes > own_cap:  # the class evicts its own LRU line
                _k, (b, d) = cls.popitem(last=False)
                self.used_bytes -= b
                self._class_bytes[mine] -= b
                if d:
                    wb += b
        while self.used_bytes + nbytes > self.capacity_bytes:
            for lowest in self._order:
                victims = classes[lowest]
                if victims:
                    break
            if lowest > mine:
                # only higher-priority lines left: this one would be the next victim, so it
                # passes through (a dirty one goes straight to HBM)
                return wb + (nbytes if dirty else 0)
            _k, (b, d) = victims.popitem(last=False)
            self.used_bytes -= b
            self._class_bytes[lowest] -= b
            if d:
                wb += b
        cls[key] = [nbytes, dirty]
        self.used_bytes += nbytes
        self._class_bytes[mine] += nbytes
        return wb

    def _items(self):
        for p in self._order:
            yield from self._classes[p].items()

    def take_dirty(self, tensors: Iterable[str]) -> int:
        """Dirty bytes of these tensors (they must reach HBM eventually); they become clean."""
        names = set(tensors)
        total = 0
        for key, line in self._items():
            if line[1] and key[0] in names:
                total += line[0]
                line[1] = False
        return total

    def drop(self, tensors: Iterable[str]) -> None:
        """Forget dead tensors (freed intermediates): no write-back."""
        names = set(tensors)
        for p in self._order:
            c = self._classes[p]
            for key in [k for k in c if k[0] in names]:
                b = c.pop(key)[0]
                self.used_bytes -= b
                self._class_bytes[p] -= b


class MemorySystem:
    """HBM and L2 bandwidth servers plus the L2 residency, with byte counters by level and direction."""

    def __init__(self, env: simpy.Environment, hw: Hardware, priority: dict[str, int] | None = None,
                 class_capacity: dict[int, int] | None = None):
        self.env = env
        self.hw = hw
        self.hbm = FluidServer(env, "hbm", hw.hbm_bandwidth_gbps)
        self.l2 = FluidServer(env, "l2", hw.l2_bandwidth_gbps)
        self.cache = L2Cache(hw.l2_reuse_bytes or hw.l2_bytes, priority, class_capacity)
        self.sm_load_bytes_per_ns = params.SM_GLOBAL_BYTES_PER_CYCLE * hw.clock_mhz / 1e3
        # fp32 reductions in L2 (red.global.add): their own throughput when the hardware file states it
        red = hw.l2_reduction_bandwidth_gbps
        self.l2_red = FluidServer(env, "l2_red", red) if red else None
        # red.add.v2 of accumulator fragments (gemm_wgmma split-K): the calibrated all-SM throughput
        frag = hw.l2_fragment_reduction_bandwidth_gbps
        self.l2_frag_red = FluidServer(env, "l2_frag_red", frag) if frag else None
        # red.add.v4 of whole row pieces (gemm_wgmma split-K staged in SMEM): the calibrated all-SM throughput
        rows = hw.l2_row_reduction_bandwidth_gbps
        self.l2_row_red = FluidServer(env, "l2_row_red", rows) if rows else None
        self.bytes = {"hbm_read": 0, "hbm_write": 0, "l2_read": 0, "l2_write": 0}
        self.drain_bytes = 0  # outputs' dirty lines written back after the last kernel

    def _cap(self, sms: int, sm_bytes_per_ns: float | None) -> float:
        return (sm_bytes_per_ns or self.sm_load_bytes_per_ns) * sms if sms > 0 else math.inf

    def _writeback(self, nbytes: int) -> None:
        if nbytes:
            self.bytes["hbm_write"] += nbytes
            self.hbm.background(nbytes)

    def load(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int,
             sm_bytes_per_ns: float | None = None) -> simpy.Event:
        """A cohort's loads of one pipeline stage: `granules` are the distinct granules it touches,
        `l2_bytes` what all its blocks request together (every block reads its own copy from L2);
        `sms` SMs move them, each at most `sm_bytes_per_ns` (default: params.SM_GLOBAL_BYTES_PER_CYCLE)."""
        miss, wb = self.cache.read_many(granules)
        self._writeback(wb)
        self.bytes["l2_read"] += l2_bytes
        self.bytes["hbm_read"] += miss
        l2_ev = self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms, sm_bytes_per_ns))
        if miss:
            return self._after(self.env.all_of([l2_ev, self.hbm.transfer(miss)]), self.hw.hbm_latency_ns)
        return self._after(l2_ev, self.hw.l2_latency_ns)

    def store(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int,
              sm_bytes_per_ns: float | None = None) -> simpy.Event:
        """Whole-tile stores into L2 (write-allocate, write-back)."""
        wb = 0
        for key, nbytes in granules:
            wb += self.cache.write(key, nbytes)
        self._writeback(wb)
        self.bytes["l2_write"] += l2_bytes
        ev = self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms, sm_bytes_per_ns))
        return self._after(ev, self.hw.l2_latency_ns)

    def atomic_add(self, granules: Iterable[tuple[Key, int]], l2_bytes: int, sms: int,
                   cold: bool = False, sm_bytes_per_ns: float | None = None, fp32_red: bool = False,
                   fragments: bool = False, rows: bool = False) -> simpy.Event:
        """Reductions performed by L2 (red.global / atomicAdd / cp.reduce.async.bulk add); `cold` as
        in L2Cache.atomic. Granules may be empty (the inter_cluster_reduce tickets: L2 bytes and
        latency only, residency not tracked). `fp32_red`: the generated kernels' red.global.add.v4.f32,
        limited to `hw.l2_reduction_bandwidth_gbps` when the hardware file states it. `fragments`:
        red.global.add.v2.f32 of wgmma accumulator fragments (gemm_wgmma's split-K), limited per SM to
        `hw.l2_fragment_reduction_gbps_per_sm` and in all to `hw.l2_fragment_reduction_bandwidth_gbps`.
        `rows`: red.global.add.v4.f32 of whole 16-byte row pieces (gemm_wgmma's split-K staged in SMEM),
        limited by `hw.l2_row_reduction_gbps_per_sm` and `hw.l2_row_reduction_bandwidth_gbps`."""
        per_sm = (self.hw.l2_fragment_reduction_gbps_per_sm if fragments else
                  self.hw.l2_row_reduction_gbps_per_sm if rows else None)
        if per_sm:
            sm_bytes_per_ns = min(sm_bytes_per_ns or self.sm_load_bytes_per_ns, per_sm)
        fetch = 0
        wb = 0
        for key, nbytes in granules:
            f, w = self.cache.atomic(key, nbytes, cold)
            fetch += f
            wb += w
        self._writeback(wb)
        self.bytes["l2_write"] += l2_bytes
        self.bytes["hbm_read"] += fetch
        evs = [self.l2.transfer(l2_bytes, weight=1.0, cap_bytes_per_ns=self._cap(sms, sm_bytes_per_ns))]
        if fp32_red and self.l2_red is not None:
            evs.append(self.l2_red.transfer(l2_bytes))
        if fragments and self.l2_frag_red is not None:
            evs.append(self.l2_frag_red.transfer(l2_bytes))
        if rows and self.l2_row_red is not None:
            evs.append(self.l2_row_red.transfer(l2_bytes))
        if fetch:
            evs.append(self.hbm.transfer(fetch))
        return self._after(self.env.all_of(evs), self.hw.l2_latency_ns)

    def flush(self, outputs: Iterable[str], dead: Iterable[str]) -> simpy.Event:
        """End of the plan: outputs' dirty bytes go to HBM, dead intermediates are dropped.

        These bytes are not in `bytes["hbm_write"]` (Nsight Compute does not see them within the
        kernel: L2 is write-back and they leave later) but their time is waited for, so that no
        simulated time beats min bytes / HBM bandwidth; they are reported as `drain_bytes`."""
        self.cache.drop(dead)
        drain = self.cache.take_dirty(outputs)
        self.drain_bytes += drain
        self.hbm.background(drain)
        return self.hbm.drained()

    def _after(self, ev: simpy.Event, latency_ns: float) -> simpy.Event:
        """An event that fires `latency_ns` after `ev` (the pipe's fill time after its last byte).
        Callbacks, not a process: this is on the path of every load."""
        done = self.env.event()
        env = self.env

        def fire(_e: simpy.Event) -> None:
            env.timeout(latency_ns).callbacks.append(lambda _t: done.succeed())

        ev.callbacks.append(fire)
        return done
