"""The standalone harness `fusesim codegen` writes next to each kernel (NAME_main.cu + Makefile).

Without nvcc: what the CLI writes and what the harness encodes. With nvcc (CI): the harnesses of four
template families (gated, conv, split-K, cluster forms among them) build into executables for sm_90a.
On a Hopper GPU (marked gpu): they run, verify, time, and their dumped inputs and output agree with the
float32 PyTorch reference `fusesim bench` uses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fusesim.codegen import generate
from fusesim.codegen.build import write_source
from fusesim.codegen.handplans import representative_plans
from fusesim.codegen.harness import nvcc_command, render_harness, write_harness
from fusesim.gpu.env import hopper_missing

ROOT = Path(__file__).resolve().parents[1]
# one per template family, covering gating, implicit im2col (two images), split-K, cluster exchanges
FAMILIES = ("gemm_gated_im2col_predicated", "gemm_wgmma_conv3x3_split_predicated", "fused_dsm_mul_exchange",
            "fused_wgmma_conv3x3_cls_k2_two_images")


def _codegen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fusesim", "codegen", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_codegen_writes_a_harness_and_makefile_per_kernel(tmp_path):
    out = tmp_path / "cu"
    r = _codegen(str(ROOT / "workloads" / "paper_gated_ffn.yaml"), "--hw", str(ROOT / "hw_configs" / "h200.yaml"),
                 "--case", "S2", "--strategy", "unfused", "--format", "json", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (entry,) = json.loads(r.stdout)["files"]
    kernel, harness = Path(entry["file"]), Path(entry["harness"])
    assert harness == out / f"{kernel.stem}_main.cu" and harness.exists()
    text = harness.read_text()
    assert f'#include "{kernel.name}"' in text
    assert "HM = 128, HN = 5632, HK = 2048, HL = 2048" in text  # S2's shapes
    assert "GATED = true" in text and "CONV = false" in text
    assert "fs_launch(args, s)" in text and "fill_nan" in text
    make = (out / "Makefile").read_text()
    assert "-gencode=arch=compute_90a,code=sm_90a" in make and "%_main.cu" in make

    bare = tmp_path / "bare"
    r = _codegen(str(ROOT / "workloads" / "paper_gated_ffn.yaml"), "--hw", str(ROOT / "hw_configs" / "h200.yaml"),
                 "--case", "S2", "--strategy", "unfused", "--no-harness", "--out", str(bare), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not list(bare.glob("*_main.cu")) and not (bare / "Makefile").exists()
    assert list(bare.glob("S2_unfused_*.cu"))


def test_a_refused_case_leaves_nothing_written(tmp_path):
    """G5 has no buildable smem hand plan: the case before it, G1, is not written either."""
    out = tmp_path / "cu"
    wl = ROOT / "workloads" / "paper_gemm_chains.yaml"
    r = _codegen(str(wl), "--hw", str(ROOT / "hw_configs" / "h200.yaml"), "--case", "G1", "--case", "G5",
                 "--strategy", "smem", "--plans", "hand", "--out", str(out), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert str(wl) in line and "case G5" in line and "field strategy" in line
    assert not out.exists()


def test_harness_encodes_the_conv_geometry_and_activation():
    plan = representative_plans()["gemm_wgmma_conv3x3_m64_two_images"]
    cv = plan.chain.conv
    text = render_harness(plan, generate(plan))
    assert "CONV = true" in text and f"BATCH = {cv.batch}, IH = {cv.h}, IW = {cv.w}, IC = {cv.ic}, K1 = {cv.k1}" in text
    act = {"none": 0, "relu": 1, "gelu": 2, "silu": 3}[plan.chain.activation]
    assert f"ACT = {act};" in text
    assert f"FLOPS = {plan.chain.gemm0_flops + plan.chain.gemm1_flops}.0" in text


def _build(plan, out: Path) -> Path:
    src = generate(plan)
    write_source(src, out)
    write_harness(plan, src, out)
    nvcc = shutil.which("nvcc") or "nvcc"
    # the user's path: the written Makefile (nvcc_command's line where make is missing)
    cmd = ["make", f"NVCC={nvcc}", src.name] if shutil.which("make") else nvcc_command(src, nvcc)
    res = subprocess.run(cmd, cwd=out, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-3000:]
    return out / src.name


@pytest.mark.nvcc
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_harnesses_build_for_sm90a(tmp_path):
    plans = representative_plans()
    with ThreadPoolExecutor(max_workers=2) as ex:
        exes = list(ex.map(lambda n: _build(plans[n], tmp_path / n), FAMILIES))
    for exe in exes:
        assert exe.exists() and exe.stat().st_size > 100_000, exe


# ---- on a Hopper GPU ---------------------------------------------------------------------------------------

def _torch_reference(plan, dump: Path):
    """E from the harness's dumped inputs, by the float32 PyTorch chain of fusesim.gpu.runner."""
    import numpy as np
    import torch
    import torch.nn.functional as F  # noqa: N812

    ch = plan.chain

    def load(name: str, *shape: int):
        raw = np.fromfile(dump / f"{name}.bin", dtype=np.uint16).astype(np.int32) << 16
        return torch.from_numpy(raw.view(np.float32).reshape(shape)).cuda()

    cv = ch.conv
    b0 = load("B0", ch.k, ch.n)
    if cv is not None:
        x = load("A", cv.batch, cv.h, cv.w, cv.ic).permute(0, 3, 1, 2)
        w1 = b0.reshape(cv.k1, cv.k1, cv.ic, ch.n).permute(3, 2, 0, 1)
        c32 = F.conv2d(x, w1, padding=cv.k1 // 2).permute(0, 2, 3, 1).reshape(ch.m, ch.n)
        a = None
    else:
        a = load("A", ch.m, ch.k)
        c32 = a @ b0
    if ch.gated:
        c32 = F.silu(c32) * (a @ load("B1", ch.k, ch.n))
    else:
        c32 = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "none": lambda v: v}[ch.activation](c32)
    ref = c32 @ load("D", ch.n, ch.l)
    return load("E", ch.m, ch.l), ref


@pytest.mark.gpu
@pytest.mark.skipif(hopper_missing() is not None, reason="needs torch, nvcc and an sm_90 GPU")
@pytest.mark.parametrize("name", FAMILIES)
def test_harness_verifies_times_and_agrees_with_torch(tmp_path, name):
    import torch

    plan = representative_plans()[name]
    exe = _build(plan, tmp_path / "cu")
    dump = tmp_path / "dump"
    dump.mkdir()
    r = subprocess.run([str(exe), "--json", "--reps", "20", "--seed", "7", "--dump", str(dump)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(r.stdout)
    assert res["verified"] is True and res["finite"] is True and res["launch_flag"] == 0
    assert max(res["rel_err"]) < 1e-2
    assert res["queued_median_us"] > 0 and res["sync_median_us"] >= res["queued_median_us"] * 0.5
    out, ref = _torch_reference(plan, dump)
    assert bool(torch.isfinite(out).all())
    err = float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref))
    assert err < 1e-2
    assert abs(err - res["rel_err"][1]) < 1e-3, (err, res["rel_err"])  # the two references agree
    # inputs are random, not zeros, and a different seed gives different ones
    a = (dump / "A.bin").read_bytes()
    assert len(set(a[:4096])) > 64
    dump2 = tmp_path / "dump2"
    dump2.mkdir()
    r2 = subprocess.run([str(exe), "--json", "--no-time", "--seed", "8", "--dump", str(dump2)], capture_output=True,
                        text=True, timeout=300)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    assert (dump2 / "A.bin").read_bytes() != a
