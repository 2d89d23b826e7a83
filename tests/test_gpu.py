"""On a Hopper GPU with torch: generated kernels are numerically right (skipped cleanly elsewhere).

Run on the device: `python3 -m pytest -m gpu tests/test_gpu.py` (needs nvcc, torch, an sm_90 GPU).
The full evidence (all 26 paper cases, odd shapes, sanitizer) is results/h200/*.json.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fusesim.gpu.env import hopper_missing

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(hopper_missing() is not None,
                                                  reason="needs torch, nvcc and a Hopper GPU")]


def _plans():
    from fusesim.codegen.handplans import representative_plans

    return representative_plans()


def _names() -> list[str]:
    from fusesim.codegen.handplans import representative_plans

    return sorted(representative_plans())  # every template family and dsm_comm form, gemm_wgmma included


@pytest.mark.parametrize("graph", [False, True], ids=["launched", "cuda_graph"])
@pytest.mark.parametrize("name", _names())
def test_kernel_matches_float32_reference(name, graph):
    """Launched, and (`fusesim bench --graph-launch`) captured into a CUDA graph -- clusters, gemm_wgmma's
    programmatic dependent launch as a graph edge -- and replayed: twice on a poisoned output, both right."""
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, verify

    plan = _plans()[name]
    kern = Loaded(Path(build(generate(plan), "so")))
    res = verify(kern, plan.chain, seed=2024, launches=2, graph=graph)
    assert res["launch_flag"] == 0
    assert not res["unwritten_or_nan"], "some output element was not written"
    assert res["ok"], f"{name}: rel. error {res['rel_err']:.3g}"


def test_right_launch_configuration_passes_the_device_check():
    """The kernel checks blockDim / grid / cluster dims against the plan (a flag, not a wrong result)."""
    import torch

    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, bind, make_problem

    plan = _plans()["fused_dsm_e_regs"]
    kern = Loaded(Path(build(generate(plan), "so")))
    assert kern.cluster_size == plan.cluster.size and kern.grid_blocks == plan.kernels[0].grid_blocks
    assert kern.max_active_clusters > 0
    bind(kern, make_problem(plan.chain, seed=3))
    kern.error_flag(reset=True)
    kern.launch(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert kern.error_flag() == 0


IM2COL_REPRESENTATIVES = ("gemm_wgmma_conv3x3_split_predicated", "gemm_wgmma_conv3x3_m64_two_images",
                          "fused_wgmma_conv3x3_smem", "fused_wgmma_conv3x3_cls_k2_two_images")


@pytest.mark.parametrize("name", IM2COL_REPRESENTATIVES)
def test_wgmma_im2col_by_tma_matches_float32_reference(name):
    """The wgmma templates' implicit im2col loaded by TMA in im2col mode (capability.WGMMA_IM2COL_TMA, off by
    default until measured): two images, predicated rows, split-K and cls_k 2 against the float32 reference."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, verify

    plan = _plans()[name]
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": True}):
        src = generate(plan)
    assert "tma_load_im2col(" in src.code
    kern = Loaded(Path(build(src, "so")))
    res = verify(kern, plan.chain, seed=2025, launches=2)
    assert res["launch_flag"] == 0
    assert not res["unwritten_or_nan"], "some output element was not written"
    assert res["ok"], f"{name}: rel. error {res['rel_err']:.3g}"
