"""Print the stream_floor calibration group (fusesim/calibrate/cuda/calib.cu) as a table beside the H200's best
generated kernel of each case (final11, benchmarks/kernels.md) and the weights' HBM floor at 4.3 TB/s.

    python3 scripts/stream_floor_table.py results/h200/calibration_stream_floor.json
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from kernels_report import STREAM_FLOOR_RUNS, best_verified  # noqa: E402

from fusesim.stored import read_json  # noqa: E402

FLOOR_BYTES_PER_US = 4.3e6  # Chain.floor_ns's HBM rate


def main(argv: list[str]) -> int:
    raw = read_json(argv[1])
    res = raw["groups"]["stream_floor"]
    if "error" in res:
        print(res["error"])
        return 1
    ours = best_verified(STREAM_FLOOR_RUNS[""])
    print(f"{raw['environment']['gpu']}, {raw['environment']['date_utc']}; us, queued as bench (L2 flushed)")
    print("case ring act  B+D MB  floor  one  two_pdl  two  B_alone  one/floor  ours(final11)")
    for r in res["cases"]:
        mb = (r["b_bytes"] + r["d_bytes"]) / 1e6
        floor = (r["b_bytes"] + r["d_bytes"]) / FLOOR_BYTES_PER_US
        print(f"{r['case']:4} {r['ring']:4} {r.get('act_per_weight', 0):3} {mb:7.1f} {floor:6.2f} {r['one_kernel_us_median']:6.2f} "
              f"{r['two_kernels_pdl_us_median']:7.2f} {r['two_kernels_us_median']:6.2f} {r['b_alone_us_median']:7.2f} "
              f"{r['one_kernel_us_median'] / floor:9.2f}  {ours.get(r['case'], float('nan')):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
