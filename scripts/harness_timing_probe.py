"""Why a standalone harness times a kernel differently from `fusesim bench`'s Python path: variants of the
generated harness, each changing one thing the two paths do differently, timed in turn on one GPU.

    python3 scripts/harness_timing_probe.py DIR --cases G1 C5 G4 S8 G8 --out results/h200/harness_probe.json

DIR holds what `fusesim codegen` wrote (NAME.cu, NAME_main.cu, NAME.plan.json, headers). Variants of NAME_main.cu:
as_is; stream0 (the legacy default stream, as torch's current stream, instead of a created one); flush_ones
(the flush buffer holds non-zero floats, as the runner's torch.ones); arena (every tensor carved from one
allocation at 512-byte offsets instead of a cudaMalloc each); throttle (the host enqueues rep i only once rep
i - 2 has ended: at most two reps ahead of the GPU, where the Python loop's pace keeps it; the template does this
since the probe's run, so the variant is now "unthrottled", which takes it out); flush_1k (the flush
kernel as one block of 1024 threads per SM). Each variant runs `rounds` times, interleaved,
next to the runner's timing of the same plan. Prints a table last.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fusesim.stored import read_json

ARENA = """
char* g_arena = nullptr;
size_t g_arena_used = 0;
template <class T>
cudaError_t arena_malloc(T** p, size_t bytes) {  // probe: one allocation, 512-byte aligned pieces
  if (g_arena == nullptr) {
    const cudaError_t e = cudaMalloc(&g_arena, size_t(6) << 30);
    if (e != cudaSuccess) return e;
  }
  *p = reinterpret_cast<T*>(g_arena + g_arena_used);
  g_arena_used += (bytes + 511) / 512 * 512;
  return cudaSuccess;
}

int run(int argc, char** argv) {"""

VARIANTS = {
    "as_is": [],
    "stream0": [("HCHECK(cudaStreamCreate(&s));", "s = 0;  // probe: the legacy default stream")],
    "flush_ones": [("HCHECK(cudaMemset(flush, 0, flush_n * sizeof(float4)));",
                    "HCHECK(cudaMemset(flush, 0x3f, flush_n * sizeof(float4)));  // probe: non-zero floats")],
    "arena": [("HCHECK(cudaMalloc(&b.", "HCHECK(arena_malloc(&b."), ("int run(int argc, char** argv) {", ARENA)],
    # since this probe, the template does this itself; "unthrottled" removes it
    "unthrottled": [("    if (i >= 2) HCHECK(cudaEventSynchronize(ev[2 * (i - 2) + 1]));\n", "")],
    "flush_1k": [("    l2_read<<<4 * sms, 512, 0, s>>>(flush, flush_n, sink);",
                  "    l2_read<<<sms, 1024, 0, s>>>(flush, flush_n, sink);  // probe: one block of 1024 per SM")],
}


def make_variant(src_dir: Path, name: str, variant: str, out_dir: Path) -> Path:
    from fusesim.codegen.harness import NVCC_FLAGS

    text = (src_dir / f"{name}_main.cu").read_text()
    for old, new in VARIANTS[variant]:
        assert old in text, (variant, old)
        text = text.replace(old, new)
    cu = src_dir / f"{name}_{variant}_probe.cu"
    cu.write_text(text)
    exe = out_dir / f"{name}_{variant}"
    r = subprocess.run(["nvcc", *NVCC_FLAGS, f"-I{src_dir}", "-o", str(exe), str(cu)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"nvcc failed for {cu}:\n{r.stderr[-3000:]}")
    return exe


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    names = {}
    for f in sorted(args.dir.glob("*.plan.json")):
        case = read_json(f)["case_id"]
        if case in args.cases:
            names[case] = f.name[: -len(".plan.json")]
    bin_dir = args.dir / "probe_bin"
    bin_dir.mkdir(exist_ok=True)
    jobs = [(c, n, v) for c, n in names.items() for v in VARIANTS]
    with ThreadPoolExecutor(max_workers=16) as ex:
        exes = dict(zip(jobs, ex.map(lambda j: make_variant(args.dir, j[1], j[2], bin_dir), jobs), strict=True))

    sys.path.insert(0, str(Path(__file__).parent))
    from harness_check import run_runner

    from fusesim.gpu.env import environment
    from fusesim.gpu.timing import L2Flusher

    flush = L2Flusher()
    samples: dict[str, dict[str, list]] = {c: {v: [] for v in [*VARIANTS, "runner"]} for c in names}
    for rnd in range(args.rounds):
        for c, n in names.items():
            for v in VARIANTS:
                r = subprocess.run([str(exes[(c, n, v)]), "--json", "--reps", str(args.reps), "--seed", str(rnd)],
                                   capture_output=True, text=True, timeout=300)
                if r.returncode != 0:
                    raise SystemExit(f"{c} {v}: exit {r.returncode}: {r.stderr[-1000:]}")
                samples[c][v].append(json.loads(r.stdout.strip().splitlines()[-1]))
            samples[c]["runner"].append(run_runner(args.dir / f"{n}.plan.json", args.reps, flush))
    doc = {"what": "harness timing variants vs fusesim bench's Python path", "command": " ".join(sys.argv),
           "environment": environment(), "reps": args.reps, "rounds": args.rounds, "kernels": names,
           "samples": samples}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    cols = [*VARIANTS, "runner"]
    print("queued median us (median over rounds) / p90")
    print(f"{'case':5} " + " ".join(f"{v:>15}" for v in cols))
    for c in names:
        cells = []
        for v in cols:
            med = statistics.median(s["queued_median_us"] for s in samples[c][v])
            p90 = statistics.median(s["queued_p90_us"] for s in samples[c][v])
            cells.append(f"{med:7.2f}/{p90:7.2f}")
        print(f"{c:5} " + " ".join(f"{x:>15}" for x in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
