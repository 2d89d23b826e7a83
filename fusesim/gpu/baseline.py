"""PyTorch baselines of the unfused chain (eager and CUDA graphs), bf16, on the paper cases.

Runs standalone on a bare GPU machine (needs torch and pyyaml only; no pydantic/simpy):
    python3 -m fusesim.gpu.baseline workloads/paper_gemm_chains.yaml ... --out FILE.json

Chains as PyTorch runs them:
* ffn / gemm_chain: ``act(A @ B) @ D`` (3 kernels; F.gelu is the exact erf form).
* gated_ffn: ``(silu(A @ Bg) * (A @ Bu)) @ D`` (5 kernels, as written in the model code).
* conv_chain: ``relu(conv2d(x, W1, padding=k1//2))`` then a 1x1 ``conv2d`` to OC2, NHWC
  (channels_last) bf16 tensors through cuDNN, i.e. PyTorch's own conv path, not the lowered GEMM.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class RawCase:
    """A case lowered to (M, N, K, L) without pydantic, for machines that lack it."""

    case_id: str
    kind: str
    m: int
    n: int
    k: int
    l: int  # noqa: E741
    activation: str
    gated: bool
    conv: dict[str, int] | None = None

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * (2 if self.gated else 1) + 2 * self.m * self.n * self.l


def raw_cases(path: str | Path) -> list[RawCase]:
    doc = yaml.safe_load(Path(path).read_text())
    out = []
    for c in doc["cases"]:
        kind = c["kind"]
        if kind == "conv_chain":
            b, k1 = c.get("batch", 1), c.get("k1", 1)
            out.append(RawCase(c["id"], kind, b * c["h"] * c["w"], c["oc1"], c["ic"] * k1 * k1, c["oc2"],
                               c.get("activation", "relu"), False,
                               {"batch": b, "h": c["h"], "w": c["w"], "ic": c["ic"], "k1": k1}))
        else:
            act = c.get("activation", {"gated_ffn": "silu", "gemm_chain": "none"}.get(kind, "relu"))
            out.append(RawCase(c["id"], kind, c["m"], c["n"], c["k"], c["l"], act, kind == "gated_ffn"))
    return out


def activation_fn(name: str) -> Any:
    import torch.nn.functional as F  # noqa: N812

    return {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "none": lambda x: x}[name]


def torch_chain(case: RawCase, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """(fn, tensors): the unfused PyTorch chain on fresh bf16 random inputs (never zeros)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch.bfloat16

    def rnd(*shape: int, scale: float = 1.0) -> Any:
        return (torch.randn(*shape, generator=g, device="cuda") * scale).to(dt)

    act = activation_fn(case.activation)
    if case.conv is not None:
        cv = case.conv
        x = rnd(cv["batch"], cv["ic"], cv["h"], cv["w"]).contiguous(memory_format=torch.channels_last)
        w1 = rnd(case.n, cv["ic"], cv["k1"], cv["k1"], scale=case.k ** -0.5).contiguous(
            memory_format=torch.channels_last)
        w2 = rnd(case.l, case.n, 1, 1, scale=case.n ** -0.5).contiguous(memory_format=torch.channels_last)
        pad = cv["k1"] // 2
        F = torch.nn.functional  # noqa: N806

        def fn() -> Any:
            return F.conv2d(act(F.conv2d(x, w1, padding=pad)), w2)

        return fn, {"x": x, "w1": w1, "w2": w2}
    a = rnd(case.m, case.k)
    d = rnd(case.n, case.l, scale=case.n ** -0.5)
    if case.gated:
        bg = rnd(case.k, case.n, scale=case.k ** -0.5)
        bu = rnd(case.k, case.n, scale=case.k ** -0.5)
        silu = activation_fn("silu")

        def fn() -> Any:
            return (silu(a @ bg) * (a @ bu)) @ d

        return fn, {"a": a, "bg": bg, "bu": bu, "d": d}
    b = rnd(case.k, case.n, scale=case.k ** -0.5)

    def fn() -> Any:
        return act(a @ b) @ d

    return fn, {"a": a, "b": b, "d": d}


def measure_case(case: RawCase, flush: Any, reps: int) -> dict[str, Any]:
    from fusesim.gpu.timing import graph_of, time_fn

    fn, _ = torch_chain(case)
    eager = time_fn(fn, flush, reps=reps)
    graph = time_fn(graph_of(fn), flush, reps=reps)
    return {
        "case": case.case_id, "kind": case.kind, "m": case.m, "n": case.n, "k": case.k, "l": case.l,
        "activation": case.activation, "gated": case.gated, "conv": case.conv, "gflop": case.flops / 1e9,
        "eager": eager, "graph": graph,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workloads", nargs="+")
    p.add_argument("--reps", type=int, default=100)
    p.add_argument("--flush", default="read", choices=("read", "write"))
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    import torch

    from fusesim.gpu.env import environment
    from fusesim.gpu.timing import L2Flusher

    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    flush = L2Flusher(args.flush)
    env = environment()
    rows = []
    for wl in args.workloads:
        for case in raw_cases(wl):
            r = measure_case(case, flush, args.reps)
            r["workload"] = wl
            rows.append(r)
            print(f"{case.case_id:5s} eager q/s {r['eager']['queued_median_us']:8.1f} {r['eager']['sync_median_us']:8.1f}"
                  f"  graph q/s {r['graph']['queued_median_us']:8.1f} {r['graph']['sync_median_us']:8.1f} us",
                  flush=True)
    doc = {"what": "PyTorch unfused chain baselines, bf16, L2 flushed before every launch (fusesim/gpu/timing.py)",
           "flush": flush.method, "env": env, "reps": args.reps, "cases": rows}
    Path(args.out).write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
