"""Build (in parallel) the kernels of every verified plan row of bench JSON files under the generator switches
each file recorded (its "codegen" block; without one, capability.FRAGMENT_EPILOGUE): the kernels `ncu --all`
profiles, e.g. here into a cache to carry. (`ncu --all` builds them itself, in parallel, since 2026-12-06; the
ncu step of scripts/device_final2.sh ran this first at the final3 counters' run, when it built them one by one.)

    python3 scripts/prebuild_recorded.py results/h200/final3_paper_*.json
"""

from __future__ import annotations

import argparse

from fusesim.stored import read_json


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    from fusesim.gpu.ncu import build_recorded

    built = {r["so"] for f in args.files for _c, r in build_recorded(read_json(f))[0]}
    print(f"{len(built)} distinct kernels built or found")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
