"""Helpers shared by subcommands: arguments, file discovery, output in table or JSON form."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fusesim.hardware import Hardware, load_hardware
from fusesim.workload import Workload, load_workload

ROOT = Path(__file__).resolve().parents[2]


def add_rank(p: argparse.ArgumentParser) -> None:
    """`--rank`: which plan of a strategy the command takes (planner.search.plan_case(rank=))."""
    p.add_argument("--rank", choices=("simulated", "cost"), default="simulated",
                   help="a strategy's plan: its fastest simulated candidate of those 'best' simulates (default), "
                        "or the cost model's top one (the paper's Algorithm 2 alone; faster, cruder); 'best' itself "
                        "is always the fastest simulated plan over the three, whatever --rank says")


def add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("table", "json"), default="table", help="output form (json is stable)")


def add_hw(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--hw", required=required, help="hardware YAML (e.g. hw_configs/h100_sxm.yaml)")


def resolve(path: str, folder: str) -> Path:
    """Accept a path, or a bare name of a shipped file (h100_sxm -> hw_configs/h100_sxm.yaml)."""
    p = Path(path)
    if p.exists():
        return p
    for cand in (ROOT / folder / path, ROOT / folder / f"{path}.yaml"):
        if cand.exists():
            return cand
    return p


def hardware_arg(path: str) -> Hardware:
    return load_hardware(resolve(path, "hw_configs"))


def workload_arg(path: str) -> Workload:
    return load_workload(resolve(path, "workloads"))


def shipped(folder: str) -> list[Path]:
    return sorted((ROOT / folder).glob("*.yaml"))


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """Plain aligned text table: numbers right-aligned, text left-aligned."""

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 1e-2 and v != 0 else f"{v:,.2f}" if abs(v) < 1e4 else f"{v:,.0f}"
        return str(v)

    cells = [[fmt(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(r[i], int | float) for r in rows) if rows else False for i in range(len(headers))]

    def line(vals: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(vals, widths, numeric, strict=True))

    out = [title] if title else []
    out += [line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells]
    return "\n".join(out)
