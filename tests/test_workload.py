from __future__ import annotations

from pathlib import Path

import pytest

from fusesim.errors import InputError
from fusesim.hardware import load_hardware
from fusesim.workload import load_workload, workload_from_dict

ROOT = Path(__file__).resolve().parents[1]


def one(case: dict):
    return workload_from_dict({"name": "t", "cases": [case]}, "w.yaml").cases[0]


def test_paper_suites_complete() -> None:
    ids = {f: [c.case_id for c in load_workload(ROOT / "workloads" / f"{f}.yaml").cases]
           for f in ("paper_gemm_chains", "paper_gated_ffn", "paper_conv_chains", "llm_ffn")}
    assert ids["paper_gemm_chains"] == [f"G{i}" for i in range(1, 11)]
    assert ids["paper_gated_ffn"] == [f"S{i}" for i in range(1, 9)]
    assert ids["paper_conv_chains"] == [f"C{i}" for i in range(1, 9)]
    assert len(ids["llm_ffn"]) == 12


def test_ffn_flops_and_bytes_hand_computed() -> None:
    c = one({"id": "G1", "kind": "ffn", "m": 128, "n": 512, "k": 32, "l": 256})
    assert c.flops == 2 * 128 * 512 * 32 + 2 * 128 * 512 * 256 == 37748736
    assert c.min_bytes == 2 * (128 * 32 + 32 * 512 + 512 * 256 + 128 * 256) == 368640
    assert c.activation == "relu" and not c.gated


def test_gated_flops_count_both_branches() -> None:
    c = one({"id": "S", "kind": "gated_ffn", "m": 128, "n": 8192, "k": 3072, "l": 3072})
    assert c.gated and c.activation == "silu"
    assert c.gemm0_flops == 2 * 2 * 128 * 8192 * 3072
    assert c.flops == 2 * 2 * 128 * 8192 * 3072 + 2 * 128 * 8192 * 3072
    assert c.b_bytes == 2 * 3072 * 8192 * 2  # gate and up weights


def test_conv_im2col_dims() -> None:
    c = one({"id": "C5", "kind": "conv_chain", "batch": 1, "ic": 64, "h": 56, "w": 56, "oc1": 64, "oc2": 256,
             "k1": 3, "k2": 1})
    assert (c.m, c.k, c.n, c.l) == (56 * 56, 64 * 9, 64, 256)
    assert c.conv is not None and c.conv.k1 == 3
    # the unique A bytes are the image, not the 9x larger im2col matrix
    assert c.a_bytes == 56 * 56 * 64 * 2
    c1 = one({"id": "C1", "kind": "conv_chain", "batch": 2, "ic": 64, "h": 56, "w": 56, "oc1": 256, "oc2": 64})
    assert (c1.m, c1.k, c1.n, c1.l) == (2 * 56 * 56, 64, 256, 64) and c1.conv is None


def test_floor_is_max_of_compute_and_memory() -> None:
    hw = load_hardware(ROOT / "hw_configs" / "h100_sxm.yaml")
    c = one({"id": "G5", "kind": "ffn", "m": 128, "n": 16384, "k": 4096, "l": 4096})
    mem = c.min_bytes / 3350
    comp = c.flops / (989e3)
    assert c.floor_ns(hw) == pytest.approx(max(mem, comp))


@pytest.mark.parametrize("case,field,needle", [
    ({"id": "x", "kind": "ffn", "m": "128", "n": 1, "k": 1, "l": 1}, "m", "integer"),
    ({"id": "x", "kind": "ffn", "m": 0, "n": 1, "k": 1, "l": 1}, "m", "greater than 0"),
    ({"id": "x", "kind": "ffn", "m": -4, "n": 1, "k": 1, "l": 1}, "m", "greater than 0"),
    ({"id": "x", "kind": "mlp", "m": 1, "n": 1, "k": 1, "l": 1}, "kind", "unknown kind"),
    ({"id": "x", "kind": "ffn", "m": 1, "n": 1, "k": 1, "l": 1, "activation": "tanh"}, "activation", "relu"),
    ({"id": "x", "kind": "ffn", "m": 1, "n": 1, "k": 1, "l": 1, "bias": True}, "bias", "unknown key"),
    ({"id": "x", "kind": "ffn", "m": 1, "n": 1, "k": 1}, "l", "missing"),
    ({"id": "x", "kind": "conv_chain", "ic": 8, "h": 4, "w": 4, "oc1": 8, "oc2": 8, "k1": 3, "k2": 3}, "k2", "halo"),
    ({"id": "x", "kind": "ffn", "m": 65536, "n": 65536, "k": 1, "l": 1}, "m*n", "2^31"),
    ({"id": "../evil", "kind": "ffn", "m": 1, "n": 1, "k": 1, "l": 1}, "id", "file name"),
])
def test_invalid_cases_name_file_case_and_field(case: dict, field: str, needle: str) -> None:
    with pytest.raises(InputError) as ei:
        one(case)
    e = ei.value
    assert e.file == "w.yaml" and e.field == field and e.case == case["id"]
    assert needle in e.message
    assert "\n" not in e.line()


def test_duplicate_ids_rejected() -> None:
    c = {"id": "a", "kind": "ffn", "m": 1, "n": 1, "k": 1, "l": 1}
    with pytest.raises(InputError, match="duplicate"):
        workload_from_dict({"cases": [c, c]}, "w.yaml")
