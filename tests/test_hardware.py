from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fusesim.errors import InputError
from fusesim.hardware import hardware_from_dict, load_hardware

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "hw_configs").glob("*.yaml"))
FIXED_KEYS = ["name", "sm_count", "clock_mhz", "max_cluster_size", "smem_per_sm_bytes", "smem_per_block_bytes",
              "l2_bytes", "l2_bandwidth_gbps", "hbm_bandwidth_gbps", "launch_overhead_us"]


def raw(name: str = "h100_sxm") -> dict:
    return yaml.safe_load((ROOT / "hw_configs" / f"{name}.yaml").read_text())


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_configs_validate_and_have_fixed_keys(path: Path) -> None:
    hw = load_hardware(path)
    data = yaml.safe_load(path.read_text())
    for key in FIXED_KEYS:
        assert key in data, key
    for key in data:
        if key not in ("name", "description", "provenance"):
            assert key in hw.provenance and hw.provenance[key].strip(), key


def test_required_configs_shipped() -> None:
    names = {p.stem for p in SHIPPED}
    assert {"h100_sxm", "h200", "h100_pcie", "a100_sxm"} <= names


def test_a100_has_no_clusters() -> None:
    hw = load_hardware(ROOT / "hw_configs" / "a100_sxm.yaml")
    assert hw.max_cluster_size == 1 and hw.cluster_sizes == [1]
    assert hw.max_active_clusters(2) == 0


def test_cluster_residency_matches_h200_measurement() -> None:
    # hopper.md: cudaOccupancyMaxActiveClusters, 1 block/SM: 132, 66, 30, 15, 7
    hw = load_hardware(ROOT / "hw_configs" / "h200.yaml")
    assert [hw.max_active_clusters(cs) for cs in (1, 2, 4, 8, 16)] == [132, 66, 30, 15, 7]


def test_overrides_by_dotted_path() -> None:
    hw = load_hardware(ROOT / "hw_configs" / "h100_sxm.yaml",
                       {"dsm_push_bandwidth_gbps_per_sm.16": 66.0, "hbm_bandwidth_gbps": 5000})
    assert hw.dsm_push_bandwidth_gbps_per_sm[16] == 66.0
    assert hw.hbm_bandwidth_gbps == 5000


def _err(d: dict) -> InputError:
    with pytest.raises(InputError) as ei:
        hardware_from_dict(d, "hw.yaml")
    return ei.value


def test_wrong_type_names_field() -> None:
    d = raw()
    d["sm_count"] = "many"
    e = _err(d)
    assert e.field == "sm_count" and e.file == "hw.yaml"


def test_zero_bandwidth_rejected() -> None:
    d = raw()
    d["hbm_bandwidth_gbps"] = 0
    assert _err(d).field == "hbm_bandwidth_gbps"


def test_negative_dsm_entry_names_table_and_size() -> None:
    d = raw()
    d["dsm_latency_ns"][4] = -1
    assert _err(d).field == "dsm_latency_ns.4"


def test_unknown_key() -> None:
    d = raw()
    d["warp_speed"] = 9
    e = _err(d)
    assert e.field == "warp_speed" and "unknown key" in e.message


def test_missing_field() -> None:
    d = raw()
    del d["l2_bytes"]
    e = _err(d)
    assert e.field == "l2_bytes" and "missing" in e.message


def test_dsm_table_inconsistent_with_max_cluster_size() -> None:
    d = raw()
    d["max_cluster_size"] = 8
    e = _err(d)
    assert e.field == "dsm_push_bandwidth_gbps_per_sm" and "max_cluster_size" in e.message


def test_cluster_larger_than_gpc() -> None:
    d = raw()
    d["max_cluster_size"] = 32
    for t in ("dsm_push_bandwidth_gbps_per_sm", "dsm_pull_bandwidth_gbps_per_sm", "dsm_latency_ns",
              "cluster_barrier_ns"):
        d[t][32] = d[t][16]
    assert _err(d).field == "max_cluster_size"


def test_gpc_layout_must_sum_to_sm_count() -> None:
    d = raw()
    d["gpc_sm_counts"] = [16] * 8
    assert _err(d).field == "gpc_sm_counts"


def test_missing_provenance_entry() -> None:
    d = raw()
    del d["provenance"]["l2_latency_ns"]
    e = _err(d)
    assert e.field == "provenance" and "l2_latency_ns" in e.message


def test_optional_simulator_fields_need_provenance_only_when_set() -> None:
    base = raw("a100_sxm")  # a file that sets none of them (not a GH100: nothing to carry)
    h = hardware_from_dict(base)
    assert h.kernel_start_us is None and h.cp_async_groups_in_flight is None
    with_field = {**base, "kernel_start_us": 1.0}
    err = _err(with_field)
    assert err.field == "provenance" and "kernel_start_us" in err.message
    ok = {**with_field, "provenance": {**base["provenance"], "kernel_start_us": "fitted (test)"}}
    assert hardware_from_dict(ok).kernel_start_us == 1.0
    # unset optional fields leave the fingerprint as it was before they existed
    assert hardware_from_dict({**base, "kernel_start_us": None}).fingerprint == h.fingerprint


def test_optional_simulator_fields_are_bounded() -> None:
    base = raw("h100_sxm")
    prov = {**base["provenance"], "kernel_start_us": "x", "l2_reduction_bandwidth_gbps": "x"}
    too_long = {**base, "kernel_start_us": base["launch_overhead_us"] + 1, "provenance": prov}
    assert _err(too_long).field == "kernel_start_us"
    too_fast = {**base, "l2_reduction_bandwidth_gbps": base["l2_bandwidth_gbps"] * 2, "provenance": prov}
    assert _err(too_fast).field == "l2_reduction_bandwidth_gbps"


def test_barrier_skew_and_stage_handshake_are_bounded() -> None:
    base = raw("h100_sxm")
    prov = {**base["provenance"], "cluster_barrier_skew_ns": "x", "wgmma_stage_handshake_ns": "x"}
    assert _err({**base, "cluster_barrier_skew_ns": 5000.0, "provenance": prov}).field == "cluster_barrier_skew_ns"
    one_count = {**base, "wgmma_stage_handshake_ns": {1: 139.0}, "provenance": prov}
    assert _err(one_count).field == "wgmma_stage_handshake_ns"
    ok = hardware_from_dict({**base, "cluster_barrier_skew_ns": 225.0, "wgmma_stage_handshake_ns": {1: 139.0, 2: 176.0},
                             "provenance": prov})
    assert ok.barrier_skew_ns(1) == 0.0
    assert ok.barrier_skew_ns(16) > ok.barrier_skew_ns(4) > ok.barrier_skew_ns(2) > 0


def test_expected_max_of_normals() -> None:
    """E[max of n standard normals], the order statistics the barrier skew scales with."""
    from fusesim.hardware import expected_max_normal

    assert expected_max_normal(1) == 0.0
    for n, value in ((2, 0.5642), (4, 1.0294), (8, 1.4236), (16, 1.7660)):
        assert expected_max_normal(n) == pytest.approx(value, abs=2e-4)


def test_dsm_bulk_table_matches_the_cluster_sizes() -> None:
    base = raw("h100_sxm")
    prov = {**base["provenance"], "dsm_bulk_bandwidth_gbps_per_sm": "x"}
    sizes = sorted(base["dsm_push_bandwidth_gbps_per_sm"])
    short = {**base, "dsm_bulk_bandwidth_gbps_per_sm": {sizes[0]: 29.0}, "provenance": prov}
    assert _err(short).field == "dsm_bulk_bandwidth_gbps_per_sm"
    h = hardware_from_dict({**base, "dsm_bulk_bandwidth_gbps_per_sm": {s: 29.0 for s in sizes}, "provenance": prov})
    assert h.dsm_bulk_gbps(sizes[-1]) == 29.0
    plain = {k: v for k, v in base.items() if k != "dsm_bulk_bandwidth_gbps_per_sm"}  # without the table: the push rate
    assert hardware_from_dict(plain).dsm_bulk_gbps(sizes[-1]) == hardware_from_dict(plain).dsm_bandwidth_gbps(sizes[-1])


@pytest.mark.parametrize("name", ["wgmma_im2col_arrive_ns", "wgmma_im2col_react_ns", "tma_refill_ns", "im2col_decode_ns"])
def test_pipeline_handshakes_are_bounded_by_one_stage(name: str) -> None:
    base = raw("h100_sxm")
    prov = {**base["provenance"], name: "x"}
    assert _err({**base, name: 5000.0, "provenance": prov}).field == name
    assert getattr(hardware_from_dict({**base, name: 128.0, "provenance": prov}), name) == 128.0
