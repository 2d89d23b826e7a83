"""Chrome / Perfetto trace: per SM, spans for load / mma / exchange / barrier / store.

Each SM gets three adjacent tracks so that spans on one track never overlap (the trace format
needs nested spans): "SM n" (MMAs, barriers, stores), "SM n loads" (a load's span runs from
when its data starts arriving -- after the previous load's -- to when it lands) and "SM n DSM"
(remote pushes / pulls until the bytes land).

The simulator runs one representative per cohort of identical blocks (see `gpu.py`); a span is
recorded once with the SMs of its cohort and expanded to one event per SM only on export, so
tracing costs little while simulating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TRACK = {"load": 1, "exchange": 2}  # category -> track offset within the SM (0: compute)
MAX_EVENTS = 2_000_000  # beyond this, each cohort's spans go on its first SM only (viewers choke)


@dataclass
class TraceRecorder:
    sm_gpc: list[int]  # GPC of each SM id, for the track names
    spans: list[tuple[tuple[int, ...], str, str, float, float, dict | None]] = field(default_factory=list)
    host: list[tuple[str, str, float, float]] = field(default_factory=list)

    def span(self, sms: tuple[int, ...], name: str, cat: str, start_ns: float, end_ns: float,
             args: dict | None = None) -> None:
        if end_ns > start_ns:
            self.spans.append((sms, name, cat, start_ns, end_ns, args))

    def host_span(self, name: str, cat: str, start_ns: float, end_ns: float) -> None:
        self.host.append((name, cat, start_ns, end_ns))

    def to_chrome(self) -> list[dict[str, Any]]:
        """Trace Event Format, complete ('X') events, timestamps in microseconds."""
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "launcher"}},
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPU (one track per SM)"}},
        ]
        expand = sum(len(s[0]) for s in self.spans) <= MAX_EVENTS
        if not expand:
            out.append({"name": "trace_note", "ph": "i", "s": "g", "pid": 1, "tid": 0, "ts": 0,
                        "args": {"note": "large trace: each wave's spans are shown on its first SM only"}})
        spans = self.spans if expand else [(s[0][:1], *s[1:]) for s in self.spans]
        used = sorted({(sm, TRACK.get(s[2], 0)) for s in spans for sm in s[0]})
        for sm, off in used:
            label = f"SM {sm:3d} (GPC {self.sm_gpc[sm]})" + {0: "", 1: " loads", 2: " DSM"}[off]
            tid = sm * 4 + off
            out.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": label}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": tid, "args": {"sort_index": tid}})
        for name, cat, s, e in self.host:
            out.append({"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": 0, "ts": s / 1e3, "dur": (e - s) / 1e3})
        for sms, name, cat, s, e, args in spans:
            off = TRACK.get(cat, 0)
            for sm in sms:
                ev = {"name": name, "cat": cat, "ph": "X", "pid": 1, "tid": sm * 4 + off, "ts": s / 1e3,
                      "dur": (e - s) / 1e3}
                if args:
                    ev["args"] = args
                out.append(ev)
        return out
