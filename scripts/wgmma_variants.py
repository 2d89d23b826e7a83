"""Unfused gemm_wgmma variants of the weight-streaming cases, for one device run that asks which
tile width, split-K and ring depth each GEMM of the chain wants when M = 128 and the weights stream.

Per case (the final run's fastest unfused wgmma plan as the base): each GEMM alone, the other kept
at the base, takes per block_n the split whose grid comes closest to one block per SM (with the
deepest ring and a 4-deep one) and the split closest to two blocks per SM (the deepest ring two of
which fit an SM); plus both GEMMs at rings small enough that a gemm1 block fits next to a gemm0
block (so the programmatic dependent launch can start gemm1's weight loads while gemm0 drains). Writes {case: [{plan, source}]} for
`fusesim bench --plans file:...`. Runs here, no GPU:

    python3 scripts/wgmma_variants.py --out results/h200/plans_wgmma_sweep.json

`--one-wave`: instead, per case each GEMM alone at every other tile width with the largest split that keeps
its grid within one block per SM (the deepest ring that fits and one two stages shallower); `--finals`
names the bench results whose fastest plans are the bases (scripts/device_one_wave.sh):

    python3 scripts/wgmma_variants.py --one-wave --finals results/h200/final11_paper_gemm_chains.json \
        results/h200/final11_paper_gated_ffn.json --out results/h200/plans_one_wave.json

`--deep`: instead, per case the base and its rings as deep as SMEM allows (gemm0, gemm1, both; same tiles and
split), for the H200, where HBM may want more weight bytes in flight than 6 stages of 128 x 64 tiles give
(scripts/device_one_wave.sh with PLANS_FILE and PREFIX set):

    python3 scripts/wgmma_variants.py --deep --finals results/h200/final11_paper_gemm_chains.json \
        results/h200/final11_paper_gated_ffn.json --out results/h200/plans_deep_ws.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from fusesim.capability import (
    MAX_STAGES,
    SMEM_LIMIT_BYTES,
    WGMMA_BLOCK_N,
    WGMMA_MAX_SPLIT,
    can_build,
    wgmma_gemm_smem_bytes,
    wgmma_threads,
)
from fusesim.plan import Kernel, Plan, Tiles
from fusesim.stored import read_json

SM_COUNT = 132
SM_SMEM_BYTES = 233472  # per SM, less 1 KiB reserved per block
CASES = ("G5", "G8", "S1", "S2", "S3", "S4", "S5", "S6", "S7")
FINALS = ("results/h200/final_paper_gemm_chains.json", "results/h200/final_paper_gated_ffn.json")


def base_plans(cases: tuple[str, ...] = CASES, finals: tuple[str, ...] = FINALS) -> dict[str, Plan]:
    """Per case of `cases`, the fastest verified unfused wgmma plan of the final run's files `finals`."""
    best: dict[str, tuple[float, Plan]] = {}
    for f in finals:
        for c in read_json(f)["cases"]:
            for r in c["plans"]:
                t = (r.get("time") or {}).get("queued_median_us")
                p = r.get("plan")
                if c["case"] in cases and t and p and p["strategy"] == "unfused" and p["instruction"] == "wgmma":
                    if c["case"] not in best or t < best[c["case"]][0]:
                        best[c["case"]] = (t, Plan.from_dict(p))
    return {k: v[1] for k, v in best.items()}


def _variant(kern: Kernel, rows: int, cols: int, block_n: int, split: int, stages: int, gated: bool) -> Kernel:
    tiles = -(-rows // 128) * (cols // block_n)
    return dataclasses.replace(
        kern, grid_blocks=tiles * split, threads=wgmma_threads(128), stages=stages,
        smem_bytes=wgmma_gemm_smem_bytes(128, block_n, stages, gated),
        tiles=Tiles(block_m=128, block_n=block_n, block_k=64, block_l=0))


def _widths(rows: int, cols: int, depth: int, gated: bool) -> list[tuple[int, int, list[int]]]:
    """(block_n, tiles, split-K part counts) of every wgmma tile width a GEMM's columns allow, block_m 128."""
    return [(bn, -(-rows // 128) * (cols // bn), list(range(1, min(WGMMA_MAX_SPLIT, depth // 64) + 1)))
            for bn in WGMMA_BLOCK_N if not cols % bn and not (gated and bn > 128)]


def _kernel_variants(kern: Kernel, rows: int, cols: int, depth: int, gated: bool) -> list[Kernel]:
    """Per block_n: the split whose grid comes closest to one block per SM (deepest ring, and a
    4-deep one), and the split closest to two blocks per SM with the deepest ring two of which fit."""
    out = []
    for bn, tiles, splits in _widths(rows, cols, depth, gated):
        fits = [st for st in (2, 3, 4, 6) if wgmma_gemm_smem_bytes(128, bn, st, gated) <= SMEM_LIMIT_BYTES]
        one = [s for s in splits if tiles * s <= SM_COUNT]
        if one and fits:
            s1 = max(one)
            for st in {max(fits), 4} & set(fits):
                out.append(_variant(kern, rows, cols, bn, s1, st, gated))
        two_fit = [st for st in fits if 2 * (wgmma_gemm_smem_bytes(128, bn, st, gated) + 1024) <= SM_SMEM_BYTES]
        two = [s for s in splits if SM_COUNT < tiles * s <= 2 * SM_COUNT]
        if two and two_fit:
            out.append(_variant(kern, rows, cols, bn, max(two), max(two_fit), gated))
    return out


def _co_resident(kern: Kernel, rows: int, cols: int, depth: int, gated: bool) -> list[Kernel]:
    """Per block_n: one wave with the deepest ring that leaves half an SM's SMEM free."""
    out = []
    for bn, tiles, splits in _widths(rows, cols, depth, gated):
        one = [s for s in splits if tiles * s <= SM_COUNT]
        half = [st for st in (2, 3, 4, 6) if 2 * (wgmma_gemm_smem_bytes(128, bn, st, gated) + 1024) <= SM_SMEM_BYTES]
        if one and half:
            out.append(_variant(kern, rows, cols, bn, max(one), max(half), gated))
    return out


def _one_wave_variants(kern: Kernel, rows: int, cols: int, depth: int, gated: bool) -> list[Kernel]:
    """Per block_n: the largest split that keeps the grid within one block per SM, with the deepest ring that
    fits and one two stages shallower (wider tiles: less of each stage is the re-read activation tile)."""
    out = []
    for bn, tiles, splits in _widths(rows, cols, depth, gated):
        one = [s for s in splits if tiles * s <= SM_COUNT]
        fits = [st for st in range(3, 9) if wgmma_gemm_smem_bytes(128, bn, st, gated) <= SMEM_LIMIT_BYTES]
        if one and fits:
            for st in sorted({max(fits), max(max(fits) - 2, min(fits))}, reverse=True):
                out.append(_variant(kern, rows, cols, bn, max(one), st, gated))
    return out


def one_wave_variants(base: Plan) -> list[tuple[Plan, str]]:
    """The base, then each GEMM's one-wave variants (`_one_wave_variants`) of another tile width than the base's, the
    other GEMM as in the base."""
    ch = base.chain
    g0, g1 = base.kernels
    out: list[tuple[Plan, str]] = [(base, "base: the run's fastest unfused wgmma plan")]
    out += [(dataclasses.replace(base, kernels=(k, g1)), "gemm0 one-wave variant")
            for k in _one_wave_variants(g0, ch.m, ch.n, ch.k, ch.gated) if k.tiles.block_n != g0.tiles.block_n]
    out += [(dataclasses.replace(base, kernels=(g0, k)), "gemm1 one-wave variant")
            for k in _one_wave_variants(g1, ch.m, ch.l, ch.n, False) if k.tiles.block_n != g1.tiles.block_n]
    return buildable_unique(out)


def _deepest(kern: Kernel, gated: bool) -> Kernel | None:
    """`kern` with the deepest ring its tiles fit in SMEM (at most MAX_STAGES), or None where that is its own."""
    t = kern.tiles
    fits = [st for st in range(kern.stages + 1, MAX_STAGES + 1)
            if wgmma_gemm_smem_bytes(t.block_m, t.block_n, st, gated) <= SMEM_LIMIT_BYTES]
    if not fits:
        return None
    return dataclasses.replace(kern, stages=max(fits), smem_bytes=wgmma_gemm_smem_bytes(t.block_m, t.block_n, max(fits), gated))


def deep_variants(base: Plan) -> list[tuple[Plan, str]]:
    """The base, then its GEMMs' rings as deep as SMEM allows: gemm0 alone, gemm1 alone, both (the same tiles, split
    and grid: more weight bytes in flight per SM, which the H200's HBM may want where the H100's did not)."""
    g0, g1 = base.kernels
    d0, d1 = _deepest(g0, base.chain.gated), _deepest(g1, False)
    out: list[tuple[Plan, str]] = [(base, "base: the run's fastest unfused wgmma plan")]
    if d0:
        out.append((dataclasses.replace(base, kernels=(d0, g1)), f"gemm0 ring {g0.stages} -> {d0.stages}"))
    if d1:
        out.append((dataclasses.replace(base, kernels=(g0, d1)), f"gemm1 ring {g1.stages} -> {d1.stages}"))
    if d0 and d1:
        out.append((dataclasses.replace(base, kernels=(d0, d1)), f"both rings {g0.stages}/{g1.stages} -> {d0.stages}/{d1.stages}"))
    return buildable_unique(out)


def variants(base: Plan) -> list[tuple[Plan, str]]:
    ch = base.chain
    g0, g1 = base.kernels
    v0 = _kernel_variants(g0, ch.m, ch.n, ch.k, ch.gated)
    v1 = _kernel_variants(g1, ch.m, ch.l, ch.n, False)
    out: list[tuple[Plan, str]] = [(base, "base: the final run's fastest unfused wgmma plan")]
    out += [(dataclasses.replace(base, kernels=(k, g1)), "gemm0 variant") for k in v0]
    out += [(dataclasses.replace(base, kernels=(g0, k)), "gemm1 variant") for k in v1]
    # both rings small enough that a gemm1 block co-resides with a gemm0 block (PDL overlap)
    small0 = _co_resident(g0, ch.m, ch.n, ch.k, ch.gated)
    small1 = _co_resident(g1, ch.m, ch.l, ch.n, False)
    out += [(dataclasses.replace(base, kernels=(a, b)), "co-resident rings") for a in small0 for b in small1]
    return buildable_unique(out)


def buildable_unique(out: list[tuple[Plan, str]]) -> list[tuple[Plan, str]]:
    """The buildable plans of `out`, first occurrence of each, marked buildable."""
    seen: set[str] = set()
    kept = []
    for p, why in out:
        key = p.to_json()
        if key in seen or not can_build(p)[0]:
            continue
        seen.add(key)
        kept.append((dataclasses.replace(p, buildable=True), why))
    return kept


def write_plans(path: str, per_case: dict[str, list[tuple[Plan, str]]]) -> None:
    """{case: [{plan, source}]} for `fusesim bench --plans file:...`; prints the count per case."""
    frozen: dict[str, list[dict[str, Any]]] = {}
    for case, vs in sorted(per_case.items()):
        frozen[case] = [{"plan": p.to_dict(), "source": why} for p, why in vs]
        print(f"{case}: {len(vs)} plans")
    Path(path).write_text(json.dumps(frozen, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/h200/plans_wgmma_sweep.json")
    ap.add_argument("--max-per-case", type=int, default=24)
    ap.add_argument("--finals", nargs="+", default=list(FINALS), help="bench results whose fastest plans are the bases")
    ap.add_argument("--one-wave", action="store_true", help="only each GEMM's one-wave variants (one_wave_variants)")
    ap.add_argument("--deep", action="store_true", help="only the base's rings as deep as they fit (deep_variants)")
    args = ap.parse_args()
    make = one_wave_variants if args.one_wave else deep_variants if args.deep else variants
    bases = base_plans(finals=tuple(args.finals))
    write_plans(args.out, {case: make(base)[: args.max_per_case] for case, base in bases.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
