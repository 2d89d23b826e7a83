"""`fusesim calibrate`: measure the GPU with microbenchmarks, write raw JSON and a calibrated hardware YAML.

On a GPU machine it builds and runs fusesim/calibrate/cuda/calib.cu (and optionally Nsight Compute and
a torch matmul) and writes the raw measurements; with --from it only converts a committed raw JSON, so
the YAML can be regenerated and tested without a GPU.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from fusesim.commands.common import ROOT, add_format, print_json, resolve, table
from fusesim.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="measure a GPU with microbenchmarks and write a calibrated hardware YAML")
    p.add_argument("--out", required=True, help="calibrated hardware YAML to write (e.g. hw_configs/h200_calibrated.yaml)")
    p.add_argument("--base", default="h200", help="hardware YAML whose unmeasured fields are kept (default h200)")
    p.add_argument("--from", dest="from_json", action="append",
                   help="convert this raw calibration JSON instead of measuring; repeat for a later run of some "
                        "groups (its fields replace the earlier ones')")
    p.add_argument("--raw", help="where a fresh measurement's raw JSON goes (default results/<base name>/calibration.json)")
    p.add_argument("--quick", action="store_true", help="short benchmark runs (tests, smoke checks)")
    p.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute instruction-count verification")
    p.add_argument("--no-torch", action="store_true", help="skip the torch bf16 8192^3 matmul ceiling")
    p.add_argument("--build-dir", default=str(ROOT / "build" / "calibrate"), help="nvcc build cache")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from fusesim.yamlio import check_writable, read_mapping

    base_path = resolve(args.base, "hw_configs")
    base = read_mapping(base_path)
    check_writable(args.out, "--out")
    more: list[tuple[dict, Path]] = []
    if args.from_json:
        for i, name in enumerate(args.from_json):
            one = read_mapping(Path(name))
            if not isinstance(one.get("groups"), dict) or "environment" not in one:
                raise InputError(str(name), "groups", "not a fusesim calibration JSON (no 'groups'/'environment')")
            if i == 0:
                raw_path, raw = Path(name), one
            else:
                more.append((one, Path(name)))
    else:
        missing = [t for t in ("nvcc", "nvidia-smi") if shutil.which(t) is None]
        if missing:
            raise InputError(None, "--from", f"no {' or '.join(missing)} on PATH: measuring needs a GPU machine; "
                             "convert a raw JSON with --from instead")
        from fusesim.calibrate.runner import calibrate

        raw_path = Path(args.raw) if args.raw else ROOT / "results" / str(base.get("name", "gpu")) / "calibration.json"
        check_writable(raw_path, "--raw")
        argv = ["fusesim", *sys.argv[1:]] if sys.argv and sys.argv[0].endswith("fusesim") else ["fusesim calibrate"]
        raw = calibrate(raw_path, Path(args.build_dir), quick=args.quick, ncu=not args.no_ncu,
                        with_torch=not args.no_torch, argv=argv)
    from fusesim.calibrate.writer import write_calibrated

    hw, d = write_calibrated(raw, base_path, args.out, _rel(raw_path), [(r, _rel(p)) for r, p in more])
    if args.format == "json":
        print_json({"out": str(args.out), "raw": str(raw_path), "hw": hw.name,
                    "fields": {k: {"value": json.loads(json.dumps(v)), "base": base.get(k), "how": d.how[k]}
                               for k, v in d.values.items()},
                    "gpc": d.gpc.get("layout"), "notes": d.notes, "ncu": d.ncu})
        return 0
    rows = [[k, _short(base.get(k)), _short(v), d.how[k][:60]] for k, v in d.values.items()]
    print(table(["field", "base", "calibrated", "how"], rows, title=f"{args.out}: {hw.name} from {raw_path}"))
    for n in d.notes:
        print(f"note: {n}")
    return 0


def _short(v: object) -> str:
    s = str(v)
    return s if len(s) <= 48 else s[:45] + "..."


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)
