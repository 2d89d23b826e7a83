"""`fusesim list`: shipped hardware configs and workloads."""

from __future__ import annotations

import argparse

from fusesim.commands.common import ROOT, add_format, print_json, shipped, table
from fusesim.hardware import load_hardware
from fusesim.workload import load_workload


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list shipped hardware configs and workloads")
    add_format(p)
    p.set_defaults(func=run)


def _ids(cases, width: int = 60) -> str:
    text = " ".join(c.case_id for c in cases)
    return text if len(text) <= width else text[: width - 3].rsplit(" ", 1)[0] + " ..."


def run(args: argparse.Namespace) -> int:
    hws = [(p, load_hardware(p)) for p in shipped("hw_configs")]
    wls = [(p, load_workload(p)) for p in shipped("workloads")]
    if args.format == "json":
        print_json({
            "hardware": [{"file": str(p.relative_to(ROOT)), "name": h.name, "description": h.description,
                          "sm_count": h.sm_count, "max_cluster_size": h.max_cluster_size} for p, h in hws],
            "workloads": [{"file": str(p.relative_to(ROOT)), "name": w.name,
                           "cases": [c.case_id for c in w.cases]} for p, w in wls],
        })
        return 0
    print(table(["file", "name", "SMs", "max cluster", "description"],
                [[str(p.relative_to(ROOT)), h.name, h.sm_count, h.max_cluster_size, h.description] for p, h in hws],
                title="Hardware"))
    print()
    print(table(["file", "name", "cases", "ids"],
                [[str(p.relative_to(ROOT)), w.name, len(w.cases), _ids(w.cases)]
                 for p, w in wls], title="Workloads"))
    return 0
