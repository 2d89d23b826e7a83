"""`fusesim show FILE`: the validated, normalized view of a workload, hardware or plan file."""

from __future__ import annotations

import argparse

from fusesim.commands.common import add_format, hardware_arg, print_json, resolve, table
from fusesim.errors import InputError
from fusesim.hardware import hardware_from_dict
from fusesim.workload import workload_from_dict
from fusesim.yamlio import read_mapping


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="validate and show a workload, hardware or plan file")
    p.add_argument("file", help="workload or hardware YAML, or a plan file (JSON or YAML; checked against --hw)")
    p.add_argument("--hw", help="hardware YAML for the roofline floor of each case (default h100_sxm)")
    add_format(p)
    p.set_defaults(func=run)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _is_hardware(raw: dict) -> bool:
    return "cases" not in raw and ("sm_count" in raw or "provenance" in raw)


def run(args: argparse.Namespace) -> int:
    path = resolve(args.file, "workloads")
    if not path.exists():
        path = resolve(args.file, "hw_configs")
    raw = read_mapping(path)
    if "chain" in raw or "plan" in raw:
        return _show_plan(str(path), args)
    if _is_hardware(raw):
        return _show_hw(hardware_from_dict(raw, str(path)), args)
    if "cases" not in raw:
        raise InputError(str(path), "cases", "neither a workload (no 'cases'), a hardware file (no 'sm_count') "
                         "nor a plan (no 'chain')")
    wl = workload_from_dict(raw, str(path))
    hw = hardware_arg(args.hw or "h100_sxm")
    rows = []
    for c in wl.cases:
        floor_ns = c.floor_ns(hw)
        compute_ns = c.flops / hw.tensor_flops_per_ns(hw.best_instruction(), c.dtype)
        rows.append({
            "case": c.case_id, "kind": c.kind, "m": c.m, "n": c.n, "k": c.k, "l": c.l,
            "activation": c.activation, "gated": c.gated, "dtype": c.dtype,
            "gflop": c.flops / 1e9, "min_mb": c.min_bytes / 1e6, "intermediate_mb": c.c_bytes / 1e6,
            "floor_us": floor_ns / 1e3, "bound": "compute" if compute_ns >= floor_ns else "memory",
        })
    if args.format == "json":
        print_json({"workload": wl.name, "file": str(path), "hw": hw.name, "cases": rows})
        return 0
    print(table(["case", "kind", "M", "N", "K", "L", "act", "GFLOP", "min MB", "C MB", "floor us", "bound"],
                [[r["case"], r["kind"], r["m"], r["n"], r["k"], r["l"], r["activation"] + ("*gate" if r["gated"] else ""),
                  r["gflop"], r["min_mb"], r["intermediate_mb"], r["floor_us"], r["bound"]] for r in rows],
                title=f"{wl.name} ({path}) on {hw.name}: floor = max(FLOPs / tensor peak, min bytes / HBM)"))
    return 0


def _show_plan(path: str, args: argparse.Namespace) -> int:
    from fusesim.capability import can_build
    from fusesim.plancheck import load_plan

    hw = hardware_arg(args.hw or "h100_sxm")
    plan = load_plan(path, hw)
    builds, why = can_build(plan)  # recomputed: a file's own `buildable` may be stale or hand-edited
    if args.format == "json":
        print_json({"hw": hw.name, "valid": True, "buildable": builds, "not_buildable_because": why or None,
                    "plan": plan.to_dict()})
        return 0
    print(f"{plan.case_id}: {plan.summary()} -- valid on {hw.name}; "
          + ("the generator builds it" if builds else f"the generator cannot build it: {why}"))
    for k in plan.kernels:
        print(f"  kernel {k.name} ({k.op}): {k.grid_blocks} blocks, cluster {k.cluster_size}, {k.threads} threads, "
              f"{k.smem_bytes} B SMEM, {k.stages} stages")
    for step in plan.dsm_comm:
        print(f"  {step.primitive} ({step.op}): {step.participants} blocks, {step.times}x, "
              f"{step.bytes_per_block} B per block via {step.level}")
    return 0


def _show_hw(hw, args: argparse.Namespace) -> int:
    d = hw.model_dump(mode="json")
    d["derived"] = {
        "max_active_clusters_1_block_per_sm": {cs: hw.max_active_clusters(cs) for cs in hw.cluster_sizes},
        "ridge_flop_per_byte": hw.tensor_flops_per_ns(hw.best_instruction()) / hw.hbm_bandwidth_gbps,
    }
    if args.format == "json":
        print_json(d)
        return 0
    prov = d.pop("provenance")
    derived = d.pop("derived")
    rows = [[k, str(v), _cut(prov.get(k, ""), 70)] for k, v in d.items()]
    print(table(["field", "value", "provenance"], rows, title=f"{hw.name}: {hw.description}"))
    if any(len(p) > 70 for p in prov.values()):
        print("(provenance cut at 70 characters where it ends in '...': --format json prints it whole)")
    print()
    print("derived: clusters resident at once (1 block/SM):",
          ", ".join(f"cs{k}={v}" for k, v in derived["max_active_clusters_1_block_per_sm"].items()),
          f"| ridge {derived['ridge_flop_per_byte']:.0f} FLOP/B")
    return 0
