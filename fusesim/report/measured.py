"""Measured kernels from JSON files (`fusesim bench`, the PyTorch baselines), read tolerantly.

The bench format is still settling, so this reader looks for what any of them must say: a case
id, a time, and (when Nsight Compute ran) byte counters. A file it cannot read is reported in
`warnings` and skipped: a roofline with predictions only is better than no roofline.

Recognised shapes: a list of entries, or a mapping with `results`, `kernels`, `cases` or
`measurements` or `rows`; an entry has `case` and either a time (`time_us`, `median_us`, `measured_us`,
`queued_median_us`, `time_ms`, directly or in a `time` / `timing` block) or nested timing blocks (`eager: {queued_median_us}`,
`graph: {...}`), each of which becomes its own measurement named `<strategy>-<block>`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusesim.stored import GZ_SUFFIX, exists, glob_json, logical, read_json

TIME_KEYS_US = ("time_us", "median_us", "measured_us", "queued_median_us", "sync_median_us")
HBM_READ = ("dram__bytes_read.sum", "dram_bytes_read", "hbm_read", "hbm_read_bytes")
HBM_WRITE = ("dram__bytes_write.sum", "dram_bytes_write", "hbm_write", "hbm_write_bytes")
L2_KEYS = ("lts__t_bytes.sum", "l2_bytes", "l2")
DSM_KEYS = ("l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum", "dsm_bytes", "dsm")


@dataclass
class Measurement:
    case: str
    strategy: str
    time_us: float
    hbm_bytes: float | None = None
    l2_bytes: float | None = None
    dsm_bytes: float | None = None
    flops: float | None = None
    source: str = ""
    plan: str = ""  # the plan's summary line when the file gives one (joins by exact schedule)
    plan_dict: dict[str, Any] | None = None  # the full Plan (Plan.from_dict) when the file records it
    code_bytes: int | None = None  # the built kernels' code + parameter banks (bench's `binary` block)
    codegen: dict[str, bool] | None = None  # the generator switches the kernels were built with (None: not recorded)
    hbm_read_bytes: float | None = None  # DRAM read and write bytes apart (hbm_bytes is their sum)
    hbm_write_bytes: float | None = None
    gpu: str = ""  # the GPU the file says it ran on (env.gpu of a bench file), "" when it does not say


@dataclass
class MeasuredSet:
    items: list[Measurement] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def gpu_note(gpus: Sequence[str], hw_name: str, verb: str = "scored on") -> str | None:
    """A line for kernels measured on a GPU the hardware file does not describe, or on several (results/h200/
    holds the H100 runs, *_h100*, beside the H200's); None when they all ran on the file's part."""
    counts = Counter(g or "a GPU the file does not name" for g in gpus)
    part = hw_name.split("_")[0].lower()  # h200_calibrated -> h200
    if len(counts) > 1:
        return (f"the kernels were measured on {len(counts)} GPUs, all {verb} {hw_name}: "
                + "; ".join(f"{g} {n:,}" for g, n in counts.most_common())
                + " (a glob narrows --measured, e.g. 'results/h200/final11_*')")
    if counts and all(gpus) and part not in gpus[0].lower():
        return f"the kernels were measured on {gpus[0]}, {verb} {hw_name}"
    return None


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}/"))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _pick(flat: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for k, v in flat.items():
        leaf = k.rsplit("/", 1)[-1]
        if leaf in keys and isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return None


def _time_us(d: dict[str, Any]) -> float | None:
    for k in TIME_KEYS_US:
        v = d.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return float(v)
    v = d.get("time_ms")
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
        return float(v) * 1e3
    return None


def _entries(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, list):
        return [e for e in doc if isinstance(e, dict)]
    if isinstance(doc, dict):
        for key in ("results", "kernels", "cases", "measurements", "rows"):
            if isinstance(doc.get(key), list):
                return [e for e in doc[key] if isinstance(e, dict)]
        if "case" in doc:
            return [doc]
    return []


def _from_bench_case(e: dict[str, Any], case: str, source: str) -> list[Measurement]:
    """`fusesim bench` shape: a case with `plans: [{strategy, plan, summary, verify, time, ncu}]`
    and `pytorch: {eager, graph}`. Plans that failed verification are not measurements."""
    out = []
    for p in e["plans"]:
        if not isinstance(p, dict) or (isinstance(p.get("verify"), dict) and not p["verify"].get("ok")):
            continue
        sub = {"case": case, **p}
        if isinstance(p.get("time"), dict):
            sub = {**sub, "timing": p["time"]}
        out.extend(_from_entry(sub, source))
    if isinstance(e.get("pytorch"), dict):
        out.extend(_from_entry({"case": case, "strategy": "pytorch", **e["pytorch"]}, source))
    return out


def _from_entry(e: dict[str, Any], source: str) -> list[Measurement]:
    case = e.get("case") or e.get("case_id")
    if not isinstance(case, str):
        return []
    if isinstance(e.get("plans"), list):
        return _from_bench_case(e, case, source)
    plan = e.get("plan")
    strategy = e.get("strategy") or (plan.get("strategy") if isinstance(plan, dict) else None)
    strategy = strategy if isinstance(strategy, str) else "pytorch"
    # counters are measurements: never read them from the plan or the planner's prediction
    flat = _flatten({k: v for k, v in e.items() if k not in ("plan", "predicted", "chain", "binary")})
    hr, hw_ = _pick(flat, HBM_READ), _pick(flat, HBM_WRITE)
    hbm = (hr or 0.0) + (hw_ or 0.0) if hr is not None or hw_ is not None else None
    l2, dsm = _pick(flat, L2_KEYS), _pick(flat, DSM_KEYS)
    flops = float(e["gflop"]) * 1e9 if isinstance(e.get("gflop"), int | float) else None
    summary = e.get("summary") if isinstance(e.get("summary"), str) else ""
    plan_dict = plan if isinstance(plan, dict) and "chain" in plan and "kernels" in plan else None
    binary = e.get("binary")
    code = (int(binary["text_bytes"]) + int(binary.get("const_bytes", 0))
            if isinstance(binary, dict) and isinstance(binary.get("text_bytes"), int) else None)
    out = []
    if isinstance(e.get("verify"), dict) and not e["verify"].get("ok"):
        return []  # a kernel that failed verification is not a measurement
    t = _time_us(e) or next((_time_us(e[k]) for k in ("timing", "time") if isinstance(e.get(k), dict)), None)
    if t is not None:
        out.append(Measurement(case, strategy, t, hbm, l2, dsm, flops, source, summary, plan_dict, code,
                               hbm_read_bytes=hr, hbm_write_bytes=hw_))
    else:
        for block, body in e.items():
            if isinstance(body, dict) and block not in ("plan", "chain", "ncu", "env", "conv", "verify", "timing",
                                                        "time", "binary"):
                tb = _time_us(body)
                if tb is not None:
                    out.append(Measurement(case, f"{strategy}-{block}", tb, hbm, l2, dsm, flops, source, summary,
                                           plan_dict, hbm_read_bytes=hr, hbm_write_bytes=hw_))
    return out


def load_measured(path: str | Path | Sequence[str | Path] | None) -> MeasuredSet:
    """Every measurement under a folder (recursively), in a file, in files matching a glob pattern
    (`results/h200/bench_*.json`), or in a list of any of these; an absent path -> empty."""
    res = MeasuredSet()
    if path is None:
        return res
    if not isinstance(path, str | Path):
        for one in path:
            sub = load_measured(one)
            res.items.extend(sub.items)
            res.warnings.extend(sub.warnings)
        return res
    p = Path(path)
    if any(ch in str(path) for ch in "*?["):
        files = glob_json(path)
        if not files:
            res.warnings.append(f"{path}: no file matches")
    elif p.is_dir():
        files = sorted({logical(f) for suffix in ("*.json", "*.json" + GZ_SUFFIX) for f in p.rglob(suffix)})
    elif not exists(p):
        res.warnings.append(f"{p}: no such file or folder")
        return res
    else:
        files = [p]
    for f in files:
        try:
            doc = read_json(f)
        except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            res.warnings.append(f"{f}: skipped ({type(exc).__name__}: {exc})")
            continue
        got = [m for e in _entries(doc) for m in _from_entry(e, str(f))]
        switches = doc.get("codegen") if isinstance(doc, dict) else None
        env = doc.get("env") if isinstance(doc, dict) else None
        gpu = env.get("gpu") if isinstance(env, dict) else None
        for m in got:
            m.codegen = switches if isinstance(switches, dict) else None
            m.gpu = gpu if isinstance(gpu, str) else ""
        if not got:
            res.warnings.append(f"{f}: no measurements recognised")
        res.items.extend(got)
    return res
