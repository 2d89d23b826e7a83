"""The simulator: conservation against the dataflow analyzer, physics floors, micro-case
bandwidths, determinism, and the pieces (fluid servers, L2, dispatch) on their own."""

from __future__ import annotations

import dataclasses
import json
import statistics
from functools import cache
from pathlib import Path

import pytest
import simpy

from fusesim.hardware import Hardware, load_hardware
from fusesim.plan import ClusterShape, Plan
from fusesim.planner.dataflow import split_k_protocol_bytes
from fusesim.sim import examples as ex
from fusesim.sim import simulate
from fusesim.sim.fluid import FluidServer
from fusesim.sim.memory import L2Cache
from fusesim.stored import read_json
from fusesim.workload import load_workload

ROOT = Path(__file__).resolve().parents[1]
PAPER = ("paper_gemm_chains", "paper_gated_ffn", "paper_conv_chains")
STRATEGIES = ("unfused", "smem", "dsm")


@cache
def hw(name: str = "h200") -> Hardware:
    return load_hardware(ROOT / "hw_configs" / f"{name}.yaml")


def paper_chains():
    return [c for w in PAPER for c in load_workload(ROOT / "workloads" / f"{w}.yaml").cases]


@cache
def paper_runs(hw_name: str = "h200"):
    """(chain, plan, SimResult, Volumes) for every paper case and feasible strategy."""
    planner = pytest.importorskip("fusesim.planner")
    out = []
    for ch in paper_chains():
        res = planner.plan_case(ch, hw(hw_name), strategies=STRATEGIES, top_k=1)
        for s in STRATEGIES:
            if res.plans.get(s):
                plan = res.plans[s][0].plan
                out.append((ch, plan, simulate(plan, hw(hw_name)), planner.analyze(plan, hw(hw_name))))
    return out


# ---- the pieces ----------------------------------------------------------------------------
def test_fluid_server_finishes_a_flow_whose_rest_is_below_the_clock_resolution():
    """Far into a long run (now = 1e15 ns: 0.125 ns between representable times) a flow whose
    remaining bytes need less than that must finish, not wake at `now` forever (the Llama3-70B dsm
    plan of benchmarks/simulator.py never ended)."""
    env = simpy.Environment()
    env.run(until=1e15)
    srv = FluidServer(env, "x", 1000.0)
    ev = srv.transfer(1000.05)  # 1.00005 ns: the wake lands at +1.0, 0.05 bytes short
    steps = 0
    while not ev.processed and steps < 100:
        env.step()
        steps += 1
    assert ev.processed and env.now - 1e15 == pytest.approx(1.0)


def test_fluid_server_shares_bandwidth_and_honours_caps():
    env = simpy.Environment()
    srv = FluidServer(env, "x", 10.0)  # 10 bytes/ns
    done = {}

    def flow(name, nbytes, cap=float("inf"), delay=0.0):
        yield env.timeout(delay)
        yield srv.transfer(nbytes, cap_bytes_per_ns=cap)
        done[name] = env.now

    env.process(flow("a", 100))            # alone for 5 ns (50 B), then shares 5/5
    env.process(flow("b", 100, delay=5))
    env.process(flow("c", 10, cap=1.0))    # capped at 1 B/ns from t=0: done at 10 ns
    env.run()
    assert done["c"] == pytest.approx(10.0)
    # a: 0-5 at 9 B/ns (45 B), 5-10 at 4.5 (22.5), then 5 B/ns for the last 32.5 -> 16.5
    assert done["a"] == pytest.approx(16.5)
    # b: 22.5 B at 4.5 B/ns, 32.5 B at 5 B/ns, then alone at 10 B/ns for the last 45 B -> 21.0
    assert done["b"] == pytest.approx(21.0)
    assert srv.bytes_total == 210


def test_l2_write_back_keeps_resident_intermediate_off_hbm():
    cache = L2Cache(1000)
    assert cache.write(("C", 0, 0), 400) == 0
    assert cache.read(("C", 0, 0), 400) == (0, 0)  # written then read while resident: a hit
    assert cache.read(("A", 0, 0), 500) == (500, 0)  # cold miss
    miss, wb = cache.read(("A", 0, 1), 500)  # evicts the dirty C (LRU): it reaches HBM now
    assert miss == 500 and wb == 400


def test_l2_priority_keeps_reused_tensors():
    cache = L2Cache(1000, priority={"A": 2, "B": 1})
    cache.read(("A", 0, 0), 600)
    miss, _ = cache.read(("B", 0, 0), 600)  # would evict A: passes through instead
    assert miss == 600 and ("A", 0, 0) in cache and ("B", 0, 0) not in cache


def test_l2_class_capacity_keeps_only_a_few_lines_of_a_class():
    """A capped class (L2::evict_first lines) evicts its own LRU line once full, leaving the rest alone."""
    cache = L2Cache(1000, priority={"B": 0, "A": 1}, class_capacity={0: 300})
    cache.read(("A", 0, 0), 400)
    cache.read(("B", 0, 0), 200)
    miss, _ = cache.read(("B", 0, 1), 200)  # the class is full: its own oldest line goes
    assert miss == 200 and ("B", 0, 0) not in cache and ("B", 0, 1) in cache and ("A", 0, 0) in cache
    assert cache.read(("B", 0, 2), 400) == (400, 0) and ("B", 0, 2) not in cache  # larger than the class


def test_l2_policy_follows_the_templates_cache_hints():
    """mma.sync kernels give no hint: plain LRU once the reuse capacity is measured; the wgmma
    kernels' evict_first weights sit in the capped lowest class, evict_last activations on top."""
    from fusesim.codegen.handplans import representative_plans
    from fusesim.sim.kernels import EVICT_FIRST, EVICT_LAST, l2_policy

    h = hw()
    cal = h.model_copy(update={"l2_reuse_bytes": 44 << 20, "l2_evict_first_bytes": 2 << 20})
    plans = representative_plans()
    mma = plans["fused_dsm_exchange_shuffle_reduce"]
    wg = next(p for p in plans.values() if p.instruction == "wgmma" and p.strategy != "unfused")
    assert mma.instruction == "mma_sync" and l2_policy(mma, cal) == ({}, {})
    assert l2_policy(mma, h)[0]  # no measured reuse capacity: the analyzer's ranking stands in
    prio, caps = l2_policy(wg, cal)
    assert prio["B"] == prio["D"] == EVICT_FIRST and prio["A"] == EVICT_LAST and prio["E"] > EVICT_FIRST
    assert caps == {EVICT_FIRST: 2 << 20}


def test_code_bytes_count_as_hbm_reads_only():
    h = hw()
    plan = ex.dsm_ring_plan(h, cluster_size=2, bytes_per_round=1 << 12, rounds=1)
    a, b = simulate(plan, h), simulate(plan, h, code_bytes=40_000)
    assert b.bytes["hbm_read"] - a.bytes["hbm_read"] == 40_000
    assert b.time_ns == a.time_ns


def test_clusters_of_16_use_112_sms_on_h200():
    h = hw()
    plan = ex.dsm_ring_plan(h, cluster_size=16, bytes_per_round=1 << 16, rounds=1)
    r = simulate(plan, h, trace=True)
    sms = {e["tid"] // 4 for e in r.trace if e.get("ph") == "X" and e["pid"] == 1}  # 4 tracks per SM
    assert len(sms) == h.max_active_clusters(16) * 16 == 112


# ---- micro-cases: bandwidths from the spec --------------------------------------------------
@pytest.mark.parametrize("hw_name", ["h200", "h100_sxm"])
def test_copy_like_gemm_reaches_hbm_bandwidth(hw_name):
    """A GEMM with K = 16 and 256x256 tiles is a 2 GB copy: read A/B, write C through L2 to HBM."""
    h = hw(hw_name)
    ch = ex.chain("copy", 32768, 32768, 16, 16)
    plan = ex.unfused_plan(ch, bm=256, bn=256, bk=16, stages=2)
    plan = plan.with_(kernels=plan.kernels[:1])
    r = simulate(plan, h)
    hbm = r.bytes["hbm_read"] + r.bytes["hbm_write"] + r.drain_bytes
    assert hbm >= ch.c_bytes
    gbps = hbm / (r.time_ns - h.launch_overhead_us * 1e3)
    assert gbps == pytest.approx(h.hbm_bandwidth_gbps, rel=0.05)


@pytest.mark.parametrize("cs", [2, 4, 8, 16])
def test_dsm_ring_reaches_spec_bandwidth(cs):
    """A DSM ring alone moves at the push bandwidth in the mma.sync template (st.shared::cluster) and
    at the bulk-copy rate in fused_wgmma (cp.async.bulk shared::cluster)."""
    h = hw()
    assert h.dsm_bulk_gbps(cs) < 0.97 * h.dsm_bandwidth_gbps(cs)  # the two are told apart below
    for instruction, rate in (("mma_sync", h.dsm_bandwidth_gbps(cs)), ("wgmma", h.dsm_bulk_gbps(cs))):
        r = simulate(ex.dsm_ring_plan(h, cluster_size=cs, instruction=instruction), h)
        k = r.kernels[0]
        sms = h.max_active_clusters(cs) * cs
        per_sm = r.bytes["dsm"] / (k["end_ns"] - k["start_ns"]) / sms
        assert per_sm == pytest.approx(rate, rel=0.01), instruction


# ---- determinism -----------------------------------------------------------------------------
def test_deterministic_bit_for_bit():
    h = hw()
    ch = ex.chain("g", 256, 4096, 1024, 1024, gated=True)
    for plan in (ex.unfused_plan(ch), ex.fused_plan(ch, ClusterShape(1, 4, 2, 4), 128, 64, 64, n_split=8)):
        a, b = simulate(plan, h, trace=True), simulate(plan, h, trace=True)
        da, db = a.to_dict(), b.to_dict()
        da.pop("wall_s")
        db.pop("wall_s")
        assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)
        assert json.dumps(a.trace) == json.dumps(b.trace)


def test_inter_cluster_reduce_as_the_kernel_runs_it():
    """n_split > 1: fp32 red.adds into the workspace, tickets, the last cluster's conversion; no
    memset (the kernel starts one launch overhead in) and bytes equal the analyzer's to the byte."""
    planner = pytest.importorskip("fusesim.planner")
    h = hw()
    ch = ex.chain("g", 256, 2048, 512, 512)
    plan = ex.fused_plan(ch, ClusterShape(1, 2, 2, 4), 128, 64, 64, n_split=4)
    r = simulate(plan, h)
    v = planner.analyze(plan, h)
    for level in ("l2_read", "l2_write", "hbm_read", "hbm_write"):
        assert r.bytes[level] == getattr(v, level), level
    assert r.kernels[0]["start_ns"] == pytest.approx((h.launch_overhead_us + (h.kernel_start_us or 0)) * 1e3)
    assert r.drain_bytes == ch.e_bytes + ch.m * ch.l * 4  # E and the zeroed workspace
    assert plan.dsm_comm == planner.dsm_comm.dsm_steps(plan.cluster, plan.tiles, plan.n_passes, 4, "none", 2)


def test_plan_round_trip_simulates_identically():
    h = hw()
    ch = ex.chain("g", 128, 2048, 512, 512)
    plan = ex.fused_plan(ch, ClusterShape(1, 2, 2, 4), 128, 64, 64, n_split=4)
    again = Plan.from_json(plan.to_json())
    assert simulate(plan, h).time_ns == simulate(again, h).time_ns


# ---- the paper suites through the planner ----------------------------------------------------
def test_conservation_against_dataflow_analyzer():
    """L2 and DSM bytes agree with fusesim.planner.dataflow within 1% for every plan. HBM bytes
    agree within 1% when the plan's tensors fit L2 together; otherwise capacity effects differ:
    the analyzer charges every reuse stream of a tensor that is not held as a miss, while the
    simulator's readers that run in the same wave share one fetch, so the simulator may read
    less from HBM -- never less than each input once (cold L2), never more than the analyzer."""
    h = hw()
    checked = 0
    for ch, plan, r, v in paper_runs():
        # the analyzer includes the split-K protocol of unfused wgmma plans (dataflow.split_k_protocol_bytes)
        extra_hbm = split_k_protocol_bytes(plan)["hbm_read"]
        for level in ("l2_read", "l2_write", "dsm"):
            assert r.bytes[level] == pytest.approx(getattr(v, level), rel=0.01, abs=1), (ch.case_id, plan.strategy, level)
        unique_in = ch.a_bytes + ch.b_bytes + ch.d_bytes
        fits = unique_in + ch.e_bytes + (ch.c_bytes if plan.strategy == "unfused" else 0) <= h.l2_bytes
        if fits:
            assert r.bytes["hbm_read"] == pytest.approx(v.hbm_read, rel=0.01), (ch.case_id, plan.strategy)
            assert r.bytes["hbm_write"] == pytest.approx(v.hbm_write, rel=0.01, abs=1), (ch.case_id, plan.strategy)
        else:
            assert unique_in * 0.99 <= r.bytes["hbm_read"] - extra_hbm, (ch.case_id, plan.strategy)
            assert r.bytes["hbm_read"] <= v.hbm_read * 1.01, (ch.case_id, plan.strategy)
        checked += 1
    assert checked >= 70


def test_no_time_below_the_physical_floor():
    h = hw()
    for ch, plan, r, _v in paper_runs():
        assert r.time_ns >= ch.floor_ns(h, plan.instruction), (ch.case_id, plan.strategy)
        assert 0 <= r.utilization["hbm"] <= 1 and 0 <= r.utilization["tensor"] <= 1


def test_every_paper_case_simulates_fast():
    for ch, plan, r, _v in paper_runs():
        assert r.wall_s < 2.0, (ch.case_id, plan.strategy, r.wall_s)


# ---- CLI -------------------------------------------------------------------------------------
def test_cli_json_contract(capsys):
    pytest.importorskip("fusesim.planner")
    from fusesim.cli import main

    trace = ROOT / "tests" / ".sim_trace_test.json"
    try:
        # G4: its dsm plan runs DSM steps (G1-G3's best dsm plans, cluster (2,1,1,1) + inter_cluster_reduce, have none)
        rc = main(["simulate", str(ROOT / "workloads/paper_gemm_chains.yaml"), "--hw", "h200", "--case", "G4",
                   "--format", "json", "--trace", str(trace)])
        assert rc == 0
        out = json.loads(capsys.readouterr().out)
        rows = out["results"]
        assert [r["strategy"] for r in rows] == list(STRATEGIES)
        for r in rows:
            assert set(r["bytes"]) == {"hbm_read", "hbm_write", "l2_read", "l2_write", "dsm"}
            assert {"tensor", "hbm", "dsm", "l2"} <= set(r["utilization"])
            assert r["time_us"] > 0 and r["sim"]["events"] > 0
        events = read_json(trace)["traceEvents"]
        cats = {e.get("cat") for e in events}
        assert {"load", "mma", "exchange", "barrier"} <= cats
    finally:
        trace.unlink(missing_ok=True)


def test_cli_unknown_case_is_bad_input(capsys):
    from fusesim.cli import main

    assert main(["simulate", str(ROOT / "workloads/paper_gemm_chains.yaml"), "--hw", "h200", "--case", "NOPE"]) == 2
    assert "NOPE" in capsys.readouterr().err


# ---- the eager-PyTorch chain (comparison with measured baselines) ----------------------------
def test_torch_chain_runs_the_kernels_pytorch_launches():
    from fusesim.sim.baseline import simulate_torch_chain, torch_chain_plan

    h = hw()
    for gated, n_kernels in ((False, 3), (True, 5)):
        ch = ex.chain("t", 128, 2048, 512, 512, gated=gated)
        plan = ex.unfused_plan(ch)
        torch = torch_chain_plan(plan)
        assert len(torch.kernels) == n_kernels
        r, base = simulate_torch_chain(plan, h), simulate(plan, h)
        assert r.time_ns > base.time_ns  # more launches, the intermediate makes extra round trips
        # every kernel's output is re-read while resident: nothing but E reaches HBM
        assert r.bytes["hbm_write"] == 0
        assert r.bytes["hbm_read"] == base.bytes["hbm_read"]


def test_trace_tracks_never_overlap():
    """Chrome's format needs spans on one track to nest; loads, DSM and compute get own tracks."""
    h = hw()
    ch = ex.chain("g", 256, 2048, 512, 512, gated=True)
    r = simulate(ex.fused_plan(ch, ClusterShape(1, 2, 2, 4), 128, 64, 64, n_split=4, stages=3), h, trace=True)
    tracks: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in r.trace:
        if e["ph"] == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        for (_s0, e0), (s1, e1) in zip(spans, spans[1:], strict=False):
            assert s1 >= e0 - 1e-9 or e1 <= e0 + 1e-9


# ---- dispatch and L2 capacity -----------------------------------------------------------------
def test_waves_and_tails():
    """One block per SM (big SMEM): 264 tiles take two full waves on 132 SMs; a 133rd tile adds
    a tail wave of one block, which cannot go faster than one SM's load port."""
    from fusesim.sim import params
    h = hw()

    def kernel_ns(tiles_m: int) -> float:
        ch = ex.chain("w", 128 * tiles_m, 128, 2048, 16)
        plan = ex.unfused_plan(ch, bm=128, bn=128, bk=64, stages=6)
        plan = plan.with_(kernels=plan.kernels[:1])
        r = simulate(plan, h)
        assert r.kernels[0]["blocks_per_sm"] == 1
        return r.kernels[0]["end_ns"] - r.kernels[0]["start_ns"]

    one, tail, two = kernel_ns(132), kernel_ns(133), kernel_ns(264)
    assert two == pytest.approx(2 * one, rel=0.05)
    lone_block_bytes = (128 * 2048 + 2048 * 128) * 2
    port_gbps = params.SM_GLOBAL_BYTES_PER_CYCLE * h.clock_mhz / 1e3
    assert one + lone_block_bytes / port_gbps < tail < two


def test_intermediate_larger_than_l2_reaches_hbm():
    h = hw()
    small = ex.chain("s", 1024, 4096, 1024, 1024)  # C = 8 MB: written and re-read inside L2
    big = ex.chain("b", 16384, 4096, 1024, 1024)  # C = 128 MB > 60 MiB L2
    rs, rb = simulate(ex.unfused_plan(small), h), simulate(ex.unfused_plan(big), h)
    assert rs.bytes["hbm_write"] == 0
    assert rb.bytes["hbm_write"] >= big.c_bytes - h.l2_bytes
    assert rb.bytes["hbm_read"] > big.a_bytes + big.b_bytes + big.d_bytes


def test_against_measured_baselines_runs():
    """benchmarks/simulator.py --against: one row per measured paper case, nothing fitted."""
    import importlib.util

    pytest.importorskip("fusesim.planner")
    path = ROOT / "results" / "h200" / "pytorch_baselines.json"
    if not path.exists():
        pytest.skip("no measured baselines")
    spec = importlib.util.spec_from_file_location("bench_sim", ROOT / "benchmarks" / "simulator.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = [{"case": ch.case_id, "strategy": p.strategy, "chain": ch, "plan": p, "result": r}
            for ch, p, r, _v in paper_runs() if p.strategy == "unfused"]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.against(path, hw(), rows)
    assert out.getvalue().count("\n") >= 26 + 4
    assert "within 25%" in out.getvalue()


# ---- the coalescing is exact -------------------------------------------------------------------
def test_one_cohort_per_wave_matches_simulating_every_block(monkeypatch):
    """gpu.dispatch runs one representative per wave; simulating every cluster as its own process
    (started together, as the hardware does) gives the same bytes and times within 5% (blocks
    that hit in L2 while a peer's miss is in flight run slightly ahead; nothing else differs)."""
    import fusesim.sim.engine as engine

    def per_cluster(gpu, kernel, make_cohort, blocks_per_sm):
        slots = gpu.cluster_slots(kernel.cluster_size, blocks_per_sm)
        first = 0
        while first < kernel.clusters:
            count = min(len(slots), kernel.clusters - first)
            procs = [gpu.env.process(make_cohort([c], [slots[c - first]]).run()) for c in range(first, first + count)]
            yield gpu.env.all_of(procs)
            first += count

    h = hw()
    plans = [
        ex.unfused_plan(ex.chain("g", 512, 2048, 1024, 1024, gated=True)),
        ex.fused_plan(ex.chain("f", 256, 2048, 512, 512), ClusterShape(1, 2, 2, 4), 128, 64, 64, n_split=4, stages=3),
        ex.fused_plan(ex.chain("f2", 128, 4096, 1024, 1024, gated=True), ClusterShape(1, 4, 2, 8), 128, 64, 64,
                      n_split=4, stages=3),
    ]
    for plan in plans:
        coalesced = simulate(plan, h)
        monkeypatch.setattr(engine, "dispatch", per_cluster)
        every = simulate(plan, h)
        monkeypatch.undo()
        assert every.bytes == coalesced.bytes
        assert every.time_ns == pytest.approx(coalesced.time_ns, rel=0.05)
        assert every.events > coalesced.events


# ---- generated-kernel mechanisms (fusesim/sim/README.md) -------------------------------------
def off_and_on(field: str, value: float) -> tuple[Hardware, Hardware]:
    """The H200 with one optional mechanism field unset, and set to `value`."""
    base = hw().model_copy(update={field: None})
    return base, base.model_copy(update={field: value})


def test_cp_async_groups_in_flight_applies_to_mma_sync_only():
    base, one = off_and_on("cp_async_groups_in_flight", 1)
    ch = ex.chain("g", 2048, 4096, 4096, 1024)
    mma = ex.unfused_plan(ch, 128, 128, 32, stages=6, instruction="mma_sync")
    wg = ex.unfused_plan(ch, 128, 128, 32, stages=6, instruction="wgmma")
    assert simulate(mma, one).time_ns > 1.2 * simulate(mma, base).time_ns  # latency no longer hidden
    assert simulate(wg, one).time_ns == simulate(wg, base).time_ns
    assert simulate(mma, one).bytes == simulate(mma, base).bytes


def test_kernel_start_delays_every_kernel_once():
    """Every stream-ordered kernel pays it once (a programmatic dependent launch: see the PDL test)."""
    base, later = off_and_on("kernel_start_us", 1.5)
    plan = ex.unfused_plan(ex.chain("g", 256, 1024, 512, 512), instruction="mma_sync")
    a, b = simulate(plan, base), simulate(plan, later)
    assert b.time_ns - a.time_ns == pytest.approx(2 * 1500.0, abs=1.0)
    assert [k["start_ns"] for k in b.kernels][0] == pytest.approx(a.kernels[0]["start_ns"] + 1500.0)


def test_reduce_scatter_waits_a_dsm_round_trip_per_float4():
    """dsm_comm.cuh sums each owned float4 over the peers before the next: a thread owning many
    float4s waits that many DSM latencies even when the bytes are few."""
    from fusesim.sim.kernels import FusedCohort

    h = hw()
    plan = ex.fused_plan(ex.chain("g", 128, 1024, 512, 512), ClusterShape(1, 4, 1, 1), 128, 64, 64, n_split=1,
                         threads=128)
    steps = [s for s in plan.dsm_comm if s.primitive == "dsm_reduce_scatter"]
    assert steps
    cohort = FusedCohort.__new__(FusedCohort)
    cohort.bl, cohort.bm, cohort.cl, cohort.kernel = 512, 128, plan.cluster, plan.kernels[0]
    per_thread = cohort._scatter_float4s_per_thread()
    assert per_thread == 128 * (512 // 4 // 4) // 128
    r = simulate(plan, h)
    assert r.time_ns > per_thread * h.dsm_latency_ns[4]


def test_refill_applies_to_two_stage_mma_sync_pipelines_only():
    base, slow = off_and_on("cp_async_refill_ns", 200.0)
    ch = ex.chain("g", 256, 1024, 512, 512)
    two = ex.unfused_plan(ch, 64, 64, 32, stages=2, instruction="mma_sync")
    four = ex.unfused_plan(ch, 64, 64, 32, stages=4, instruction="mma_sync")
    steps = 512 // 32 + 1024 // 32  # k steps of GEMM0 and GEMM1, one wave each
    assert simulate(two, slow).time_ns - simulate(two, base).time_ns == pytest.approx(steps * 200.0, rel=0.02)
    assert simulate(four, slow).time_ns == simulate(four, base).time_ns


def test_tma_refill_is_hidden_by_deep_rings_and_paid_by_two_stage_ones():
    """Every TMA ring refills a freed stage only after the consumers' empty-barrier arrive reaches
    the producer: a two-stage ring waits that handshake every stage after the first; a deeper ring
    keeps its other loads in flight meanwhile and pays far less; the mma.sync kernels are untouched
    and the bytes never change."""
    base, slow = off_and_on("tma_refill_ns", 300.0)
    ch = ex.chain("g", 128, 1024, 512, 512)
    two = ex.unfused_plan(ch, 64, 64, 64, stages=2, instruction="wgmma")
    six = ex.unfused_plan(ch, 64, 64, 64, stages=6, instruction="wgmma")
    mma = ex.unfused_plan(ch, 64, 64, 32, stages=2, instruction="mma_sync")
    a, b = simulate(two, base), simulate(two, slow)
    # the producer fills both stages at the start; stage t >= 1 frees stage t - 1: 6 refills in
    # GEMM0 (8 k tiles) and 14 in GEMM1 (16), one wave each
    refills = (512 // 64 - 2) + (1024 // 64 - 2)
    assert b.time_ns - a.time_ns == pytest.approx(refills * 300.0, rel=0.02)
    assert b.bytes == a.bytes
    deep = simulate(six, slow).time_ns - simulate(six, base).time_ns
    assert 0 <= deep < 0.5 * refills * 300.0
    assert simulate(six, slow).bytes == simulate(six, base).bytes
    assert simulate(mma, slow).time_ns == simulate(mma, base).time_ns


def test_tma_ring_fills_every_stage_at_the_start():
    """The wgmma templates' producer issues a load into every stage of the ring at the start (all
    are empty): a ring as deep as a GEMM's k tiles never waits a refill; one stage fewer waits one."""
    base, slow = off_and_on("tma_refill_ns", 1000.0)
    ch = ex.chain("g", 128, 256, 256, 256)  # 4 k tiles in each GEMM
    whole = ex.unfused_plan(ch, 64, 64, 64, stages=4, instruction="wgmma")
    short = ex.unfused_plan(ch, 64, 64, 64, stages=3, instruction="wgmma")
    assert simulate(whole, slow).time_ns == pytest.approx(simulate(whole, base).time_ns)
    assert simulate(short, slow).time_ns > simulate(short, base).time_ns + 500.0


def test_inter_cluster_ticket_waits_the_measured_protocol_once_per_kernel():
    """inter_cluster_reduce's ticket (and gemm_wgmma's split-K ticket) takes at least the calibrated
    fence + atomic protocol; plans without a ticket are untouched; bytes never change."""
    base, slow = off_and_on("inter_cluster_ticket_ns", 2000.0)
    ch = ex.chain("g", 128, 1024, 512, 512)
    split = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=4, threads=128)
    assert any(s.primitive == "inter_cluster_reduce" for s in split.dsm_comm)
    whole = ex.fused_plan(ch, ClusterShape(1, 4, 1, 1), 64, 64, 64, n_split=1, threads=128)
    a, b = simulate(split, base), simulate(split, slow)
    assert b.time_ns - a.time_ns == pytest.approx(2000.0, abs=400.0)
    assert b.bytes == a.bytes
    assert simulate(whole, slow).time_ns == simulate(whole, base).time_ns


def _convert_off_and_on(fixed_ns: float, per_float4_ns: float) -> tuple[Hardware, Hardware]:
    base = hw().model_copy(update={"inter_cluster_convert_ns": None, "inter_cluster_convert_round_trip_ns": None})
    return base, base.model_copy(update={"inter_cluster_convert_ns": fixed_ns,
                                         "inter_cluster_convert_round_trip_ns": per_float4_ns})


def test_inter_cluster_convert_waits_one_round_trip_per_batch_of_float4s():
    """The last block's convert (every template's loop: ld.cg of CONVERT_BATCH float4s, then the
    stores that wait for them) takes the calibrated fixed part plus one round trip per batch each
    thread converts, overlapped with the bytes' own time: twice the threads, half the round trips;
    batching four float4s a trip leaves a quarter of the trips; plans without a workspace are
    untouched; bytes never change."""
    from fusesim.capability import generator_switches

    base, slow = _convert_off_and_on(500.0, 300.0)
    ch = ex.chain("g", 128, 1024, 512, 512)
    narrow, wide = (ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=4, threads=t,
                                  instruction="mma_sync") for t in (128, 256))

    def extra(plan: Plan) -> float:
        return simulate(plan, slow).time_ns - simulate(plan, base).time_ns

    # the owned slice is 64 x 512 fp32: 8192 float4s, 64 per thread at 128 threads, 32 at 256
    with generator_switches({"convert_batch": 1}):
        d_narrow, d_wide = extra(narrow), extra(wide)
    # it replaces the sum's load and the stores (their bytes, the same at either thread count)
    assert d_narrow - d_wide == pytest.approx(32 * 300, rel=0.02)
    assert (500 + 64 * 300) / 2 < d_narrow <= 500 + 64 * 300
    bytes_ns = 500 + 64 * 300 - d_narrow  # the load's and the stores' own time, which the floor overlaps
    with generator_switches({"convert_batch": 4}):
        assert extra(narrow) == pytest.approx(max(0.0, 500 + 16 * 300 - bytes_ns), abs=1.0)
        assert simulate(narrow, slow).bytes == simulate(narrow, base).bytes
    whole = ex.fused_plan(ch, ClusterShape(1, 4, 1, 1), 64, 64, 64, n_split=1, threads=128, instruction="mma_sync")
    assert simulate(whole, slow).time_ns == simulate(whole, base).time_ns


def test_gemm_wgmma_split_k_convert_waits_its_round_trips_unsplit_gemms_do_not():
    """gemm_wgmma's split-K last block converts its block_m x block_n tile the same way."""
    from fusesim.capability import generator_switches

    base, slow = _convert_off_and_on(2000.0, 1000.0)
    ch = ex.chain("g", 128, 1024, 4096, 512)
    split = ex.unfused_plan(ch, 64, 64, 64, stages=4, threads=256, split_k1=4)
    # 64 x 64 fp32: 1024 float4s, 4 per thread: four round trips one at a time, one when batched by 4;
    # the floor overlaps the load and the stores (at the ld/st rate; a floor this long covers them), the
    # same bytes either way
    extra = {}
    for batch in (1, 4):
        with generator_switches({"convert_batch": batch}):
            extra[batch] = simulate(split, slow).time_ns - simulate(split, base).time_ns
    assert extra[1] - extra[4] == pytest.approx(3 * 1000, abs=1.0)
    assert 0 < extra[4] <= 2000 + 1000
    plain = ex.unfused_plan(ch, 64, 64, 64, stages=4, threads=256)
    assert simulate(plain, slow).time_ns == simulate(plain, base).time_ns


def test_inter_cluster_reduce_red_adds_at_the_rate_of_their_form():
    """fused_wgmma without a reduce-scatter red.adds accumulator fragments (v2): with the calibrated
    per-SM rates a fragment red is slower than a row-piece red (v4) of the same bytes; mma.sync's
    fused kernel always red.adds row pieces."""
    from fusesim.sim.kernels import FusedCohort, FusedWgmmaCohort

    assert FusedWgmmaCohort._red_fragments.__doc__ and FusedCohort._red_fragments.__doc__
    h = hw()
    ch = ex.chain("g", 128, 1024, 512, 512)
    plan = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=16, threads=256)  # n_passes 1
    frag_slow = h.model_copy(update={"l2_fragment_reduction_gbps_per_sm": 1.0})
    rows_slow = h.model_copy(update={"l2_row_reduction_gbps_per_sm": 1.0})
    t = simulate(plan, h).time_ns
    assert simulate(plan, frag_slow).time_ns > 2 * t  # the fused_wgmma kernel's reds are fragments
    assert simulate(plan, rows_slow).time_ns == pytest.approx(t)
    mma = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=16, threads=256, instruction="mma_sync")
    t = simulate(mma, h).time_ns
    assert simulate(mma, rows_slow).time_ns > 2 * t
    assert simulate(mma, frag_slow).time_ns == pytest.approx(t)


def test_per_copy_im2col_decode_is_serial_with_the_mmas_rows_decoded_once_are_free():
    """The mma.sync kernels' per-copy im2col decode (load_tile_im2col): every GEMM0 stage of a block
    waits copies-per-thread x im2col_decode_ns (one wave: k steps x that); with the rows decoded
    once per block (Im2colRows, the switch on) and for a chain without a 3x3 conv it costs nothing."""
    from fusesim.capability import generator_switches
    from fusesim.codegen.handplans import fused, unfused
    from fusesim.workload import Chain, ConvGeom

    conv = Chain("c", "conv_chain", 14 * 14, 128, 9 * 64, 256, "relu", False, conv=ConvGeom(1, 14, 14, 64, 3))
    base = hw().model_copy(update={"im2col_decode_ns": None})
    slow = base.model_copy(update={"im2col_decode_ns": 50.0})
    plan = fused(conv, ClusterShape(1, 2, 1, 2), 64, 64, 64, n_split=1, stages=3, threads=256)
    # 64 x 64 A tile: 512 copies, 2 per thread; K = 576: 9 stages; 4 x 2 clusters of 2: one wave
    with generator_switches({"im2col_rows_hoisted": False}):
        extra = simulate(plan, slow).time_ns - simulate(plan, base).time_ns
        assert extra == pytest.approx(9 * 2 * 50.0, rel=0.15)
        gemm = unfused(conv, 64, 64, 64)
        assert simulate(gemm, slow).time_ns > simulate(gemm, base).time_ns
        plain = ex.fused_plan(ex.chain("g", 192, 128, 576, 256), ClusterShape(1, 2, 1, 2), 64, 64, 64, n_split=1,
                              stages=3, instruction="mma_sync")
        assert simulate(plain, slow).time_ns == simulate(plain, base).time_ns
    with generator_switches({"im2col_rows_hoisted": True}):
        assert simulate(plan, slow).time_ns == simulate(plan, base).time_ns


def test_dsm_split_k_moves_partials_over_dsm_not_through_a_workspace():
    """gemm_wgmma with a GEMM's split parts as one cluster: the simulator's DSM bytes are the
    analyzer's (each part reads its block_n / split columns of every peer's fp32 partial, with
    dsm_reduce_scatter's wire bytes), there is no workspace, and the L2 traffic of the red.adds,
    workspace read-back and zeroing is gone."""
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.planner.dataflow import analyze
    from fusesim.planner.dsm_comm import wire_factor
    from fusesim.sim.kernels import split_workspaces

    h = hw()
    ch = ex.chain("dsk", 128, 2048, 1024, 2048, activation="gelu")
    l2 = unfused_wgmma(ch, 128, 128, 4, split1=4)
    dsm = unfused_wgmma(ch, 128, 128, 4, split1=4, dsm_split=(False, True))
    assert split_workspaces(l2) and not split_workspaces(dsm)
    a, b = simulate(l2, h), simulate(dsm, h)
    tiles = 2048 // 128
    want = tiles * 3 * 128 * 128 * 4 * float(wire_factor("dsm_reduce_scatter", 0, 0, 32 * 4))
    assert b.bytes["dsm"] == pytest.approx(want) == pytest.approx(analyze(dsm, h).dsm)
    assert a.bytes["dsm"] == 0
    # what goes is the split-K protocol's L2 writes, at least the split - 1 workspace passes of the slices
    gone = a.bytes["l2_write"] - b.bytes["l2_write"]
    assert gone == pytest.approx(split_k_protocol_bytes(l2)["l2_write"]) and gone >= 3 * ch.m * ch.l * 4
    assert split_k_protocol_bytes(dsm)["l2_write"] == 0


def test_gemm_wgmma_occupancy_follows_its_accumulators():
    """The gemm_wgmma template's register use is its consumers' accumulators (capability's rule), not
    the plan's estimate: two 384-thread blocks with block_n 64 share an SM, with block_n 128 they do
    not (H200, results/h200/dsm_split_trial_*.json)."""
    from fusesim.capability import wgmma_gemm_regs_per_thread
    from fusesim.codegen.handplans import unfused_wgmma

    h = hw()
    assert h.blocks_per_sm(80_000, 384, wgmma_gemm_regs_per_thread(64, False)) == 2
    assert h.blocks_per_sm(80_000, 384, wgmma_gemm_regs_per_thread(128, False)) == 1
    ch = ex.chain("occ", 128, 4096, 1024, 2048)
    for bn, want in ((64, 2), (128, 1)):
        plan = unfused_wgmma(ch, 128, bn, 3)
        assert plan.kernels[1].regs_per_thread == 128  # the hand plan's default estimate is not used
        r = simulate(plan, h)
        assert [k["blocks_per_sm"] for k in r.kernels] == [want, want], bn


@pytest.mark.parametrize("staged", [False, True])
def test_split_k_reductions_take_the_calibrated_rates(staged: bool):
    """gemm_wgmma's split-K partials are red.add.v2 of accumulator fragments (the template before
    the staging) or red.add.v4 of row pieces staged in SMEM (today's, where the partial fits the
    ring): with the calibrated per-SM and all-SM rates of that form the kernel takes longer, by at
    least one block's partial at the per-SM rate less what the unbounded model charged; the other
    form's rates change nothing; a plan without split-K is unchanged."""
    from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.sim import params

    base = hw()
    mine, other = ("l2_row_reduction", "l2_fragment_reduction") if staged else ("l2_fragment_reduction",
                                                                               "l2_row_reduction")
    free = base.model_copy(update={f"{mine}_gbps_per_sm": None, f"{mine}_bandwidth_gbps": None})
    no_other = base.model_copy(update={f"{other}_gbps_per_sm": None, f"{other}_bandwidth_gbps": None})
    ch = ex.chain("frg", 128, 2048, 1024, 4096, activation="gelu")
    split = unfused_wgmma(ch, 128, 128, 6, split1=4)
    plain = unfused_wgmma(ch, 128, 128, 6)
    with generator_switches({"gemm_split_shared_min_bytes": 0} if staged else FRAGMENT_EPILOGUE):  # red.add forms
        a, b = simulate(split, free), simulate(split, base)
        assert simulate(split, no_other).time_ns == b.time_ns
        assert simulate(plain, free).time_ns == simulate(plain, base).time_ns
    partial = 128 * 128 * 4  # one block's fp32 tile
    port_gbps = params.SM_GLOBAL_BYTES_PER_CYCLE * base.clock_mhz / 1e3  # the unbounded model's per-SM rate
    floor_ns = partial / getattr(base, f"{mine}_gbps_per_sm") - partial / port_gbps
    assert b.time_ns - a.time_ns >= 0.9 * floor_ns > 0
    assert a.bytes == b.bytes  # the same traffic, only slower


def test_split_k_in_slices_moves_what_the_analyzer_counts():
    """Split-K summed in slices (capability.gemm_split_shared): the simulator stores every part's partial into
    its own slab (no fetch from HBM, no zeros back) and reads each part's share of the others' slabs, the bytes
    fusesim.planner.dataflow counts; with red.add into one tile it fetches the workspace from HBM instead. The
    slabs are scratch the next launch overwrites: not written back after the last kernel, where the red.add
    form's zeros are (the next launch needs them)."""
    from fusesim.capability import generator_switches
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.planner.dataflow import analyze
    from fusesim.sim.kernels import split_workspaces

    base = hw()
    ch = ex.chain("shr", 128, 2048, 1024, 4096, activation="gelu")
    plan = unfused_wgmma(ch, 128, 128, 6, split1=4)
    ws = 128 * 4096 * 4  # one M x L fp32 slab
    got, drained = {}, {}
    for mode in (0, 32768):
        with generator_switches({"gemm_split_shared_min_bytes": mode}):
            r, v = simulate(plan, base), analyze(plan, base)
            got[mode], drained[mode] = r.bytes, r.drain_bytes
            assert split_workspaces(plan)["W:E"][0] == (128 * 4 if mode else 128)
            for level in ("l2_read", "l2_write", "hbm_read"):
                assert r.bytes[level] == pytest.approx(getattr(v, level), rel=1e-6), (mode, level)
    assert got[0]["hbm_read"] - got[32768]["hbm_read"] == ws  # the red.adds fetched the zeroed slab
    assert got[32768]["l2_read"] - got[0]["l2_read"] == (4 - 1) * ws - ws  # shares of 3 slabs vs one sum
    assert drained[32768] == 128 * 4096 * 2 and drained[0] == drained[32768] + ws  # E alone; E and the zeros


def test_split_k_in_slices_lean_stores_only_the_others_shares():
    """Lean slices (capability.GEMM_SPLIT_LEAN): every part stores the (split - 1) / split of its partial that the
    other parts sum and takes one ticket, the bytes the analyzer counts; the same reads; not slower."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.planner.dataflow import SPLIT_TICKET_BYTES, analyze

    base = hw()
    ch = ex.chain("lean", 128, 2048, 1024, 4096, activation="gelu")
    plan = unfused_wgmma(ch, 128, 128, 6, split1=4)
    ws = 128 * 4096 * 4  # one M x L fp32 slab
    got, ns = {}, {}
    for lean in (False, True):
        with generator_switches({**codegen_switches(), "gemm_split_lean": lean}):
            r, v = simulate(plan, base), analyze(plan, base)
            got[lean], ns[lean] = r.bytes, r.time_ns
            for level in ("l2_read", "l2_write", "hbm_read"):
                assert r.bytes[level] == pytest.approx(getattr(v, level), rel=1e-6), (lean, level)
    grid = plan.kernels[1].grid_blocks
    assert got[False]["l2_write"] - got[True]["l2_write"] == pytest.approx(ws + SPLIT_TICKET_BYTES * grid)
    assert got[True]["l2_read"] == got[False]["l2_read"] and ns[True] <= ns[False]


def test_pdl_secondary_waits_the_calibrated_release():
    """gemm_wgmma's second GEMM is a programmatic dependent launch: it starts pdl_release_us after
    the first GEMM's last block (not kernel_gap_us); its own start cost lies before
    griddepcontrol.wait, under the first GEMM, when its blocks can start beside the first GEMM's
    (the grids fit the SMs together), else what the release does not cover remains; the mma.sync
    unfused plan (no PDL) keeps the stream gap and the whole start cost."""
    from fusesim.codegen.handplans import unfused_wgmma

    base = hw()
    assert base.pdl_release_us is not None and base.pdl_release_us < base.kernel_gap_us
    start_us = base.kernel_start_us or 0.0
    assert start_us > base.pdl_release_us  # the hardware file's values: some start cost is left uncovered
    small = ex.chain("pdl", 128, 2048, 1024, 2048, activation="gelu")  # 16 + 16 tiles of 128 x 128
    plan = unfused_wgmma(small, 128, 128, 6)
    assert sum(k.grid_blocks for k in plan.kernels) <= base.sm_count
    r = simulate(plan, base)
    g0, g1 = r.kernels
    assert g1["start_ns"] - g0["end_ns"] == pytest.approx(base.pdl_release_us * 1e3)
    off = simulate(plan, base.model_copy(update={"pdl_release_us": None}))
    assert off.kernels[1]["start_ns"] - off.kernels[0]["end_ns"] == pytest.approx((base.kernel_gap_us + start_us) * 1e3)
    assert off.time_ns - r.time_ns == pytest.approx((base.kernel_gap_us + start_us - base.pdl_release_us) * 1e3,
                                                    rel=0.05)
    big = unfused_wgmma(ex.chain("pdlbig", 1024, 4096, 1024, 4096, activation="gelu"), 128, 128, 6)
    assert sum(k.grid_blocks for k in big.kernels) > base.sm_count  # and a 197 KB block of each does not share an SM
    rb = simulate(big, base)
    assert rb.kernels[1]["start_ns"] - rb.kernels[0]["end_ns"] == pytest.approx(start_us * 1e3)  # release + the rest
    mma = simulate(ex.unfused_plan(small, instruction="mma_sync"), base)
    assert mma.kernels[1]["start_ns"] - mma.kernels[0]["end_ns"] == pytest.approx((base.kernel_gap_us + start_us) * 1e3)


def test_pytorch_chain_has_no_pdl_release():
    """The eager-PyTorch sequence is stream-ordered cuBLAS kernels: the generated kernels' PDL release
    must not shorten its gaps (its time is the same with pdl_release_us unset)."""
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.sim.baseline import simulate_torch_chain

    base = hw()
    plan = unfused_wgmma(ex.chain("tpdl", 128, 2048, 1024, 2048, activation="none"), 128, 128, 6)
    off = base.model_copy(update={"pdl_release_us": None})
    for graph in (False, True):
        assert simulate_torch_chain(plan, base, graph=graph).time_ns == simulate_torch_chain(plan, off, graph=graph).time_ns
    assert simulate(plan, base).time_ns < simulate(plan, off).time_ns  # the generated plan does use it


def test_pytorch_chain_has_no_tma_refill_handshake():
    """The TMA ring's refill handshake is the generated templates' producer protocol, not cuBLAS's: the
    eager-PyTorch sequence simulates the same with tma_refill_ns unset, the generated plan does not."""
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.sim.baseline import simulate_torch_chain

    base = hw()
    assert base.tma_refill_ns
    plan = unfused_wgmma(ex.chain("trf", 128, 2048, 1024, 2048, activation="gelu"), 128, 128, 2)
    off = base.model_copy(update={"tma_refill_ns": None})
    for graph in (False, True):
        assert simulate_torch_chain(plan, base, graph=graph).time_ns == simulate_torch_chain(plan, off, graph=graph).time_ns
    assert simulate(plan, base).time_ns > simulate(plan, off).time_ns


def test_cluster_barrier_skew_waits_for_the_latest_block_of_larger_clusters_longer():
    """A cluster barrier after work each block does on its own waits skew x E[max of n normals] for
    the cluster's latest block: single-block plans are untouched, bytes never change, a cluster of 16
    waits longer per barrier than one of 4, and the start barrier (a gang launch) waits nothing more."""
    from fusesim.hardware import expected_max_normal

    base, skewed = off_and_on("cluster_barrier_skew_ns", 300.0)
    ch = ex.chain("g", 128, 1024, 512, 512)
    single = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=1, stages=4)
    assert simulate(single, skewed).time_ns == simulate(single, base).time_ns
    extra = {}
    for cs in (4, 16):
        plan = ex.fused_plan(ch, ClusterShape(1, cs, 1, 1), 64, 1024 // cs, 64, n_split=1, stages=4)
        assert plan.kernels[0].cluster_size == cs
        a, b = simulate(plan, base), simulate(plan, skewed)
        assert b.bytes == a.bytes
        extra[cs] = b.time_ns - a.time_ns
        assert extra[cs] >= 300.0 * expected_max_normal(cs) * 0.99  # at least the exit barrier
    assert extra[16] > extra[4]


@pytest.mark.parametrize("instruction,cluster,block_n,skewed", [
    ("wgmma", ClusterShape(1, 4, 1, 1), 256, 2),      # the drained ring's barrier, the exit barrier
    ("mma_sync", ClusterShape(1, 4, 1, 1), 64, 2),    # partials complete, exit
    ("mma_sync", ClusterShape(1, 2, 2, 2), 128, 4),   # exchange round, exchange buffer free, partials complete, exit
])
def test_cluster_barrier_skew_counts_every_barrier_after_independent_work_once(instruction, cluster, block_n, skewed):
    """The skew is paid once at each cluster barrier that follows work each block did on its own,
    and never at the start barrier (a cluster's blocks are launched together): the extra time is
    exactly that many barriers' skew x E[max of cs normals] (one wave, nothing else moves). With
    fused_wgmma's early exit arrive the sum and stores after the reduce-scatter run under the exit
    barrier, so part of its skew is hidden: between one barrier's fewer and as many."""
    from fusesim.capability import codegen_switches, fused_wgmma_early_exit_arrive, generator_switches
    from fusesim.hardware import expected_max_normal

    base, skewed_hw = off_and_on("cluster_barrier_skew_ns", 300.0)
    ch = ex.chain("g", 128, 1024, 512, 512)
    plan = ex.fused_plan(ch, cluster, 64, block_n, 64, n_split=1024 // (cluster.n * block_n), stages=4,
                         instruction=instruction)
    per_barrier = 300.0 * expected_max_normal(plan.kernels[0].cluster_size)
    with generator_switches({**codegen_switches(), "fused_early_exit_arrive": False}):
        a, b = simulate(plan, base), simulate(plan, skewed_hw)
    assert a.kernels[0]["waves"] == 1
    assert b.time_ns - a.time_ns == pytest.approx(skewed * per_barrier, rel=0.02)
    if fused_wgmma_early_exit_arrive(plan):
        extra = simulate(plan, skewed_hw).time_ns - simulate(plan, base).time_ns
        assert (skewed - 1) * per_barrier * 0.98 <= extra < skewed * per_barrier


def test_wgmma_stage_handshake_follows_the_consumer_warpgroups():
    """fused_wgmma's stage floor is the handshake of its block_m / 64 consumer warpgroups: a plan of
    128-row tiles (two) follows the two-warpgroup value and ignores the one-warpgroup value."""
    ch = ex.chain("g", 256, 128, 512, 128)
    h = hw()
    wide = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 128, 128, 64, n_split=1, stages=4, threads=384)
    assert wide.n_passes == 1  # the fused_wgmma template's pipeline

    def t(one: float, two: float) -> float:
        return simulate(wide, h.model_copy(update={"wgmma_stage_handshake_ns": {1: one, 2: two}})).time_ns

    assert t(900.0, 100.0) == pytest.approx(t(100.0, 100.0))
    assert t(100.0, 900.0) > t(100.0, 100.0) + 8 * 700.0  # every stage of the block waits the handshake
    narrow = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 128, 64, n_split=1, stages=4)  # one warpgroup
    assert narrow.n_passes == 1

    def t1(one: float, two: float) -> float:
        return simulate(narrow, h.model_copy(update={"wgmma_stage_handshake_ns": {1: one, 2: two}})).time_ns

    assert t1(100.0, 900.0) == pytest.approx(t1(100.0, 100.0))
    assert t1(900.0, 100.0) > t1(100.0, 100.0) + 8 * 700.0


def test_fused_wgmma_bulk_copies_move_at_the_bulk_rate():
    """fused_wgmma's reduce-scatter slices are bulk copies: a lower bulk rate slows the plan, the
    same bytes; the mma.sync fused kernel's DSM pushes keep the push rate."""
    base = hw().model_copy(update={"dsm_bulk_bandwidth_gbps_per_sm": None})
    slow = base.model_copy(update={"dsm_bulk_bandwidth_gbps_per_sm": {cs: 5.0 for cs in base.dsm_push_bandwidth_gbps_per_sm}})
    ch = ex.chain("g", 128, 1024, 512, 512)
    wg = ex.fused_plan(ch, ClusterShape(1, 8, 1, 1), 64, 128, 64, n_split=1, stages=4)
    assert any(s.primitive == "dsm_reduce_scatter" for s in wg.dsm_comm)
    a, b = simulate(wg, base), simulate(wg, slow)
    assert b.bytes == a.bytes and b.time_ns > a.time_ns + 1000.0
    mma = ex.fused_plan(ch, ClusterShape(1, 8, 1, 1), 64, 128, 64, n_split=1, stages=4, instruction="mma_sync")
    assert simulate(mma, slow).time_ns == simulate(mma, base).time_ns
    # fused_wgmma's exchange is st.async, at the push rate: a plan with an exchange and no bulk copies
    xonly = ex.fused_plan(ch, ClusterShape(1, 1, 2, 2), 64, 128, 64, n_split=8, stages=4)
    prims = {s.primitive for s in xonly.dsm_comm}
    assert "dsm_all_exchange" in prims and not prims & {"dsm_shuffle", "dsm_reduce_scatter"}
    assert simulate(xonly, slow).time_ns == simulate(xonly, base).time_ns


def test_the_convert_after_the_ticket_moves_at_the_ld_st_rate_in_every_template():
    """The last contributor's convert is plain 16-byte ld/st.global in every template: a fused_wgmma
    plan with inter_cluster_reduce and a split-K gemm_wgmma plan take longer when that per-SM rate
    (cp_async_bytes_per_sm_cycle) is lower, with the same bytes; a fused_wgmma plan without a convert
    (n_split 1) or a gemm_wgmma plan without split-K does not move: the wgmma kernels' other loads and
    stores keep their own port."""
    from fusesim.codegen.handplans import unfused_wgmma

    fast = hw().model_copy(update={"cp_async_bytes_per_sm_cycle": 64.0})
    slow = fast.model_copy(update={"cp_async_bytes_per_sm_cycle": 8.0})
    ch = ex.chain("g", 128, 2048, 512, 2048)
    fused = ex.fused_plan(ch, ClusterShape(1, 1, 1, 1), 64, 128, 64, n_split=16, stages=4)
    assert fused.instruction == "wgmma" and any(s.primitive == "inter_cluster_reduce" for s in fused.dsm_comm)
    a, b = simulate(fused, fast), simulate(fused, slow)
    assert b.bytes == a.bytes and b.time_ns > a.time_ns + 1000.0
    split = unfused_wgmma(ex.chain("s", 128, 1024, 4096, 1024, activation="gelu"), 128, 128, 6, split0=8, split1=8)
    a, b = simulate(split, fast), simulate(split, slow)
    assert b.bytes == a.bytes and b.time_ns > a.time_ns + 1000.0
    unsplit = unfused_wgmma(ex.chain("s", 128, 1024, 4096, 1024, activation="gelu"), 128, 128, 6)
    assert simulate(unsplit, slow).time_ns == simulate(unsplit, fast).time_ns
    whole = ex.fused_plan(ex.chain("w", 128, 1024, 512, 512), ClusterShape(1, 8, 1, 1), 64, 128, 64, n_split=1, stages=4)
    assert not any(s.primitive == "inter_cluster_reduce" for s in whole.dsm_comm)
    assert simulate(whole, slow).time_ns == simulate(whole, fast).time_ns


def test_cli_jobs_give_the_same_rows_as_one_process(capsys, tmp_path):
    """`--jobs 2` plans and simulates (case, strategy) pairs in worker processes: the same rows in the
    same order as one process (the simulator is deterministic), the same trace processes; `--jobs 0`
    is bad input."""
    pytest.importorskip("fusesim.planner")
    from fusesim.cli import main

    def run(jobs: str) -> tuple[list[dict], list[str]]:
        trace = tmp_path / f"t{jobs}.json"
        assert main(["simulate", str(ROOT / "workloads/paper_gemm_chains.yaml"), "--hw", "h200", "--case", "G1",
                     "--case", "G4", "--format", "json", "--jobs", jobs, "--trace", str(trace)]) == 0
        rows = json.loads(capsys.readouterr().out)["results"]
        for r in rows:
            r["sim"].pop("wall_s")
        names = [e["args"]["name"] for e in read_json(trace)["traceEvents"] if e.get("name") == "process_name"]
        return rows, names

    one, two = run("1"), run("2")
    assert one == two and len(one[0]) == 6
    assert main(["simulate", str(ROOT / "workloads/paper_gemm_chains.yaml"), "--hw", "h200", "--jobs", "0"]) == 2


@pytest.fixture
def cp_async_im2col(monkeypatch):
    """The wgmma templates' implicit im2col as the producer warpgroup's cp.async copies (WGMMA_IM2COL_TMA off: the
    kernels measured before 2026-12-05 evening), whose mechanisms the tests below check."""
    import fusesim.capability

    monkeypatch.setattr(fusesim.capability, "WGMMA_IM2COL_TMA", False)


def test_wgmma_im2col_stages_move_their_a_rows_at_the_ldst_rate(monkeypatch, cp_async_im2col):
    """The wgmma templates' implicit im2col copies A with cp.async beside the weights' TMA loads: such a
    stage is slower than an all-TMA stage of the same bytes, and only the im2col kernels have such stages."""
    from fusesim.codegen.handplans import representative_plans
    from fusesim.sim import gpu as sim_gpu

    hw = load_hardware("hw_configs/h200.yaml")
    reps = representative_plans()
    conv = [reps["gemm_wgmma_conv3x3_m64_two_images"], reps["fused_wgmma_conv3x3_smem"]]
    plain = reps["fused_wgmma_smem_inter_cluster"]
    with_ldst = [simulate(p, hw).time_ns for p in [*conv, plain]]
    monkeypatch.setattr(sim_gpu.Cohort, "stage_port", lambda self, l2_bytes, ldst_bytes: self.port)
    all_tma = [simulate(p, hw).time_ns for p in [*conv, plain]]
    assert all(a > b for a, b in zip(with_ldst[:2], all_tma[:2], strict=True))
    assert with_ldst[2] == all_tma[2]


def test_wgmma_im2col_stage_waits_for_the_producer_to_refill_two_stages_on(monkeypatch, cp_async_im2col):
    """The wgmma im2col producer arrives on GEMM0 stage t only after issuing load t + stages - 2, i.e.
    after refilling the stage the consumers freed while on stage t - 1: from the third stage on, GEMM0's
    stages start at least the producer's reaction plus its work for a job apart (wgmma_im2col_react_ns +
    wgmma_im2col_arrive_ns), whatever the ring's depth; without that lag (arrival as the copies land) they
    would run at their MMA time, and the kernel would be shorter."""
    from fusesim import capability
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    plan = representative_plans()["fused_wgmma_conv3x3_smem"]  # 9 GEMM0 stages, a 4-stage ring
    kt0 = plan.chain.k // plan.kernels[0].tiles.block_k

    def gemm0_starts_ns(p) -> list[float]:
        spans = [e for e in simulate(p, hw, trace=True).trace or [] if e.get("ph") == "X" and e.get("name") == "mma"]
        first = min(e["tid"] for e in spans)
        return sorted(1e3 * e["ts"] for e in spans if e["tid"] == first)[:kt0]

    lagged = gemm0_starts_ns(plan)
    gaps = [b - a for a, b in zip(lagged[2:], lagged[3:], strict=False)]
    chain_ns = hw.wgmma_im2col_react_ns + hw.wgmma_im2col_arrive_ns
    assert len(gaps) == kt0 - 3 and min(gaps) >= chain_ns - 1e-6
    deeper = dataclasses.replace(plan, stages=6, kernels=[dataclasses.replace(k, stages=6) for k in plan.kernels])
    deep = gemm0_starts_ns(deeper)
    deep_gaps = [b - a for a, b in zip(deep[2:], deep[3:], strict=False)]
    assert abs(statistics.median(deep_gaps) - statistics.median(gaps)) < 1.0
    t_lagged = simulate(plan, hw).time_ns
    monkeypatch.setattr(capability, "wgmma_im2col_lag", lambda stages: 0)
    free = gemm0_starts_ns(plan)
    assert statistics.median(b - a for a, b in zip(free[2:], free[3:], strict=False)) < chain_ns
    assert simulate(plan, hw).time_ns < t_lagged


def test_im2col_producer_reacts_at_its_own_measured_pace_and_the_tma_thread_at_its_own(cp_async_im2col):
    """wgmma_im2col_react_ns replaces tma_refill_ns for the refills of GEMM0's im2col stages only: a slower
    reaction lengthens an im2col kernel, and leaves a TMA-only wgmma kernel as it was; unset, the im2col
    producer reacts as the TMA thread does."""
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    reps = representative_plans()
    conv, plain = reps["fused_wgmma_conv3x3_smem"], reps["fused_wgmma_smem_inter_cluster"]
    slow = hw.model_copy(update={"wgmma_im2col_react_ns": hw.wgmma_im2col_react_ns + 400})
    assert simulate(conv, slow).time_ns > simulate(conv, hw).time_ns
    assert simulate(plain, slow).time_ns == simulate(plain, hw).time_ns
    as_tma = hw.model_copy(update={"wgmma_im2col_react_ns": None})
    same = hw.model_copy(update={"wgmma_im2col_react_ns": hw.tma_refill_ns})
    assert simulate(conv, as_tma).time_ns == simulate(conv, same).time_ns


def test_fused_wgmma_stores_e_from_its_fragments_at_the_fragment_request_rate():
    """Without a reduce-scatter or inter_cluster_reduce, fused_wgmma's consumers store each bf16 E sub-tile
    straight from their accumulators: 4-byte stores, half a sector per row and warp quad, issued at the
    request rate of the calibrated fragment red.add (8 bytes a lane), so at 2 x 2 / 8 of its bytes per SM.
    The probed kernels spend that long from their last wgmma to the block barrier (0.5 us for 8 KiB, 2.2 us
    for 32 KiB a block: results/h200/probe_sync_*.json). A plan that red.adds E is not stored so."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    reps = representative_plans()
    plan = reps["fused_wgmma_conv3x3_smem"]
    with generator_switches({**codegen_switches(), "fused_staged_e": False}):  # the template before the staging
        res = simulate(plan, hw, trace=True)
        slower = hw.model_copy(update={"l2_fragment_reduction_gbps_per_sm": hw.l2_fragment_reduction_gbps_per_sm / 2})
        slower_ns = simulate(plan, slower).time_ns
        reduced = reps["fused_wgmma_exchange_shuffle_reduce"]
        reduced_trace = simulate(reduced, hw, trace=True).trace or []
    spans = [e for e in res.trace or [] if e.get("ph") == "X" and e.get("name") == "store E (sub-tile)"]
    first = min(e["tid"] for e in spans)
    store_us = sum(e["dur"] for e in spans if e["tid"] == first)
    blocks = -(-plan.chain.m // plan.tiles.block_m) * -(-plan.chain.l // plan.tiles.block_l)
    per_block_bytes = plan.chain.m * plan.chain.l * 2 / blocks  # the lock-step cohort shares E's rows evenly
    expect_us = (per_block_bytes / (hw.l2_fragment_reduction_gbps_per_sm * 2 * 2 / 8) + hw.l2_latency_ns) / 1e3
    assert store_us == pytest.approx(expect_us, rel=0.05)
    assert slower_ns > res.time_ns + 0.5 * expect_us * 1e3
    assert not any(e.get("name") == "store E (sub-tile)" for e in reduced_trace)


def test_fused_wgmma_stages_its_last_e_sub_tile_and_stores_row_pieces_at_the_port():
    """With FUSED_STAGED_E the template writes the last E sub-tile as bf16 rows into the drained ring and
    stores 16-byte row pieces: the simulator stages it in SMEM and stores it at the calibrated 16-byte
    ld/st rate (the convert's), so the fragment request rate no longer sets that sub-tile's time. A long
    L keeps its earlier sub-tiles as fragment stores (they overlap the next sub-tile's wgmmas); a plan
    with a reduce-scatter or inter_cluster_reduce is not staged."""
    from fusesim.capability import codegen_switches, fused_wgmma_e_staged, generator_switches
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    reps = representative_plans()
    plan = reps["fused_wgmma_conv3x3_smem"]
    assert fused_wgmma_e_staged(plan)
    res = simulate(plan, hw, trace=True)
    names = {e.get("name") for e in res.trace or [] if e.get("ph") == "X"}
    assert "store E (staged sub-tile)" in names and "store E (sub-tile)" not in names
    spans = [e for e in res.trace or [] if e.get("ph") == "X" and e.get("name") == "store E (staged sub-tile)"]
    store_us = min(e["dur"] for e in spans)  # one cohort: the first SM's, as the others
    blocks = -(-plan.chain.m // plan.tiles.block_m) * -(-plan.chain.l // plan.tiles.block_l)
    per_block_bytes = plan.chain.m * plan.chain.l * 2 / blocks
    ldst_gbps = hw.cp_async_bytes_per_sm_cycle * hw.clock_mhz / 1e3
    assert store_us == pytest.approx((per_block_bytes / ldst_gbps + hw.l2_latency_ns) / 1e3, rel=0.05)
    slower = hw.model_copy(update={"l2_fragment_reduction_gbps_per_sm": hw.l2_fragment_reduction_gbps_per_sm / 2})
    assert simulate(plan, slower).time_ns == res.time_ns  # the fragment rate no longer applies
    with generator_switches({**codegen_switches(), "fused_staged_e": False}):
        assert not fused_wgmma_e_staged(plan)
        assert simulate(plan, hw).time_ns > res.time_ns + 1e3  # 32 KiB a block at 15 GB/s: about 2 us
    long_l = reps["fused_wgmma_large_l_predicated_silu"]
    subs = [e["name"] for e in simulate(long_l, hw, trace=True).trace or []
            if e.get("ph") == "X" and e.get("name", "").startswith("store E") and e["tid"] == 0]
    assert subs[-1] == "store E (staged sub-tile)" and set(subs[:-1]) == {"store E (sub-tile)"}
    for name in ("fused_wgmma_exchange_shuffle_reduce", "fused_wgmma_smem_inter_cluster"):
        assert not fused_wgmma_e_staged(reps[name])


def test_fused_wgmma_exit_barrier_runs_under_the_sum_and_stores_with_an_early_arrive():
    """FUSED_EARLY_EXIT_ARRIVE: a cluster block arrives on its exit barrier once its reduce-scatter's slices
    have landed, so the sum and stores run under the barrier's cost and lag; the exit waits only for what is
    left of it. A cluster of 1 has no exit barrier either way."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    reps = representative_plans()
    plan = reps["fused_wgmma_exchange_shuffle_reduce"]

    def exit_ns(res) -> float:
        return sum(e["dur"] for e in res.trace or [] if e.get("ph") == "X" and e.get("name") == "barrier (before exit)"
                   and e["tid"] == 0) * 1e3

    early = simulate(plan, hw, trace=True)
    with generator_switches({**codegen_switches(), "fused_early_exit_arrive": False}):
        synced = simulate(plan, hw, trace=True)
        single = simulate(reps["fused_wgmma_conv3x3_smem"], hw).time_ns
    assert exit_ns(synced) > exit_ns(early) and early.time_ns < synced.time_ns
    assert synced.time_ns - early.time_ns == pytest.approx(exit_ns(synced) - exit_ns(early), rel=0.01)
    assert simulate(reps["fused_wgmma_conv3x3_smem"], hw).time_ns == single


def test_release_arrives_hold_fused_wgmma_cluster_blocks():
    """Without FUSED_RELAXED_ARRIVE fused_wgmma's start arrive holds every thread for hw.cluster_release_ns before
    the first load is issued, so the whole block runs that much later (the exit arrive's release lies in the
    measured cluster-barrier skew); relaxed, nothing. A cluster of 1 has no cluster barrier, and a file without the
    value charges nothing."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    rel = hw.cluster_release_ns
    assert rel and rel > 0
    reps = representative_plans()

    def first_mma_ns(res) -> float:
        return min(e["ts"] for e in res.trace or [] if e.get("ph") == "X" and e.get("name") == "mma") * 1e3

    for name in ("fused_wgmma_exchange_shuffle_reduce", "fused_wgmma_staged_e_m128_shuffle"):
        plan = reps[name]
        relaxed = simulate(plan, hw, trace=True)
        with generator_switches({**codegen_switches(), "fused_relaxed_arrive": False}):
            release = simulate(plan, hw, trace=True)
            none = simulate(plan, hw.model_copy(update={"cluster_release_ns": None})).time_ns
            single = simulate(reps["fused_wgmma_conv3x3_smem"], hw).time_ns
        assert first_mma_ns(release) - first_mma_ns(relaxed) == pytest.approx(rel, rel=0.01), name
        assert release.time_ns - relaxed.time_ns == pytest.approx(rel, rel=0.05), name
        assert none == pytest.approx(relaxed.time_ns, rel=1e-6), name
    assert simulate(reps["fused_wgmma_conv3x3_smem"], hw).time_ns == single


def test_wgmma_im2col_by_tma_is_a_tma_stage():
    """With WGMMA_IM2COL_TMA the implicit-im2col A tile is one TMA load: the simulator moves the stage at the TMA
    rate and the consumers see it full when its bytes land, not LAG loads later after the producer's cp.async
    copies; so the im2col-bound kernels (C5's smem plan of the H200 run) simulate faster, the same bytes move,
    and a plan without a k1 > 1 conv is untouched."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen.handplans import representative_plans

    hw = load_hardware("hw_configs/h200_calibrated.yaml")
    frozen = read_json(ROOT / "results" / "h200" / "plans_estage.json")
    c5 = next(Plan.from_dict(r["plan"]) for r in frozen["C5"]
              if r["plan"]["strategy"] == "smem" and r["plan"]["instruction"] == "wgmma")
    plain = representative_plans()["fused_wgmma_exchange_shuffle_reduce"]
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": False}):
        off, plain_off = simulate(c5, hw), simulate(plain, hw)
    with generator_switches({**codegen_switches(), "wgmma_im2col_tma": True}):
        on, plain_on = simulate(c5, hw), simulate(plain, hw)
    assert on.time_ns < 0.95 * off.time_ns
    assert on.bytes["hbm_read"] == off.bytes["hbm_read"] and on.bytes["l2_read"] == off.bytes["l2_read"]
    assert plain_on.time_ns == plain_off.time_ns
