"""`fusesim sweep`: a grid of hardware variations x cases x strategies, resumable, local or Dask.

    fusesim sweep sweeps/dsm_bandwidth_x_cluster.yaml --jobs 2
    fusesim sweep --hw h100_sxm --vary max_cluster_size=4,8,16 --workloads paper_gemm_chains --out r.csv
    fusesim sweep --out r.csv --plot r.png            # plot an existing result file only
"""

from __future__ import annotations

import argparse
import sys

from fusesim.commands.common import add_format, print_json, table
from fusesim.errors import InputError
from fusesim.yamlio import check_writable

PLOT_METRICS = ("speedup", "gain", "time")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="sweep hardware parameters over workloads (resumable; local or Dask)",
                       description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", nargs="?", help="sweep spec YAML (see sweeps/); or build one with the flags below")
    g = p.add_argument_group("grid from flags (instead of a spec)")
    g.add_argument("--hw", nargs="+", help="base hardware YAML (several: the base becomes an axis)")
    g.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                   help="a hardware field by dotted YAML path and its values (repeatable)")
    g.add_argument("--scale", action="append", default=[], metavar="KEY[+KEY2]=F1,F2",
                   help="multiply fields (or whole tables) by factors; '+' scales several together")
    g.add_argument("--derive", nargs="+", metavar="RULE",
                   help="rules that keep machines valid: cluster_tables gpc_layout smem_reserve l2_rates "
                        "(fusesim/sweep/derive.py)")
    g.add_argument("--workloads", nargs="+", help="workload YAMLs")
    g.add_argument("--name", help="sweep name (default: adhoc-<hash of the flags>)")
    g.add_argument("--evaluator", help="module:function evaluating one task (default: "
                   "fusesim.sweep.evaluate:evaluate_case_simulated, the plan `fusesim simulate` runs; "
                   "fusesim.sweep.evaluate:evaluate_case takes the cost model's top plan per strategy, 4-9x more "
                   "rows per second; fusesim.sweep.evaluate:evaluate_case_unconstrained lets it pick plans today's "
                   "generator cannot build)")
    sel = p.add_argument_group("selection (also narrows a spec)")
    sel.add_argument("--case", nargs="+", help="only these case ids")
    sel.add_argument("--strategy", nargs="+", choices=("unfused", "smem", "dsm", "best"), help="strategies")
    run = p.add_argument_group("running")
    run.add_argument("--out", help="results CSV (default out/sweeps/<name>/results.csv; Parquet alongside)")
    run.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: in this process)")
    run.add_argument("--dask", action="store_true", help="run on a Dask LocalCluster of --jobs workers")
    run.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on an existing Dask scheduler")
    run.add_argument("--retry-errors", action="store_true", help="recompute rows that failed before")
    run.add_argument("--limit", type=int, help="run at most this many tasks now (resume later)")
    run.add_argument("--no-parquet", action="store_true", help="skip the Parquet copy")
    run.add_argument("--traces", metavar="DIR", help="write a Chrome/Perfetto trace of every simulated plan here "
                                                     "(one JSON per row; for small grids)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--dry-run", action="store_true", help="print the grid size and columns; run nothing")
    pl = p.add_argument_group("plotting")
    pl.add_argument("--plot", metavar="FIG.png", help="plot the results (alone: plot an existing --out)")
    pl.add_argument("--plot-x", help="x axis (default: the first swept axis)")
    pl.add_argument("--plot-y", help="y axis of a heatmap (default: the second swept axis, if any)")
    pl.add_argument("--metric", choices=PLOT_METRICS, default="speedup",
                    help="speedup: target over baseline; gain: target vs the first x value; time")
    pl.add_argument("--target", default="dsm", help="strategy plotted (default dsm)")
    pl.add_argument("--baseline", default="unfused", help="baseline strategy for speedup (default unfused)")
    add_format(p)
    p.set_defaults(func=run_cmd)


def _spec(args: argparse.Namespace):  # -> SweepSpec | None
    from fusesim.sweep import load_spec, spec_from_args

    flags = [f for f, v in (("--hw", args.hw), ("--vary", args.vary), ("--scale", args.scale),
                            ("--derive", args.derive), ("--workloads", args.workloads)) if v]
    if args.spec:
        if flags:
            raise InputError("<command line>", flags[0], "give either a SPEC file or grid flags, not both")
        spec = load_spec(args.spec)
        if args.name:
            spec.name = args.name
        if args.evaluator:
            spec.evaluator = args.evaluator
    elif args.hw or args.vary or args.workloads:
        if not args.hw or not args.workloads:
            raise InputError("<command line>", "--hw" if not args.hw else "--workloads",
                             "a grid from flags needs --hw and --workloads")
        spec = spec_from_args(args.hw, args.vary, args.scale, args.workloads, derive=args.derive,
                              name=args.name, evaluator=args.evaluator)
    else:
        return None
    if args.case:
        spec.cases = tuple(args.case)
    if args.strategy:
        spec.strategies = tuple(dict.fromkeys(args.strategy))
    return spec


def run_cmd(args: argparse.Namespace) -> int:
    from fusesim.sweep import columns_for, default_out, run_sweep

    if args.jobs < 1:
        raise InputError("<command line>", "--jobs", "must be >= 1")
    spec = _spec(args)
    if spec is None:
        if not (args.plot and args.out):
            raise InputError("<command line>", "spec", "give a SPEC file, grid flags (--hw --workloads ...), "
                                                       "or --out RESULTS.csv --plot FIG.png to plot")
        return _plot(args, args.out)
    if args.dry_run:
        tasks, total = spec.tasks()
        info = {"name": spec.name, "rows": total, "tasks": len(tasks), "machines": len(spec.hardware_points()),
                "axes": spec.axis_columns, "columns": columns_for(spec), "out": str(args.out or default_out(spec))}
        if args.format == "json":
            print_json(info)
        else:
            print(f"{spec.name}: {info['machines']} machines x {len(spec.chains())} cases x "
                  f"{len(spec.strategies)} strategies = "
                  f"{total} rows in {len(tasks)} tasks; axes: {', '.join(spec.axis_columns) or '-'}; "
                  f"out: {info['out']}")
        return 0
    check_writable(args.out or default_out(spec), "--out")
    if args.traces:
        check_writable(args.traces, "--traces", folder=True)
    if args.plot:
        check_writable(args.plot, "--plot")  # before the sweep, not after it
    summary = run_sweep(spec, args.out, jobs=args.jobs, dask=args.dask, scheduler=args.scheduler,
                        retry_errors=args.retry_errors, progress=not args.quiet and args.format != "json",
                        parquet=not args.no_parquet, limit=args.limit, traces=args.traces)
    if args.format == "json":
        print_json(summary.to_dict())
    else:
        print(table(["sweep", "rows", "done before", "computed", "ok", "infeasible", "errors", "wall s", "rows/s"],
                    [[summary.name, summary.total_rows, summary.already_done, summary.computed, summary.ok,
                      summary.infeasible, summary.errors, summary.wall_s, summary.rows_per_s]]))
        print(f"results: {summary.out}" + (f" (+ {summary.parquet})" if summary.parquet else ""))
        if summary.dropped_torn:
            print("note: dropped a torn last line left by an interrupted run")
        for e in summary.first_errors:
            print(f"error: {e}", file=sys.stderr)
        for w in summary.warnings:
            print(f"warning: {w}", file=sys.stderr)
    if args.plot:
        _plot(args, summary.out)
    return 0


def _plot(args: argparse.Namespace, csv_path: str) -> int:
    from fusesim.report import save_png
    from fusesim.report.sweepplots import plot_sweep

    check_writable(args.plot, "--plot")
    fig = plot_sweep(csv_path, x=args.plot_x, y=args.plot_y, target=args.target, baseline=args.baseline,
                     metric=args.metric)
    save_png(fig, args.plot)
    if args.format != "json":
        print(f"plot: {args.plot}")
    return 0
