"""Build (in parallel) the kernels of every verified plan row of bench JSON files under the generator switches
each file recorded (its "codegen" block; without one, capability.FRAGMENT_EPILOGUE): what `ncu --all` then finds
in the cache, when the carried kernels were built with today's switches instead.

    python3 scripts/prebuild_recorded.py results/h200/final3_paper_*.json [--jobs 16]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=16)
    args = ap.parse_args()

    from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.plan import Plan

    srcs = {}
    for f in args.files:
        doc = json.loads(Path(f).read_text())
        with generator_switches(doc.get("codegen") or FRAGMENT_EPILOGUE):
            for c in doc["cases"]:
                for r in c.get("plans", []):
                    if r.get("verify", {}).get("ok") and r.get("plan"):
                        src = generate(Plan.from_dict(r["plan"]))
                        srcs[src.digest] = src
    with ThreadPoolExecutor(args.jobs) as ex:
        list(ex.map(lambda s: build(s, "so"), srcs.values()))
    print(f"{len(srcs)} distinct kernels built or found")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
