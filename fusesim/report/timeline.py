"""Timeline (Gantt) plots of simulator traces in the Chrome trace format.

`fusesim simulate --trace FILE.json` writes Chrome/Perfetto events (one track per SM; spans for
load, mma, exchange, barrier). Perfetto is the tool for exploring one; this draws a static picture
of the first tracks for a notebook or a report. Usable as a command:

    python -m fusesim.report.timeline TRACE.json --out timeline.png [--tracks 24]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fusesim.errors import InputError
from fusesim.report.figures import new_figure, save_png
from fusesim.stored import read_json

PALETTE = tuple(matplotlib.colormaps["tab20"].colors) + tuple(matplotlib.colormaps["tab20b"].colors)


def load_trace(path: str | Path) -> list[dict[str, Any]]:
    """Events of a Chrome trace file: a JSON list, or an object with `traceEvents`."""
    p = Path(path)
    try:
        doc = read_json(p)
    except FileNotFoundError:
        raise InputError(str(path), None, "no such trace file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), None, f"not a Chrome trace JSON ({type(exc).__name__})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError(str(path), "traceEvents", "no event list")
    return [e for e in events if isinstance(e, dict)]


def spans(events: list[dict[str, Any]]) -> tuple[dict[tuple[Any, Any], list[tuple[float, float, str]]],
                                                 dict[tuple[Any, Any], str]]:
    """(pid, tid) -> [(start_us, dur_us, name)] from complete ("X") and begin/end ("B"/"E") events."""
    tracks: dict[tuple[Any, Any], list[tuple[float, float, str]]] = defaultdict(list)
    names: dict[tuple[Any, Any], str] = {}
    open_: dict[tuple[Any, Any], list[tuple[float, str]]] = defaultdict(list)
    for e in events:
        ph, key = e.get("ph"), (e.get("pid", 0), e.get("tid", 0))
        if ph == "M" and e.get("name") == "thread_name":
            names[key] = str((e.get("args") or {}).get("name", key[1]))
        elif ph == "M" and e.get("name") == "process_name":
            names.setdefault(key, str((e.get("args") or {}).get("name", key[0])))
        elif ph == "X" and isinstance(e.get("ts"), int | float):
            tracks[key].append((float(e["ts"]), float(e.get("dur") or 0.0), str(e.get("name", "?"))))
        elif ph == "B" and isinstance(e.get("ts"), int | float):
            open_[key].append((float(e["ts"]), str(e.get("name", "?"))))
        elif ph == "E" and open_[key] and isinstance(e.get("ts"), int | float):
            ts, name = open_[key].pop()
            tracks[key].append((ts, float(e["ts"]) - ts, name))
    return tracks, names


def _sort_key(k: tuple[Any, Any]) -> tuple[str, float, str]:
    pid, tid = k
    return (str(pid), float(tid) if isinstance(tid, int | float) else float("inf"), str(tid))


def plot_timeline(events: list[dict[str, Any]], max_tracks: int = 24, title: str | None = None) -> Figure:
    """Gantt chart of the first `max_tracks` tracks, one colour per span name."""
    tracks, names = spans(events)
    keys = sorted(tracks, key=_sort_key)[:max_tracks]
    fig = new_figure(9.0, max(2.5, 0.25 * len(keys) + 1.5))
    ax = fig.add_subplot(1, 1, 1)
    kinds = sorted({n for k in keys for _, _, n in tracks[k]})
    color = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(kinds)}
    t0 = min((s for k in keys for s, _, _ in tracks[k]), default=0.0)
    for row, k in enumerate(keys):
        by_name: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for s, d, n in tracks[k]:
            by_name[n].append((s - t0, max(d, 1e-3)))
        for n, bars in by_name.items():
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=color[n], linewidth=0)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([names.get(k, f"{k[0]}:{k[1]}") for k in keys], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("Time (µs from first event)")
    ax.set_ylabel("Track (SM / unit)")
    shown = f"{len(keys)} of {len(tracks)} tracks" if len(tracks) > len(keys) else f"{len(keys)} tracks"
    ax.set_title(title or f"Simulated timeline ({shown})")
    if kinds:
        fig.legend(handles=[Patch(color=color[n], label=n) for n in kinds], fontsize=7,
                   loc="outside lower center", ncol=min(5, len(kinds)))
    return fig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fusesim.report.timeline", description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="Chrome trace JSON (fusesim simulate --trace)")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--tracks", type=int, default=24, help="tracks to draw (default 24)")
    args = ap.parse_args(argv)
    try:
        save_png(plot_timeline(load_trace(args.trace), args.tracks), args.out)
    except InputError as exc:
        sys.stderr.write(f"fusesim: error: {exc.line()}\n")
        return 2
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
