"""`fusesim codegen WORKLOAD --hw HW --case ID [--strategy S] --out DIR`: write the .cu of a plan.

The plan is the planner's pick among buildable plans (`plan_case(require_buildable=True)`): by default
the fastest simulated of the candidates `best` simulates, the plan `fusesim simulate` runs for that
strategy; `--rank cost` takes the cost model's top plan; `--plans hand` uses fusesim.codegen.handplans
instead. The .cu lands next to the device headers, with the plan as JSON, so that
`nvcc -gencode=arch=compute_90a,code=sm_90a -I DIR -shared -Xcompiler -fPIC` builds it standalone; and (unless
`--no-harness`) next to a host harness, NAME_main.cu, and a Makefile: `make && ./NAME` verifies the kernel against
a float32 reference and times it on a Hopper GPU without Python (fusesim.codegen.harness). Every case's plan and
source are made before anything is written: a refused case leaves the folder as it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fusesim.commands.common import add_format, add_rank, hardware_arg, print_json, workload_arg
from fusesim.errors import InputError
from fusesim.yamlio import check_writable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("codegen", help="write the CUDA source of a case's plan")
    p.add_argument("workload", nargs="?", help="workload YAML (or give --plan files instead)")
    p.add_argument("--hw", required=True, help="hardware YAML")
    p.add_argument("--case", action="append", help="case id (repeatable; required with a workload)")
    p.add_argument("--plan", action="append", metavar="PLAN.json",
                   help="write this plan file's kernels instead (repeatable; checked against --hw and against what "
                        "the generator builds)")
    p.add_argument("--strategy", action="append", choices=("unfused", "smem", "dsm", "best"),
                   help="whose plan to write (repeatable; default best: the fastest simulated of the three)")
    add_rank(p)
    p.add_argument("--plans", default="planner", choices=("planner", "hand"),
                   help="planner: the plan `fusesim simulate` runs (default); hand: the generator's own "
                        "enumeration, by a rough latency score")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--no-harness", action="store_true",
                   help="write the kernel .cu only, not its standalone harness NAME_main.cu and the Makefile")
    add_format(p)
    p.set_defaults(func=run)


def _plan_for(ch, hw, strategy: str, source: str, rank: str = "simulated", file: str | None = None):
    from fusesim.capability import can_build
    from fusesim.codegen.handplans import candidates, rough_time_us

    if source == "planner":
        try:
            from fusesim.planner import plan_case  # type: ignore[attr-defined]
        except ImportError:
            source = "hand"
        else:
            # "best": the planner's simulation-ranked pick among buildable plans; one strategy: its top plan
            res = plan_case(ch, hw, strategies=(strategy,), top_k=1, require_buildable=True, rank=rank)
            scored = [sp for sp in res.plans.get(strategy, []) if can_build(sp.plan)[0]]
            if not scored:
                why = "; ".join(f"{s}: {r}" for s, r in res.infeasible.items()) or "none of its plans is buildable"
                raise InputError(file, "strategy", f"no buildable {strategy} plan from the planner ({why})",
                                 case=ch.case_id)
            return scored[0].plan, "planner"
    cands = candidates(ch)
    pool = [p for s, ps in cands.items() if strategy in ("best", s) for p in ps]
    if not pool:
        raise InputError(file, "strategy", f"no buildable hand plan for strategy {strategy}", case=ch.case_id)
    return min(pool, key=rough_time_us), "hand"


def _plans(args: argparse.Namespace, hw) -> list[tuple[object, object, str]]:
    """(chain, plan, source) to write: each --plan file (checked against the hardware and the generator), or the
    planner's (or the hand enumeration's) plan per case and strategy of the workload."""
    from fusesim.capability import can_build
    from fusesim.plancheck import load_plan

    if args.plan:
        if args.workload or args.case or args.strategy:
            flag = "workload" if args.workload else "--case" if args.case else "--strategy"
            raise InputError("<command line>", flag, "give a workload with --case, or --plan files, not both")
        out = []
        for path in args.plan:
            plan = load_plan(path, hw)
            ok, why = can_build(plan)
            if not ok:
                raise InputError(path, "plan", f"the generator cannot build this plan: {why}", case=plan.case_id)
            out.append((plan.chain, plan, "file"))
        return out
    if not args.workload or not args.case:
        raise InputError("<command line>", "workload" if not args.workload else "--case",
                         "give a workload file and --case ID (or --plan files)")
    wl = workload_arg(args.workload)
    return [(ch, *_plan_for(ch, hw, strategy, args.plans, args.rank, args.workload))
            for ch in wl.select(args.case) for strategy in dict.fromkeys(args.strategy or ["best"])]


def run(args: argparse.Namespace) -> int:
    from fusesim.codegen import generate
    from fusesim.codegen.build import write_source
    from fusesim.codegen.harness import write_harness

    hw = hardware_arg(args.hw)
    out = Path(args.out)
    check_writable(out, "--out", folder=True)
    made, names = [], set()
    for ch, plan, source in _plans(args, hw):
        src = generate(plan)
        if src.name not in names:  # best is one of the others: write it once
            names.add(src.name)
            made.append((ch, plan, source, src))
    written = []
    try:
        for ch, plan, source, src in made:
            path = write_source(src, out)
            (out / f"{src.name}.plan.json").write_text(plan.to_json())
            entry = {"case": ch.case_id, "strategy": plan.strategy, "source": source, "family": src.family,
                     "file": str(path), "plan": plan.summary()}
            if not args.no_harness:
                entry["harness"] = str(write_harness(plan, src, out))
            written.append(entry)
    except OSError as exc:  # the file system refused (check_writable passed: permissions as root, a full disk)
        raise InputError(str(out), "--out", f"cannot write: {exc.strerror or exc}") from None
    if "wgmma" not in hw.tensor_tflops:  # not a Hopper-class file: the plans fit it, the binaries do not
        print(f"note: the kernels target sm_90a (Hopper) only; {hw.name} has no wgmma, so the plans were chosen "
              f"for {hw.name}, but the files build and run only on a Hopper GPU", file=sys.stderr)
    if args.format == "json":
        print_json({"files": written})
    else:
        for w in written:
            print(f"{w['case']}: {w['strategy']} ({w['source']} plan, {w['family']} template) -> {w['file']}")
        if not args.no_harness and written:
            print(f"standalone check and timing: cd {out} && make && ./NAME (see NAME_main.cu)")
    return 0
