"""`fusesim validate --measured DIR --hw HW`: predicted vs measured for the same plans."""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

from fusesim.commands.common import add_format, hardware_arg, print_json, table
from fusesim.yamlio import atomic_write, check_writable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="join measured kernels with simulations of the same plans")
    p.add_argument("--measured", required=True, help="folder (or file) of `fusesim bench` JSON results")
    p.add_argument("--hw", required=True, help="hardware YAML to simulate on (e.g. hw_configs/h200_calibrated.yaml)")
    p.add_argument("--csv", help="write one row per kernel to this CSV")
    p.add_argument("--plot", help="write a predicted-vs-measured scatter plot (PNG)")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fusesim.report.measured import gpu_note  # lazy: fusesim.report pulls in matplotlib
    from fusesim.validate import COUNTERS, join, summarize

    hw = hardware_arg(args.hw)
    for path, flag in ((args.csv, "--csv"), (args.plot, "--plot")):
        if path:
            check_writable(path, flag)
    rows = join(args.measured, hw)
    summary = summarize(rows)
    if args.csv:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["case", "label", "measured_us", "predicted_us", "error"]
                   + [f"{c}_{s}" for c in COUNTERS for s in ("measured", "predicted")] + ["source"])
        for r in rows:
            w.writerow([r.case, r.label, f"{r.measured_us:.4f}", f"{r.predicted_us:.4f}", f"{r.error:.4f}"]
                       + [v for c in COUNTERS for v in (r.measured_bytes.get(c, ""), r.predicted_bytes.get(c, ""))]
                       + [r.source])
        atomic_write(args.csv, buf.getvalue())
    if args.plot:
        _plot(rows, summary, args.plot, hw.name)
    if args.format == "json":
        print_json({"hw": hw.name, "summary": summary,
                    "kernels": [{"case": r.case, "label": r.label, "measured_us": r.measured_us,
                                 "predicted_us": r.predicted_us, "error": r.error,
                                 "measured_bytes": r.measured_bytes, "predicted_bytes": r.predicted_bytes}
                                for r in rows]})
        return 0
    print(table(["case", "plan", "measured us", "predicted us", "error %"],
                [[r.case, r.label, r.measured_us, r.predicted_us, 100 * r.error] for r in rows],
                title=f"predicted ({hw.name}) vs measured"))
    print()
    note = gpu_note([r.gpu for r in rows], hw.name)
    if note:
        print(f"note: {note}")
    s = summary
    if s["kernels"]:
        print(f"kernels {s['kernels']}  MAPE {100 * s['mape']:.1f}%  Pearson {s['pearson']:.3f}  "
              f"within-case Spearman {s['spearman_within_case_mean'] if s['spearman_within_case_mean'] is None else round(s['spearman_within_case_mean'], 3)}  "
              "predicted-best within 3%: " + ("-" if s["best_within_3pct"] is None else
                                              f"{round(s['best_within_3pct'] * s['cases_with_ranking'])} of "
                                              f"{s['cases_with_ranking']} cases"))
        for name, c in s["counters"].items():
            print(f"  {name}: {c['kernels']} kernels, mean |err| {100 * c['mean_abs_err']:.1f}%, max {100 * c['max_abs_err']:.1f}%")
    return 0


def _plot(rows, summary, path: str, hw_name: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5))
    xs = [r.measured_us for r in rows]
    ys = [r.predicted_us for r in rows]
    ax.loglog(xs, ys, "o", ms=4, alpha=0.7)
    lo, hi = min(xs + ys) * 0.8, max(xs + ys) * 1.25
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
    ax.set_xlabel("measured time (us)")
    ax.set_ylabel(f"simulated time on {hw_name} (us)")
    ax.set_title(f"MAPE {100 * summary['mape']:.1f}%, Pearson {summary['pearson']:.3f}")
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, buf.getvalue())
