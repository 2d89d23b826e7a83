"""Build and run the calibration microbenchmarks on a GPU machine; write one raw JSON.

Standard library only (torch is optional and imported lazily), so this module runs on a bare GPU
machine that has nvcc and the CUDA driver but none of fusesim's dependencies:

    python3 -m fusesim.calibrate.runner --out results/h200/calibration.json [--ncu] [--torch]

Each benchmark group runs as its own process: a sticky CUDA error or a hang (killed by the timeout)
loses that group only, and the JSON records the error instead.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import hashlib
import io
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CUDA_DIR = Path(__file__).resolve().parent / "cuda"
SOURCE = CUDA_DIR / "calib.cu"
NVCC_FLAGS = ["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v"]

# Order matters only for the log; each group is independent.
GROUPS = ("info", "clock", "occupancy", "gpc", "hbm", "hbm_inflight", "l2", "l2bulk", "l2red", "ticket", "l2reuse", "smem", "dsm", "dsm_bulk", "dsm_lat",
          "barrier", "mma", "wgmma", "wgmma_stage", "launch", "pdl", "icache", "kernel_start", "stream_floor")

# Metrics verified on an H200 with ncu 2025.3 (shared/reference/hopper.md) and the two
# instruction counters that check the SMEM and global-load benchmarks; if ncu rejects the full list
# the runner retries with the verified ones only.
NCU_METRICS_VERIFIED = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum",
    "smsp__sass_inst_executed_op_dshared_ld.sum",
    "smsp__sass_inst_executed_op_dshared_st.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
]
NCU_METRICS_EXTRA = ["smsp__sass_inst_executed_op_shared_ld.sum"]

# SASS opcodes worth counting per kernel: they show what the loops really execute.
SASS_OPS = ("LDS.128", "LDS", "LD.E.128", "LDG.E.128", "LDG.E.STRONG.GPU", "LDG.E.128.STRONG.GPU", "STS.128",
            "ST.E.128", "HMMA.16816.F32.BF16", "HMMA.16816.F32", "HGMMA.64x256x16.F32.BF16",
            "HGMMA.64x256x16.F32", "UCGABAR_ARV", "UCGABAR_WAIT", "CCTL", "MEMBAR")


def _now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _run(cmd: list[str], timeout_s: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=cwd)


def _tool_output(cmd: list[str]) -> str:
    if shutil.which(cmd[0]) is None:
        return "not found"
    try:
        out = _run(cmd, 60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"error: {exc}"
    return (out.stdout or out.stderr).strip()


def environment(argv: list[str]) -> dict[str, Any]:
    """What the measurement ran on; goes into every provenance string."""
    smi = _tool_output(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                        "power.limit,temperature.gpu,pci.bus_id", "--format=csv,noheader"])
    fields = [f.strip() for f in smi.split(",")] if "," in smi else []
    nvcc = _tool_output(["nvcc", "--version"]).splitlines()
    env: dict[str, Any] = {
        "date_utc": _now_utc(),
        "command": " ".join(shlex.quote(a) for a in argv),
        "nvidia_smi": smi,
        "gpu": fields[0] if fields else "unknown",
        "driver": fields[1] if len(fields) > 1 else "unknown",
        "nvcc": nvcc[-2].strip() if len(nvcc) >= 2 else "unknown",
        "ncu": _tool_output(["ncu", "--version"]).splitlines()[-1:] or ["not found"],
        "host": platform.node(),
        "python": platform.python_version(),
    }
    env["ncu"] = env["ncu"][0]
    m = re.search(r"release (\d+\.\d+)", " ".join(nvcc))
    env["cuda"] = m.group(1) if m else "unknown"
    return env


def build(build_dir: Path, nvcc: str = "nvcc") -> tuple[Path, str]:
    """Compile calib.cu once per source hash; returns the binary and the ptxas report."""
    src = SOURCE.read_bytes() + b"".join(p.read_bytes() for p in sorted(CUDA_DIR.glob("*.inc")))
    build_dir = build_dir.resolve()  # nvcc runs in the source folder
    digest = hashlib.sha256(src + " ".join(NVCC_FLAGS).encode()).hexdigest()[:12]
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / f"calib-{digest}"
    log = build_dir / f"calib-{digest}.ptxas.txt"
    if binary.exists() and log.exists():
        return binary, log.read_text()
    out = _run([nvcc, *NVCC_FLAGS, "-o", str(binary), str(SOURCE)], 600, cwd=CUDA_DIR)
    if out.returncode != 0:
        raise RuntimeError(f"nvcc failed:\n{out.stderr[-4000:]}")
    log.write_text(out.stderr)
    return binary, out.stderr


def _read_result(path: Path, stdout: str) -> dict[str, Any]:
    """The group's JSON: from the CALIB_OUT file, else the last stdout line (older binaries)."""
    text = path.read_text() if path.exists() else stdout.strip().splitlines()[-1]
    return json.loads(text)


def run_group(binary: Path, group: str, quick: bool, timeout_s: float = 60) -> dict[str, Any]:
    cmd = [str(binary), group] + (["--quick"] if quick else [])
    result_file = binary.parent / f"result-{group}.json"
    result_file.unlink(missing_ok=True)
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                             env={**os.environ, "CALIB_OUT": str(result_file)})
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s} s", "wall_s": time.monotonic() - t0}
    wall = time.monotonic() - t0
    if out.returncode != 0:
        return {"error": f"exit {out.returncode}: {out.stderr.strip()[-2000:]}", "wall_s": wall}
    try:
        data = _read_result(result_file, out.stdout)
    except (json.JSONDecodeError, IndexError, OSError) as exc:
        return {"error": f"bad JSON: {exc}: {out.stdout[-500:]}", "wall_s": wall}
    res = data["results"]
    res["wall_s"] = wall
    return res


def sass_counts(binary: Path) -> dict[str, Any]:
    """Opcode counts per kernel from cuobjdump, when it exists (not on every build machine)."""
    if shutil.which("cuobjdump") is None:
        return {"error": "cuobjdump not found"}
    out = _run(["cuobjdump", "--dump-sass", str(binary)], 120)
    if out.returncode != 0:
        return {"error": out.stderr[-500:]}
    counts: dict[str, dict[str, int]] = {}
    kernel = None
    for line in out.stdout.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            kernel = m.group(1)
            counts[kernel] = {}
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.x]+)", line)
        if m and kernel:
            op = m.group(1)
            for key in SASS_OPS:
                if op == key or op.startswith(key + "."):
                    counts[kernel][key] = counts[kernel].get(key, 0) + 1
                    break
    return counts


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Rows of `ncu --import ... --csv --page raw`: header, a units row, then one row per kernel."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(header) or (r and r[0] == ""):
            continue  # the units row has an empty ID
        d: dict[str, Any] = {}
        for k, v in zip(header, r, strict=True):
            try:
                d[k] = float(v.replace(",", ""))
            except ValueError:
                d[k] = v
        out.append(d)
    return out


def match_ncu(expect: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pair each expected launch with the next ncu row of that kernel name; ratio = measured/expected."""
    checks = []
    i = 0
    for e in expect:
        while i < len(rows) and e["kernel"] not in str(rows[i].get("Kernel Name", "")):
            i += 1
        if i >= len(rows):
            checks.append({"what": e["what"], "error": "no ncu row"})
            continue
        row = rows[i]
        i += 1
        metrics = {}
        for name, want in e["expect"].items():
            got = row.get(name)
            metrics[name] = {"expected": want, "measured": got,
                             "ratio": (got / want) if isinstance(got, float) and want else None}
        checks.append({"what": e["what"], "kernel": row.get("Kernel Name"),
                       "time_ns": row.get("gpu__time_duration.sum"), "metrics": metrics})
    return checks


def run_ncu(binary: Path, work: Path, timeout_s: float = 180) -> dict[str, Any]:
    """Run the `verify` group under Nsight Compute and compare counts with what the kernels must do."""
    if shutil.which("ncu") is None:
        return {"error": "ncu not found"}
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    for metrics in (NCU_METRICS_VERIFIED + NCU_METRICS_EXTRA, NCU_METRICS_VERIFIED):
        rep = work / "verify"
        cmd = ["ncu", "--clock-control", "none", "--metrics", ",".join(metrics), "-f", "-o", str(rep),
               str(binary), "verify"]
        expect_file = work / "verify-expect.json"
        expect_file.unlink(missing_ok=True)
        t0 = time.monotonic()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                 env={**os.environ, "CALIB_OUT": str(expect_file)})
        except subprocess.TimeoutExpired:
            return {"error": f"ncu timed out after {timeout_s} s"}
        result["wall_s"] = time.monotonic() - t0
        result["command"] = " ".join(cmd[:-2] + ["calib", "verify"])
        if out.returncode != 0:
            result["error"] = f"ncu exit {out.returncode}: {out.stderr.strip()[-1500:]}"
            continue
        try:
            expect = _read_result(expect_file, out.stdout)["results"]["launches"]
        except (json.JSONDecodeError, IndexError, KeyError, OSError) as exc:
            result["error"] = f"verify output unreadable: {exc}: {out.stdout[-800:]}"
            continue
        imp_cmd = ["ncu", "--import", str(rep) + ".ncu-rep", "--csv", "--page", "raw"]
        imp = _run(imp_cmd + ["--print-units", "base"], timeout_s)
        if imp.returncode != 0:  # an ncu without --print-units: units may then be scaled
            imp = _run(imp_cmd, timeout_s)
        rows = parse_ncu_csv(imp.stdout)
        if not rows:
            result["error"] = f"no rows from ncu --import: {imp.stderr[-800:]}"
            continue
        result.pop("error", None)
        result["metrics"] = metrics
        result["checks"] = match_ncu(expect, rows)
        result["csv"] = imp.stdout
        return result
    return result


def run_ncu_reuse(binary: Path, work: Path, quick: bool, timeout_s: float = 300) -> dict[str, Any]:
    """The `l2reuse` group under Nsight Compute without its cache control: DRAM read bytes of every
    launch (per case and rep: the flush read, pass 1, pass 2), so derive takes pass 2's L2 hits
    from bytes rather than from time."""
    if shutil.which("ncu") is None:
        return {"error": "ncu not found"}
    work.mkdir(parents=True, exist_ok=True)
    rep = work / "l2reuse"
    profiler = ["ncu", "--cache-control", "none", "--clock-control", "none", "--kernel-name", "regex:k_reuse",
                "--metrics", "dram__bytes_read.sum,gpu__time_duration.sum", "-f", "-o", str(rep)]
    cmd = [*profiler, str(binary), "l2reuse", *(["--quick"] if quick else [])]
    cases_file = work / "l2reuse-cases.json"
    cases_file.unlink(missing_ok=True)
    t0 = time.monotonic()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                             env={**os.environ, "CALIB_OUT": str(cases_file), "CALIB_REUSE_REPS": "1"})
    except subprocess.TimeoutExpired:
        return {"error": f"ncu timed out after {timeout_s} s"}
    result: dict[str, Any] = {"wall_s": time.monotonic() - t0,
                              "command": " ".join([*profiler, "calib", "l2reuse"])}
    if out.returncode != 0:
        return {**result, "error": f"ncu exit {out.returncode}: {out.stderr.strip()[-1500:]}"}
    try:
        cases = _read_result(cases_file, out.stdout)["results"]
    except (json.JSONDecodeError, IndexError, KeyError, OSError) as exc:
        return {**result, "error": f"l2reuse output unreadable: {exc}: {out.stdout[-800:]}"}
    imp = _run(["ncu", "--import", str(rep) + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base"], timeout_s)
    rows = parse_ncu_csv(imp.stdout)
    if not rows:
        return {**result, "error": f"no rows from ncu --import: {imp.stderr[-800:]}"}
    result["group"] = cases  # the profiled run's own times and case list (they follow the launches)
    result["dram_read_bytes"] = [r.get("dram__bytes_read.sum") for r in rows]
    result["time_ns"] = [r.get("gpu__time_duration.sum") for r in rows]
    return result


def torch_matmul(n: int = 8192, reps: int = 10) -> dict[str, Any]:
    """The library ceiling: torch bf16 n^3 matmul on random data (cuBLAS picks the kernel)."""
    try:
        import torch
    except ImportError:
        return {"error": "torch not installed"}
    if not torch.cuda.is_available():
        return {"error": "no CUDA device for torch"}
    torch.manual_seed(0)
    out: dict[str, Any] = {"n": n, "reps": reps, "torch": torch.__version__}
    for dtype in (torch.bfloat16, torch.float16):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        for _ in range(3):
            torch.matmul(a, b)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.matmul(a, b)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        tf = sorted(2 * n**3 / (t * 1e-3) / 1e12 for t in times)
        out[str(dtype).split(".")[-1]] = {"tflops": tf, "tflops_median": tf[len(tf) // 2]}
        del a, b
    out["method"] = f"torch.matmul of two random {n}x{n} matrices, 3 warm-ups then {reps} CUDA-event timed products"
    return out


def calibrate(out_json: Path, build_dir: Path, *, quick: bool = False, ncu: bool = False,
              with_torch: bool = False, groups: tuple[str, ...] = GROUPS, argv: list[str] | None = None,
              log: Any = sys.stderr) -> dict[str, Any]:
    """Run everything and write the raw JSON; returns it."""
    argv = argv if argv is not None else sys.argv
    t0 = time.monotonic()
    raw: dict[str, Any] = {"schema": "fusesim-calibration/1", "quick": quick, "environment": environment(argv)}
    binary, ptxas = build(build_dir)
    raw["build"] = {"nvcc_flags": NVCC_FLAGS, "source": "fusesim/calibrate/cuda/calib.cu",
                    "ptxas": [ln for ln in ptxas.splitlines() if "Used" in ln or "spill" in ln or "entry" in ln]}
    raw["sass"] = sass_counts(binary)
    raw["groups"] = {}
    for g in groups:
        print(f"[calibrate] {g} ...", file=log, flush=True)
        raw["groups"][g] = run_group(binary, g, quick)
        if "error" in raw["groups"][g]:
            print(f"[calibrate] {g}: {raw['groups'][g]['error'][:300]}", file=log, flush=True)
    if with_torch:
        print("[calibrate] torch matmul ...", file=log, flush=True)
        raw["torch_matmul"] = torch_matmul(reps=3 if quick else 10)
    if ncu:
        print("[calibrate] ncu verify ...", file=log, flush=True)
        raw["ncu"] = run_ncu(binary, build_dir / "ncu")
        if "l2reuse" in groups:
            print("[calibrate] ncu l2reuse ...", file=log, flush=True)
            raw["ncu_l2reuse"] = run_ncu_reuse(binary, build_dir / "ncu", quick)
    raw["environment"]["smi_after"] = _tool_output(
        ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw", "--format=csv,noheader"])
    raw["wall_s"] = time.monotonic() - t0
    out_json.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_json.with_suffix(".tmp")
    tmp.write_text(json.dumps(raw, indent=1))
    os.replace(tmp, out_json)
    return raw


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path, help="raw results JSON")
    p.add_argument("--build-dir", type=Path, default=Path("build/calibrate"))
    p.add_argument("--quick", action="store_true", help="short runs (tests)")
    p.add_argument("--ncu", action="store_true", help="verify instruction counts with Nsight Compute")
    p.add_argument("--torch", action="store_true", help="also time torch bf16 8192^3 matmul")
    p.add_argument("--groups", default=",".join(GROUPS))
    args = p.parse_args(argv)
    calibrate(args.out, args.build_dir, quick=args.quick, ncu=args.ncu, with_torch=args.torch,
              groups=tuple(g for g in args.groups.split(",") if g),
              argv=["python3", "-m", "fusesim.calibrate.runner", *(argv if argv is not None else sys.argv[1:])])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
