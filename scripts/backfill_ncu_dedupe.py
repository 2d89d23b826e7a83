"""Repair the `ncu` blocks of a bench JSON whose plan list named a plan twice: `fusesim.gpu.ncu --all`
launched such a plan once per row before 2026-12-05 17:10 UTC and gave each row the sum of both
launches (twice the bytes). Each block keeps its recorded per-kernel launches; this keeps the first
launch of each kernel name (`first_launch_of_each`, what `--all` records now) and re-sums, noting so.

    python3 scripts/backfill_ncu_dedupe.py results/h200/estage_paper_conv_chains.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fusesim.gpu.ncu import METRICS, _summed, first_launch_of_each
from fusesim.stored import read_json

NOTE = ("re-summed over the first launch of each kernel by scripts/backfill_ncu_dedupe.py: the plan was listed "
        "twice and `--all` had launched and summed it once per row")


def repair(path: Path) -> int:
    doc = read_json(path)
    fixed = 0
    for case in doc.get("cases", []):
        for row in case.get("plans", []):
            block = row.get("ncu")
            if not isinstance(block, dict) or "per_kernel" not in block:
                continue
            once = first_launch_of_each(block["per_kernel"])
            if len(once) == len(block["per_kernel"]):
                continue
            row["ncu"] = {**_summed(once, block["command"], tuple(m for m in METRICS if m in block)), "note": NOTE}
            fixed += 1
    path.write_text(json.dumps(doc, indent=1))
    return fixed


def main() -> int:
    for f in sys.argv[1:]:
        print(f"{f}: {repair(Path(f))} ncu blocks re-summed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
