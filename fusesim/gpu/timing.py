"""Timing with CUDA events, L2 flushed (by reading 2.5x its size) before every launch.

Two modes, both recorded, because small chains are decided by launch cost:
* ``queued``: flush L2, hold the GPU for HOST_LEAD_US (a spin kernel), record the start event and
  launch at once; the host enqueues the whole call while the GPU is still flushing and spinning, so
  the interval is GPU-side time (kernels + gaps between them) however slow the host's dispatch is.
  (Without the spin, a PyTorch eager chain whose dispatch outlasted the flush measured its host
  gaps: 12-60 us for the same chain in two runs.)
* ``sync``: flush L2, synchronize, then record the start and launch; the interval also holds the
  host's launch cost (what a single call from an idle GPU sees; PyTorch eager dispatch shows here).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


class L2Flusher:
    """Evicts L2 before each timed launch with a buffer of 2.5x the L2 size.

    kind "read" (default) sums the buffer: L2 is left full of *clean* lines of an unrelated
    buffer, so the timed launch finds none of its data and pays no write-back for the flush.
    kind "write" fills it: L2 is left full of dirty lines that the timed launch must write back
    (the method of the first baseline run, kept to compare the two)."""

    def __init__(self, kind: str = "read") -> None:
        import torch

        if kind not in ("read", "write"):
            raise ValueError(kind)
        self.kind = kind
        self.method = f"{kind} 2.5x L2 before every launch"
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (60 << 20)
        self.buf = torch.ones(int(l2 * 2.5) // 4, dtype=torch.float32, device="cuda")
        self.sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.value = 1.0

    def __call__(self) -> None:
        import torch

        if self.kind == "read":
            torch.sum(self.buf, dim=0, out=self.sink)
        else:
            self.value += 1.0
            self.buf.fill_(self.value)


HOST_LEAD_US = 200.0  # GPU time the host gets to enqueue a queued call: more than any eager chain's dispatch


def hold_gpu(us: float) -> None:
    """Enqueue a spin of about `us` microseconds (torch.cuda._sleep counts SM clock cycles)."""
    import torch

    mhz = getattr(torch.cuda.get_device_properties(0), "clock_rate", 0) / 1e3 or 1980.0
    torch.cuda._sleep(int(us * mhz))


def time_fn(fn: Callable[[], Any], flush: L2Flusher, reps: int = 60, warmup: int = 5,
            ahead: int | None = None) -> dict[str, float]:
    """Median, min and spread (us) of `fn` in both modes over `reps` launches each. `ahead`: in queued mode, wait
    for rep i - ahead to end before enqueuing rep i (None: as far ahead as the loop gets; bench's default, which
    times the same as ahead=2 within 1%: results/h200/eager_throttle_probe_h100.json)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out: dict[str, float] = {}
    for mode in ("queued", "sync"):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            if ahead is not None and mode == "queued" and i >= ahead:
                ends[i - ahead].synchronize()
            flush()
            if mode == "sync":
                torch.cuda.synchronize()
            else:
                hold_gpu(HOST_LEAD_US)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        us = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends, strict=True))
        out[f"{mode}_median_us"] = statistics.median(us)
        out[f"{mode}_min_us"] = us[0]
        out[f"{mode}_p90_us"] = us[int(0.9 * (len(us) - 1))]
    out["reps"] = reps
    out["host_lead_us"] = HOST_LEAD_US
    return out


def graph_of(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Capture `fn` (after a warm-up on a side stream) into a CUDA graph; return its replay."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g.replay
