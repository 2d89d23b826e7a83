"""Invariants under random valid cases and random (valid) hardware: every plan fits the machine,
simulation is deterministic, never beats physics, agrees with the analyzer, and plans round-trip."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fusesim.hardware import CLUSTER_TABLES, Hardware, hardware_from_dict
from fusesim.plan import Plan
from fusesim.plancheck import plan_problems
from fusesim.planner import plan_case
from fusesim.planner.dataflow import analyze
from fusesim.sim import simulate
from fusesim.sweep.derive import l2_rates
from fusesim.workload import Chain

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((ROOT / "hw_configs" / "h100_sxm.yaml").read_text())
TABLES = tuple(t for t in CLUSTER_TABLES if t in BASE)  # the DSM bulk rate too, now that the H100 file has it


@st.composite
def hardware(draw) -> Hardware:
    d = copy.deepcopy(BASE)
    cs = draw(st.sampled_from([1, 2, 4, 8, 16]))
    d["max_cluster_size"] = cs
    d["portable_cluster_size"] = min(cs, 8)
    for t in TABLES:
        d[t] = {k: v * draw(st.floats(0.5, 4.0)) for k, v in d[t].items() if k <= cs}
    smem_kib = draw(st.sampled_from([100, 164, 228, 456]))
    d["smem_per_sm_bytes"] = smem_kib * 1024
    d["smem_per_block_bytes"] = smem_kib * 1024 - 1024
    d["l2_bytes"] = draw(st.sampled_from([4, 40, 50, 120])) * 2**20
    d["hbm_bandwidth_gbps"] = draw(st.floats(1000, 10000))
    d["l2_bandwidth_gbps"] = draw(st.floats(3000, 15000))
    return hardware_from_dict(l2_rates(d), "<random>")  # the measured L2 reduction rates capped at a slow L2


dims = st.sampled_from([16, 48, 64, 128, 192, 256, 384, 512, 1024, 2048])
chains = st.builds(
    lambda m, n, k, l_, gated: Chain("R", "gated_ffn" if gated else "ffn", m, n, k, l_,
                                    "silu" if gated else "relu", gated),
    st.sampled_from([16, 100, 128, 256, 784]), dims, dims, dims, st.booleans(),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(chain=chains, hw=hardware())
def test_plans_fit_and_simulation_is_sound(chain: Chain, hw: Hardware) -> None:
    res = plan_case(chain, hw, strategies=("unfused", "smem", "dsm"), top_k=1)
    assert res.plans.get("unfused"), "an unfused plan always exists"
    for scored in res.plans.values():
        plan = scored[0].plan
        assert plan_problems(plan, hw) == []
        assert plan.cluster.size <= hw.max_cluster_size
        assert Plan.from_json(plan.to_json()) == plan
        a = simulate(plan, hw)
        b = simulate(plan, hw)
        assert a.time_ns == b.time_ns and a.bytes == b.bytes and a.events == b.events
        assert a.time_ns >= chain.floor_ns(hw) * (1 - 1e-9)
        vol = analyze(plan, hw)
        # L2 traffic and DSM traffic are decided by the plan alone: they must agree always.
        # HBM reads agree when the working set fits L2; beyond that the simulator's LRU finds
        # hits the analyzer's fits-or-not rule does not, so only the compulsory floor is checked.
        keys = ["l2_read", "dsm"]
        working_set = chain.a_bytes + chain.b_bytes + chain.c_bytes + chain.d_bytes + 2 * chain.e_bytes
        if working_set <= hw.l2_bytes // 2:
            keys.append("hbm_read")
        for key in keys:  # the analyzer includes the split-K protocol (dataflow.split_k_protocol_bytes)
            want, got = getattr(vol, key), a.bytes[key]
            assert abs(got - want) <= 0.01 * max(want, 1), (key, got, want, plan.summary())
        assert a.bytes["hbm_read"] >= (chain.a_bytes + chain.b_bytes + chain.d_bytes) * (1 - 1e-9)
