"""`fusesim roofline WORKLOAD --hw HW --out FIG.png`: hierarchical roofline of every case, unfused and fused.

Each strategy's point is the plan `fusesim simulate` runs (the fastest simulated of the planner's
candidates), its time and bytes from the cost model (or the simulator with `--source simulated`);
measured ones from `--measured DIR` (JSON from `fusesim bench` or the PyTorch baselines), when present.
"""

from __future__ import annotations

import argparse
import sys

from fusesim.commands.common import add_format, add_hw, print_json, resolve, table
from fusesim.errors import InputError
from fusesim.yamlio import check_writable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline", help="hierarchical roofline (tensor peak; HBM, L2, DSM) with each case's points",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("workload", help="workload YAML")
    add_hw(p)
    p.add_argument("--case", nargs="+", help="only these case ids")
    p.add_argument("--strategy", nargs="+", choices=("unfused", "smem", "dsm", "best"),
                   default=["unfused", "smem", "dsm"],
                   help="strategies to place (default unfused smem dsm; best: each case's fastest of them)")
    p.add_argument("--source", choices=("predicted", "simulated"), default="predicted",
                   help="time and bytes from the planner's cost model or the simulator")
    p.add_argument("--measured", metavar="DIR", nargs="+",
                   help="measured JSON: folders, files or glob patterns (e.g. 'results/h200/bench_*.json'); "
                        "absent is fine")
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--evaluator", default="fusesim.sweep.evaluate:evaluate_case_simulated", help=argparse.SUPPRESS)
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusesim.hardware import load_hardware
    from fusesim.report import Ceilings, plot_roofline, points_from_rows, roofline_rows, save_png
    from fusesim.report.measured import gpu_note, load_measured
    from fusesim.report.roofline import measured_points

    if not args.out.lower().endswith(".png"):
        raise InputError("<command line>", "--out", "the figure is a PNG: give a file name ending in .png")
    check_writable(args.out, "--out")
    hw = load_hardware(resolve(args.hw, "hw_configs"))
    rows = roofline_rows(args.workload, args.hw, args.case, tuple(args.strategy), evaluator=args.evaluator)
    points = points_from_rows(rows, args.source)
    measured = load_measured(list(args.measured)) if args.measured else None
    mpoints = measured_points(measured.items, points) if measured else []
    wl_name = rows[0]["workload"] if rows else args.workload
    fig = plot_roofline(Ceilings.of(hw), points + mpoints,
                        title=f"{wl_name} on {hw.name}: hierarchical roofline ({args.source})")
    save_png(fig, args.out)
    failed = [r for r in rows if r.get("status") == "error"]
    note = gpu_note([m.gpu for m in measured.items], hw.name, "plotted against") if measured else None
    if args.format == "json":
        print_json({"figure": args.out, "hw": hw.name, "source": args.source,
                    "points": [{"case": p.case, "strategy": p.strategy, "source": p.source, "time_us": p.time_us,
                                "tflops": p.tflops, "intensity": {lv: p.intensity(lv) for lv in p.bytes_by_level}}
                               for p in points + mpoints],
                    "not_placed": [{"case": r["case"], "strategy": r["strategy"], "status": r["status"],
                                    "reason": r.get("error")} for r in rows if r.get("status") != "ok"],
                    "warnings": (measured.warnings if measured else []) + ([f"note: {note}"] if note else [])})
        return 0
    print(table(["case", "strategy", "source", "time us", "TFLOP/s", "FLOP/B hbm", "FLOP/B l2", "FLOP/B dsm"],
                [[p.case, p.strategy, p.source, p.time_us, p.tflops, *[p.intensity(lv) or "-" for lv in
                                                                      ("hbm", "l2", "dsm")]]
                 for p in points + mpoints], title=f"roofline points on {hw.name}"))
    for r in rows:
        if r.get("status") != "ok":
            print(f"not placed: {r['case']}/{r['strategy']}: {r['status']}: {r.get('error')}", file=sys.stderr)
    for w in (measured.warnings if measured else []):
        print(f"warning: {w} (its points left out; the predictions plotted)", file=sys.stderr)
    if note:
        print(f"note: {note}", file=sys.stderr)
    print(f"figure: {args.out}")
    return 1 if failed and len(failed) == len(rows) else 0
