"""Chrome / Perfetto trace: one track per SM, spans for load / mma / exchange / barrier / store.

The simulator runs one representative per cohort of identical blocks (see `gpu.py`); a span is
recorded once with the SMs of its cohort and expanded to one event per SM only on export, so
tracing costs little while simulating.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        used = sorted({sm for s in self.spans for sm in s[0]})
        for sm in used:
            out.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": sm,
                        "args": {"name": f"SM {sm:3d} (GPC {self.sm_gpc[sm]})"}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": sm, "args": {"sort_index": sm}})
        for name, cat, s, e in self.host:
            out.append({"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": 0, "ts": s / 1e3, "dur": (e - s) / 1e3})
        for sms, name, cat, s, e, args in self.spans:
            for sm in sms:
                ev = {"name": name, "cat": cat, "ph": "X", "pid": 1, "tid": sm, "ts": s / 1e3, "dur": (e - s) / 1e3}
                if args:
                    ev["args"] = args
                out.append(ev)
        return out
