"""Where does a split-K gemm_wgmma GEMM's tail go? A per-block %globaltimer timeline with the split-K steps
stamped, every block kept (not only summaries), one device call.

The weight-streaming cases' gemm1 (and the small cases' split gemm0) spend 4-9 us from the median block's
last wgmma to the last block's end (results/h200/probe_wgmma_timeline*.json). The stamps here split that
time per block: start, first stage in the consumer, last wgmma done, the staged partial red.added (just
before the ticket), the ticket's atomic returned (after every thread's fence), end; with the block's SM and
whether it was its tile's last part (the one that converts). Plans: the fastest verified unfused wgmma plan
per case of the last whole H200 run (results/h200/final5_paper_*.json), built here, verified once, then
launched after an L2 flush (as fusesim bench times it) seven times, with bench's host lead.

    FUSESIM_CACHE=DIR python3 scripts/probe_splitk_tail.py --build [CASE...]   (here: nvcc them into the cache)
    python3 scripts/probe_splitk_tail.py OUT.json [CASE...]                    (on the GPU machine)

Without options every split GEMM red.adds into one tile (`GEMM_SPLIT_SHARED_MIN_BYTES` = 0, whatever the
generator's default); `--shared` anywhere: every split GEMM sums its parts in slices (`capability.gemm_split_shared` with
GEMM_SPLIT_SHARED_MIN_BYTES = 1: each part stores its partial into its own workspace slice, the parts wait for
each other, then each sums a share of the tile) instead of by red.add into one tile; `--lean` too: the slices lean
(capability.GEMM_SPLIT_LEAN: no store of a part's own share, one epoch-counting ticket per part).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from globaltimer_stamps import apply_marks, build_instrumented, load_verified, stamp_decl, stamped_launches  # noqa: E402

FIELDS = ("start", "first_data", "mma_done", "red_issued", "ticket_back", "end", "sm", "last")
NF = len(FIELDS)
STAMP_DECL = stamp_decl(f"g_fs_stamp[2][4096][{NF}]", "g_fs_stamp")
CASES = ("G5", "G8", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "G4", "G6", "G7", "G10")
FINALS = ("results/h200/final5_paper_gemm_chains.json", "results/h200/final5_paper_gated_ffn.json")


def instrument(code: str) -> str:
    """Stamp a gemm_wgmma translation unit (both GEMM kernels): thread 128 (the first consumer) records."""
    marks = [
        ("#include \"wgmma.cuh\"\n", "#include \"wgmma.cuh\"\n" + STAMP_DECL),
        (") return;\n  if constexpr (PDL_PRIMARY)",
         ") return;\n  const unsigned long long fs_t0 = fs_now();\n"
         "  unsigned long long fs_t1 = 0, fs_t2 = 0, fs_t3 = 0, fs_t4 = 0, fs_last = 0;\n  if constexpr (PDL_PRIMARY)"),
        ("      fs::wg::mbar_wait(full + s, (t / STAGES) & 1);\n      const unsigned char* st = smem + s * STAGE_BYTES;\n",
         "      fs::wg::mbar_wait(full + s, (t / STAGES) & 1);\n      if (t == 0) fs_t1 = fs_now();\n"
         "      const unsigned char* st = smem + s * STAGE_BYTES;\n"),
        ("    fs::wg::wgmma_wait<0>();\n    pin(acc0);\n", "    fs::wg::wgmma_wait<0>();\n    fs_t2 = fs_now();\n    pin(acc0);\n"),
    ]  # then the split-K steps (either form, whichever the kernels have), and the stamp before each kernel's end
    code = apply_marks(code, marks)
    split_marks = [
        ("    int* ticket = tickets + tile;\n    if (fs::inter_cluster_ticket(ticket, SPLIT)) {\n",
         "    int* ticket = tickets + tile;\n    fs_t3 = fs_now();\n    const bool fs_is_last = fs::inter_cluster_ticket(ticket, SPLIT);\n"
         "    fs_t4 = fs_now();\n    fs_last = fs_is_last;\n    if (fs_is_last) {\n"),
        ("    fs::split_parts_barrier(tickets + tile, SPLIT);\n",
         "    fs_t3 = fs_now();\n    fs::split_parts_barrier(tickets + tile, SPLIT);\n    fs_t4 = fs_now();\n"),
        ("    fs::split_parts_barrier_lean(tickets + tile, SPLIT);\n",
         "    fs_t3 = fs_now();\n    fs::split_parts_barrier_lean(tickets + tile, SPLIT);\n    fs_t4 = fs_now();\n"),
    ]
    if not any(old in code for old, _new in split_marks):
        raise SystemExit("template changed: no split-K step found")
    for old, new in split_marks:
        code = code.replace(old, new)
    end = "\n}\n\nMapCache map_x, map_w0, map_w1;"
    stamp = ("\n  if (threadIdx.x == 128) {\n    unsigned int sm;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
             "    unsigned long long* o = g_fs_stamp[PDL_SECONDARY ? 1 : 0][blockIdx.x];\n"
             "    o[0] = fs_t0; o[1] = fs_t1; o[2] = fs_t2; o[3] = fs_t3; o[4] = fs_t4; o[5] = fs_now(); o[6] = sm;"
             " o[7] = fs_last;\n  }")
    if code.count(end) != 2:
        raise SystemExit("template changed: kernel end not found")
    return code.replace(end, stamp + end)


def capability_mode() -> int:
    from fusesim import capability

    return int(capability.GEMM_SPLIT_SHARED_MIN_BYTES)


def plans(cases: tuple[str, ...]) -> dict:
    from wgmma_variants import base_plans

    return base_plans(cases, FINALS)


def blocks_us(rows: list[list[int]], t_ref: int) -> list[dict]:
    """Per block: each stamp in us from t_ref (None where the kernel has no such step), SM and last flag."""
    out = []
    for r in rows:
        d = {f: (None if r[i] == 0 else round((r[i] - t_ref) / 1e3, 3)) for i, f in enumerate(FIELDS[:6])}
        d["sm"], d["last"] = int(r[6]), bool(r[7])
        out.append(d)
    return out


def quantiles(v: list[float]) -> dict[str, float]:
    v = sorted(v)
    pick = lambda q: v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]  # noqa: E731
    return {"min": v[0], "p10": pick(0.1), "median": statistics.median(v), "p90": pick(0.9), "max": v[-1]}


def summary(blocks: list[dict]) -> dict:
    """Quantiles of each step's time and of the gaps between steps, over the blocks."""
    s = {f: quantiles([b[f] for b in blocks]) for f in ("start", "mma_done", "end") if all(b[f] is not None for b in blocks)}
    gaps = {"mma_to_red_issued": ("mma_done", "red_issued"), "red_issued_to_ticket": ("red_issued", "ticket_back"),
            "ticket_to_end": ("ticket_back", "end"), "mma_to_end": ("mma_done", "end")}
    for name, (a, b) in gaps.items():
        for who, sel in (("all", lambda x: True), ("last", lambda x: x["last"]), ("others", lambda x: not x["last"])):
            v = [x[b] - x[a] for x in blocks if sel(x) and x[a] is not None and x[b] is not None]
            if v:
                s[f"{name}_{who}"] = quantiles(v)
    return s


def main() -> int:
    argv = sys.argv[1:]
    from fusesim import capability

    suffix = "_splitk_tail"
    capability.GEMM_SPLIT_SHARED_MIN_BYTES = 0  # by default every split GEMM red.adds into one tile (the committed probe)
    if "--shared" in argv:  # every split GEMM sums in slices, a share per part
        argv.remove("--shared")
        capability.GEMM_SPLIT_SHARED_MIN_BYTES = 1
        suffix += "_shared"
    if "--lean" in argv:  # and lean (capability.GEMM_SPLIT_LEAN): no store of a part's own share, one ticket
        argv.remove("--lean")
        capability.GEMM_SPLIT_LEAN = True
        suffix += "_lean"
    if argv[:1] == ["--build"]:
        for case, plan in plans(tuple(argv[1:]) or CASES).items():
            print(case, build_instrumented(plan, suffix, instrument), flush=True)
        return 0
    import ctypes

    import torch

    from fusesim.codegen import generate
    from fusesim.gpu.timing import HOST_LEAD_US

    out = Path(argv[0])
    cases = tuple(argv[1:]) or CASES
    result = {"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(), "host_lead_us": HOST_LEAD_US,
              "split_shared_min_bytes": capability_mode(), "split_lean": capability.GEMM_SPLIT_LEAN, "fields": FIELDS,
              "cases": {}}
    host = (ctypes.c_ulonglong * (2 * 4096 * NF))()
    for case, plan in plans(cases).items():
        src = generate(plan)
        kern, ver = load_verified(plan, src.name + suffix, instrument(src.code))
        grids = [k.grid_blocks for k in plan.kernels]
        reps = []
        for _ in stamped_launches(kern, host, lead_us=HOST_LEAD_US):
            rows = [[[host[(g * 4096 + b) * NF + i] for i in range(NF)] for b in range(grids[g])] for g in range(2)]
            t_ref = min(r[0] for r in rows[0])
            per = {f"gemm{g}": blocks_us(rows[g], t_ref) for g in range(2)}
            reps.append({"total_us": max(b["end"] for b in per["gemm1"]), "blocks": per})
        reps.sort(key=lambda r: r["total_us"])
        med = reps[len(reps) // 2]
        result["cases"][case] = {
            "plan": plan.to_dict(), "verify": ver, "totals_us": [r["total_us"] for r in reps],
            "median_rep": {g: {"summary": summary(b), "blocks": b} for g, b in med["blocks"].items()}}
        line = [f"{case}: ok={ver.get('ok')} total {med['total_us']:.1f}"]
        for g in ("gemm0", "gemm1"):
            sm = result["cases"][case]["median_rep"][g]["summary"]
            txt = f"{g} mma_done p10/med/max {sm['mma_done']['p10']:.1f}/{sm['mma_done']['median']:.1f}/" \
                  f"{sm['mma_done']['max']:.1f} end med/max {sm['end']['median']:.1f}/{sm['end']['max']:.1f}"
            if "red_issued_to_ticket_all" in sm:
                tail = sm.get("ticket_to_end_last", sm["ticket_to_end_all"])
                txt += (f" | mma->red {sm['mma_to_red_issued_all']['median']:.2f}"
                        f" red->ticket {sm['red_issued_to_ticket_all']['median']:.2f}/{sm['red_issued_to_ticket_all']['max']:.2f}"
                        f" (last) ticket->end {tail['median']:.2f}/{tail['max']:.2f}")
            line.append(txt)
        print(" | ".join(line), flush=True)
        out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
