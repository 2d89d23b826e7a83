"""Print the stream_floor calibration group (fusesim/calibrate/cuda/calib.cu) as a table beside the H200's best
generated kernel of each case (final11, benchmarks/kernels.md) and the HBM floor at 4.3 TB/s.

    python3 scripts/stream_floor_table.py results/h200/calibration_stream_floor.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fusesim.stored import glob_json, read_json  # noqa: E402

FLOOR_BYTES_PER_US = 4.3e6  # Chain.floor_ns's HBM rate


def best_times(prefix: str = "results/h200/final11_paper_") -> dict[str, float]:
    """Each case's fastest verified plan (queued median, us) in a whole run's bench files."""
    best: dict[str, float] = {}
    for path in glob_json(prefix + "*.json"):
        for case in read_json(path)["cases"]:
            for p in case["plans"]:
                t = (p.get("time") or {}).get("queued_median_us")
                if t and (p.get("verify") or {}).get("ok"):
                    best[case["case"]] = min(best.get(case["case"], t), t)
    return best


def main(argv: list[str]) -> int:
    raw = read_json(argv[1])
    res = raw["groups"]["stream_floor"]
    if "error" in res:
        print(res["error"])
        return 1
    ours = best_times()
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
