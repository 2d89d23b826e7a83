"""Derived overrides: named, documented rules that keep a swept hardware description valid.

A sweep that sets `max_cluster_size: 32` on an H100 produces an invalid machine: the DSM tables
stop at 16 and no GPC holds 32 SMs. Rather than silently inventing numbers, a sweep spec opts in to
each rule by name (`derive: [cluster_tables, gpc_layout]`); every table or layout a rule touched
gets its provenance entry extended with "sweep-derived (<rule>): ...", so a result row can always be
traced back to which numbers were measured and which were extrapolated.

Rules run last, after the `vary` overrides and the `scale` factors, so they see the final numbers:
an extrapolated DSM entry continues the scaled table, and the per-block SMEM limit follows a
scaled per-SM capacity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fusesim.hardware import CLUSTER_BANDWIDTH_TABLES, CLUSTER_TABLES, L2_REDUCTION_RATES


def _sizes(max_cluster_size: int) -> list[int]:
    """Cluster sizes a table must cover: the powers of two from 2 up to max_cluster_size."""
    out, s = [], 2
    while s <= max_cluster_size:
        out.append(s)
        s *= 2
    return out


def _note(raw: dict[str, Any], key: str, rule: str, text: str) -> None:
    prov = raw.setdefault("provenance", {})
    old = prov.get(key, "")
    prov[key] = f"{old}; sweep-derived ({rule}): {text}" if old else f"sweep-derived ({rule}): {text}"


def cluster_tables(raw: dict[str, Any]) -> dict[str, Any]:
    """Fit the by-cluster-size tables (DSM push, pull and bulk bandwidth, DSM latency, barrier cost) to
    max_cluster_size.

    Entries above max_cluster_size are dropped. Missing sizes above the largest known one are
    extrapolated: per-SM DSM bandwidth is held at the value of the largest measured size (the
    H200 measurement is flat, 31-35 GB/s push from 2 to 16 blocks, so the SM's port, not the
    cluster, is the limit); latency and barrier cost grow by the last measured increment per
    doubling (both tables grow roughly linearly in log2(cluster size)). portable_cluster_size is
    clamped to max_cluster_size (a machine cannot guarantee more than it allows).
    """
    mcs = raw.get("max_cluster_size")
    if not isinstance(mcs, int) or mcs < 1 or mcs & (mcs - 1):
        return raw  # hardware validation reports the bad value itself
    want = _sizes(mcs)
    portable = raw.get("portable_cluster_size")
    if isinstance(portable, int) and portable > mcs:
        raw["portable_cluster_size"] = mcs
        _note(raw, "portable_cluster_size", "cluster_tables", f"clamped from {portable} to max_cluster_size {mcs}")
    for key in CLUSTER_TABLES:
        table = raw.get(key)
        if not isinstance(table, dict) or not table:
            continue
        known = {int(k): float(v) for k, v in table.items()}
        new: dict[int, float] = {}
        added: list[int] = []
        ks = sorted(known)
        for s in want:
            if s in known:
                new[s] = known[s]
                continue
            below = [k for k in ks if k < s]
            if not below:  # a size below every measured one: take the smallest measured
                new[s] = known[ks[0]]
            elif key in CLUSTER_BANDWIDTH_TABLES:
                new[s] = known[below[-1]]
            else:
                last = below[-1]
                prev = below[-2] if len(below) > 1 else None
                step = (known[last] - known[prev]) / math.log2(last / prev) if prev else 0.0
                new[s] = round(known[last] + step * math.log2(s / last), 3)
            added.append(s)
        dropped = [k for k in ks if k not in want]
        if added or dropped:
            raw[key] = new
            how = "held at the largest measured size" if key in CLUSTER_BANDWIDTH_TABLES else \
                "extrapolated by the last per-doubling increment"
            parts = []
            if added:
                parts.append(f"sizes {added} {how}")
            if dropped:
                parts.append(f"sizes {dropped} dropped (above max_cluster_size {mcs})")
            _note(raw, key, "cluster_tables", "; ".join(parts))
    return raw


def gpc_layout(raw: dict[str, Any]) -> dict[str, Any]:
    """Merge adjacent GPCs pairwise until the largest holds one max_cluster_size cluster.

    This models a successor whose GPCs are larger (same SM count). It is applied only when needed,
    so comparing max_cluster_size 16 against 32 on an H100 base also changes the layout of the 32
    point (H100 [18 x 6, 16, 8] -> [36, 36, 36, 24]); here 16-block clusters keep their 7 slots, but
    in general smaller clusters can gain or lose slots too. For a clean comparison at one fixed
    layout use the hypothetical base hw_configs/hopper_next.yaml.
    """
    mcs = raw.get("max_cluster_size")
    gpcs = raw.get("gpc_sm_counts")
    if not isinstance(mcs, int) or not isinstance(gpcs, list) or not gpcs:
        return raw
    if not all(isinstance(g, int) for g in gpcs):
        return raw
    before = list(gpcs)
    while max(gpcs) < mcs and len(gpcs) > 1:
        gpcs = [sum(gpcs[i:i + 2]) for i in range(0, len(gpcs), 2)]
    if gpcs != before:
        raw["gpc_sm_counts"] = gpcs
        _note(raw, "gpc_sm_counts", "gpc_layout",
              f"{before} merged pairwise to {gpcs} so a {mcs}-block cluster fits in one GPC")
    return raw


SMEM_RESERVED_PER_BLOCK_BYTES = 1024  # H100/H200: 233472 B per SM vs 232448 B opt-in per block


def smem_reserve(raw: dict[str, Any]) -> dict[str, Any]:
    """Keep the per-block SMEM opt-in limit 1 KB below the per-SM capacity, as on Hopper.

    The driver reserves 1 KB of shared memory per resident block (measured on H200: 233472 B per
    SM, 232448 B opt-in per block). Scaling both numbers by the same factor breaks that relation
    (x0.5 leaves 512 B of reserve), and a block the planner sizes to the per-block limit then no
    longer fits on an SM; a sweep over SMEM capacity should scale smem_per_sm_bytes and let this
    rule set the per-block limit.
    """
    per_sm = raw.get("smem_per_sm_bytes")
    if not isinstance(per_sm, int) or per_sm <= SMEM_RESERVED_PER_BLOCK_BYTES:
        return raw
    want = per_sm - SMEM_RESERVED_PER_BLOCK_BYTES
    if raw.get("smem_per_block_bytes") != want:
        old = raw.get("smem_per_block_bytes")
        raw["smem_per_block_bytes"] = want
        _note(raw, "smem_per_block_bytes", "smem_reserve",
              f"{old} -> smem_per_sm_bytes - {SMEM_RESERVED_PER_BLOCK_BYTES} (per-block reservation)")
    return raw


def l2_rates(raw: dict[str, Any]) -> dict[str, Any]:
    """Cap the L2's reduction rates at a swept L2 bandwidth.

    A reduction passes the L2, so the hardware file rejects a reduction rate above l2_bandwidth_gbps; the
    measured rates (red.add of rows or accumulator fragments, 2.3-3.7 TB/s on the H200) sit above an L2
    bandwidth swept low. This rule sets each such rate to the L2 bandwidth (the L2 is then the limit for
    the reductions too) and leaves the rates below it as measured.
    """
    l2 = raw.get("l2_bandwidth_gbps")
    if not isinstance(l2, int | float) or isinstance(l2, bool) or l2 <= 0:
        return raw
    for key in L2_REDUCTION_RATES:
        v = raw.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > l2:
            raw[key] = l2
            _note(raw, key, "l2_rates", f"{v} -> l2_bandwidth_gbps {l2} (a reduction passes the L2)")
    return raw


RULES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "cluster_tables": cluster_tables,
    "gpc_layout": gpc_layout,
    "smem_reserve": smem_reserve,
    "l2_rates": l2_rates,
}
