"""Carry the generated-kernel mechanisms of a measured GH100 hardware file to another GH100 part.

The simulator's generated-kernel mechanisms (`fusesim/sim/README.md`: the cp.async and TMA refills, the
wgmma stage handshake, the cluster-barrier skew, the split-K and inter_cluster_reduce reductions, the
ticket and convert, the kernel start, PDL release, the im2col loader) were measured or fitted on the H200
(`hw_configs/h200.yaml`). The H100 SXM has the same SM, L2 design and front end, so they carry over; a
file without them simulates the kernels as the simulator did before them (40% MAPE on the H200's
kernels, 30% on the H100's: `benchmarks/h100.md`). SM-clocked latencies and per-SM rates scale by the clock
ratio (the H100 PCIe's 1755 MHz; the SXM parts share 1980), whole-GPU L2 rates by the ratio of the files' L2
bandwidths, counts, per-cycle rates and the front end's times not at all.

    python3 -m fusesim.calibrate.carry            # rewrites the targets' mechanism lines from h200.yaml
    python3 -m fusesim.calibrate.carry --check    # exit 1 if a target's values differ from the derivation
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from fusesim.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "hw_configs" / "h200.yaml"
TARGETS = (ROOT / "hw_configs" / "h100_sxm.yaml", ROOT / "hw_configs" / "h100_pcie.yaml")

# how each mechanism moves to a part with another SM clock
CLOCKED_NS = ("cp_async_refill_ns", "wgmma_stage_handshake_ns", "cluster_barrier_skew_ns", "tma_refill_ns",
              "wgmma_im2col_arrive_ns", "wgmma_im2col_react_ns", "im2col_decode_ns", "inter_cluster_ticket_ns",
              "inter_cluster_convert_ns", "inter_cluster_convert_round_trip_ns", "cluster_release_ns")
CLOCKED_RATE = ("l2_fragment_reduction_gbps_per_sm", "l2_row_reduction_gbps_per_sm", "dsm_bulk_bandwidth_gbps_per_sm")
L2_RATE = ("l2_reduction_bandwidth_gbps", "l2_fragment_reduction_bandwidth_gbps", "l2_row_reduction_bandwidth_gbps")
UNSCALED = ("cp_async_groups_in_flight", "cp_async_bytes_per_sm_cycle", "kernel_start_us", "graph_kernel_gap_us",
            "pdl_release_us")
MECHANISMS = UNSCALED + CLOCKED_NS + CLOCKED_RATE + L2_RATE
MARK = "carried from hw_configs/h200.yaml"  # starts every carried provenance entry


def _scale(value: Any, factor: float) -> Any:
    if isinstance(value, dict):
        return {k: _scale(v, factor) for k, v in value.items()}
    return value if factor == 1.0 else round(float(value) * factor, 1)


def derive(source: dict[str, Any], target: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """{field: (value, provenance)} of the mechanisms `source` sets, as they carry to `target`'s clock."""
    src_mhz, dst_mhz = source["clock_mhz"], target["clock_mhz"]
    clock = float(src_mhz) / float(dst_mhz)
    src_l2, dst_l2 = source["l2_bandwidth_gbps"], target["l2_bandwidth_gbps"]
    out: dict[str, tuple[Any, str]] = {}
    for key in MECHANISMS:
        if source.get(key) is None:
            continue
        if key in CLOCKED_NS:
            factor, what = clock, f"the clock, {src_mhz} -> {dst_mhz} MHz"
        elif key in CLOCKED_RATE:
            factor, what = 1 / clock, f"the clock, {src_mhz} -> {dst_mhz} MHz"
        elif key in L2_RATE:
            factor, what = float(dst_l2) / float(src_l2), f"the L2 bandwidth, {src_l2} -> {dst_l2} GB/s"
        else:
            factor, what = 1.0, ""
        how = f"x {factor:.3f} for {what}" if factor != 1.0 else "unscaled"
        prov = f"{MARK} (the same GH100 SM; {how}; not measured on this part): {source['provenance'].get(key, '')}"
        out[key] = (_scale(source[key], factor), prov)
    return out


def _yaml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml_value(v)}" for k, v in value.items()) + "}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rewrite(text: str, carried: dict[str, tuple[Any, str]]) -> str:
    """The target file's text with its mechanism lines (values after `kernel_gap_us`, provenance at the end of
    the provenance block) replaced by `carried`; every other line as it was."""
    keys = "|".join(MECHANISMS)
    lines = [ln for ln in text.splitlines() if not re.match(rf"^ {{0,2}}({keys}):", ln)]
    gap = next(i for i, ln in enumerate(lines) if ln.startswith("kernel_gap_us:"))
    values = [f"{k}: {_yaml_value(v)}" for k, (v, _p) in carried.items()]
    lines[gap + 1:gap + 1] = values
    prov_at = next(i for i, ln in enumerate(lines) if ln.startswith("provenance:"))
    end = prov_at + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    lines[end:end] = [f"  {k}: {_quoted(p)}" for k, (_v, p) in carried.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report targets whose values differ; write nothing")
    args = ap.parse_args(argv)
    source = read_mapping(SOURCE)
    stale = []
    for path in TARGETS:
        target = read_mapping(path)
        carried = derive(source, target)
        if args.check:
            if any(target.get(k) != v for k, (v, _p) in carried.items()):
                stale.append(path.name)
            continue
        path.write_text(rewrite(path.read_text(), carried))
        print(f"{path.relative_to(ROOT)}: {len(carried)} mechanisms carried from {SOURCE.relative_to(ROOT)}")
    if stale:
        print(f"stale: {', '.join(stale)} (run python3 -m fusesim.calibrate.carry)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
