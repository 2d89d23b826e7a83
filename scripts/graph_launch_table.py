"""Print the CUDA-graph launch trial's table from `fusesim bench --graph-launch` results: per case, the plan of the
run that is fastest as launched (queued), its times as launched and as a CUDA graph's replay, and PyTorch's;
then the geometric means. `sync` holds the host's launch path (the GPU idle when the call comes), `queued` not.

    python3 scripts/graph_launch_table.py OUT/graph_launch_gemm_chains.json OUT/graph_launch_gated_ffn.json ...
"""

from __future__ import annotations

import math
import sys

from fusesim.stored import read_json


def rows(paths: list[str]) -> list[dict]:
    """Per case: the best plan's direct and graph medians (queued, sync) and PyTorch's, where all were timed."""
    out = []
    for path in paths:
        for c in read_json(path)["cases"]:
            timed = [p for p in c.get("plans", []) if (p.get("verify") or {}).get("ok") and p.get("time")]
            if not timed or "pytorch" not in c:
                continue
            best = min(timed, key=lambda p: p["time"]["queued_median_us"])
            g = best.get("time_graph") or {}
            pt = c["pytorch"]
            out.append({"case": c["case"], "strategy": best["strategy"],
                        "q": best["time"]["queued_median_us"], "s": best["time"]["sync_median_us"],
                        "gq": g.get("queued_median_us"), "gs": g.get("sync_median_us"),
                        "graph_ok": (best.get("verify_graph") or {}).get("ok"), "graph_error": best.get("graph_error"),
                        "eq": pt["eager"]["queued_median_us"], "es": pt["eager"]["sync_median_us"],
                        "tq": pt["graph"]["queued_median_us"], "ts": pt["graph"]["sync_median_us"]})
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(paths: list[str]) -> int:
    rs = rows(paths)
    if not rs:
        print("no timed cases")
        return 1
    print(f"{'case':4} {'best':7} {'q':>6} {'s':>6} {'graph q':>7} {'graph s':>7} {'eager s':>7} {'torch graph s':>13}"
          f" {'s-q':>5} {'graph s-q':>9} {'torch graph s-q':>15}")
    for r in rs:
        gq, gs = r["gq"] or float("nan"), r["gs"] or float("nan")
        note = "" if r["graph_ok"] else f"  graph: {r['graph_error'] or 'not verified'}"
        print(f"{r['case']:4} {r['strategy']:7} {r['q']:6.1f} {r['s']:6.1f} {gq:7.1f} {gs:7.1f} {r['es']:7.1f} {r['ts']:13.1f}"
              f" {r['s'] - r['q']:5.1f} {gs - gq:9.1f} {r['ts'] - r['tq']:15.1f}{note}")
    both = [r for r in rs if r["gs"]]
    print(f"geomean over {len(rs)} cases: queued x eager {geomean([r['eq'] / r['q'] for r in rs]):.2f}, "
          f"x torch graphs {geomean([r['tq'] / r['q'] for r in rs]):.2f}; sync as launched x eager "
          f"{geomean([r['es'] / r['s'] for r in rs]):.2f}, x torch graphs {geomean([r['ts'] / r['s'] for r in rs]):.2f}")
    if both:
        print(f"our graphs ({len(both)} cases): sync x eager {geomean([r['es'] / r['gs'] for r in both]):.2f}, "
              f"x torch graphs {geomean([r['ts'] / r['gs'] for r in both]):.2f}; queued x torch graphs "
              f"{geomean([r['tq'] / r['gq'] for r in both]):.2f}; graph / direct queued "
              f"{geomean([r['gq'] / r['q'] for r in both]):.3f}, sync {geomean([r['gs'] / r['s'] for r in both]):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
