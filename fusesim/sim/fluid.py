"""Fluid (processor-sharing) bandwidth servers: HBM, L2 and the DSM links.

Why fluid: a memory level is a pipe of fixed bandwidth that every in-flight transfer shares. A
`simpy.Resource` with time = bytes / bandwidth serialises requests and gets latency wrong under
contention; a per-cycle model is far too slow. Here each transfer is a flow with a byte count, a
weight and an optional rate cap (what the requesters can absorb, e.g. the SMs' load ports). The
server splits its capacity max-min fairly (water-filling, weights respected) and recomputes every
flow's finish time only when a flow joins or leaves, so the cost is one event per transfer and the
aggregate bandwidth is exact by construction.

Units: bytes and ns, so a capacity in GB/s is bytes/ns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import simpy

_REL_TOL = 1e-9  # a flow whose remaining bytes are below this fraction of its size has finished
_ABS_TOL_BYTES = 1e-6


@dataclass(eq=False)
class _Flow:
    seq: int
    size_bytes: float
    remaining_bytes: float
    weight: float
    cap_bytes_per_ns: float
    event: simpy.Event | None  # None for a background flow nobody waits on
    rate_bytes_per_ns: float = 0.0
    key: float = field(default=0.0)  # cap / weight: the water-filling order


class FluidServer:
    """A bandwidth shared by concurrent transfers (max-min fair, weighted, per-flow caps)."""

    def __init__(self, env: simpy.Environment, name: str, capacity_bytes_per_ns: float):
        if capacity_bytes_per_ns <= 0:
            raise ValueError(f"{name}: capacity must be positive")
        self.env = env
        self.name = name
        self.capacity_bytes_per_ns = float(capacity_bytes_per_ns)
        self._flows: list[_Flow] = []
        self._seq = 0
        self._last_ns = 0.0
        self._generation = 0
        self._background: _Flow | None = None
        self.bytes_total = 0.0  # bytes ever submitted
        self.busy_ns = 0.0  # time with at least one flow in flight

    # ---- public -------------------------------------------------------------------------
    def transfer(self, nbytes: float, weight: float = 1.0, cap_bytes_per_ns: float = math.inf) -> simpy.Event:
        """Move `nbytes` through the server; the event fires when the last byte has passed."""
        ev = self.env.event()
        if nbytes <= 0:
            ev.succeed()
            return ev
        self._advance()
        self._add(nbytes, weight, cap_bytes_per_ns, ev)
        self._reschedule()
        return ev

    def background(self, nbytes: float) -> None:
        """Queue bytes nobody waits for (L2 write-backs): one extendable flow, not one per eviction."""
        if nbytes <= 0:
            return
        self._advance()
        bg = self._background
        if bg is not None and bg in self._flows:
            bg.remaining_bytes += nbytes
            bg.size_bytes += nbytes
            self.bytes_total += nbytes
        else:
            self._background = self._add(nbytes, 1.0, math.inf, None)
        self._reschedule()

    def drained(self) -> simpy.Event:
        """An event that fires once every queued byte (background included) has passed."""
        ev = self.env.event()
        if not self._flows:
            ev.succeed()
            return ev
        self._advance()
        # a zero-weight marker would never be served; instead wait on the slowest finisher
        waiters = [f.event for f in self._flows if f.event is not None]
        if self._background is not None and self._background in self._flows:
            marker = self.env.event()
            self._background.event = marker
            waiters.append(marker)
        cond = self.env.all_of(waiters)
        cond.callbacks.append(lambda _e: ev.succeed())
        return ev

    @property
    def in_flight(self) -> int:
        return len(self._flows)

    # ---- internals ----------------------------------------------------------------------
    def _add(self, nbytes: float, weight: float, cap: float, ev: simpy.Event | None) -> _Flow:
        self._seq += 1
        f = _Flow(self._seq, float(nbytes), float(nbytes), float(weight), float(cap), ev)
        f.key = f.cap_bytes_per_ns / f.weight
        self._flows.append(f)
        self.bytes_total += nbytes
        return f

    def _advance(self) -> None:
        now = self.env.now
        dt = now - self._last_ns
        if dt > 0 and self._flows:
            self.busy_ns += dt
            for f in self._flows:
                f.remaining_bytes -= f.rate_bytes_per_ns * dt
        self._last_ns = now

    def _allocate(self) -> None:
        """Water-filling: flows capped below their fair share get their cap, the rest split what is left."""
        flows = self._flows
        if len(flows) == 1:
            f = flows[0]
            f.rate_bytes_per_ns = min(self.capacity_bytes_per_ns, f.cap_bytes_per_ns)
            return
        left = self.capacity_bytes_per_ns
        weight = sum(f.weight for f in flows)
        for f in sorted(flows, key=lambda x: (x.key, x.seq)):
            share = left * f.weight / weight
            rate = min(share, f.cap_bytes_per_ns)
            f.rate_bytes_per_ns = rate
            left -= rate
            weight -= f.weight
            if weight <= 0:
                break

    def _reschedule(self) -> None:
        now = self.env.now
        # done: within tolerance, or so close that its finish time rounds to now (late in a long run
        # `now + dt == now` for a tiny dt: waking for it would make no progress, forever)
        finished = [f for f in self._flows
                    if f.remaining_bytes <= max(_ABS_TOL_BYTES, _REL_TOL * f.size_bytes)
                    or (f.rate_bytes_per_ns > 0 and now + f.remaining_bytes / f.rate_bytes_per_ns <= now)]
        if finished:
            self._flows = [f for f in self._flows if f not in finished]
            for f in finished:
                if f.event is not None and not f.event.triggered:
                    f.event.succeed()
        if not self._flows:
            return
        self._allocate()
        dt = min(f.remaining_bytes / f.rate_bytes_per_ns for f in self._flows if f.rate_bytes_per_ns > 0)
        self._generation += 1
        gen = self._generation
        timer = self.env.timeout(max(dt, 0.0))
        timer.callbacks.append(lambda _e: self._wake(gen))

    def _wake(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded by a later join/leave
        self._advance()
        self._reschedule()
