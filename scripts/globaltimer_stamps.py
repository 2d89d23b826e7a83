"""Shared by the per-block timeline probes (probe_wgmma_timeline.py, probe_fused_wgmma_stages.py): the
device code that declares a %globaltimer stamp array with a host reader, and the text edits that put
stamps into a generated translation unit (each refusing to run when the template no longer matches)."""

from __future__ import annotations


def stamp_decl(array: str, symbol: str) -> str:
    """`array`: the __device__ array declaration (e.g. "g_fs_st[2048][261]"); `symbol`: its name. Adds
    fs_now() (%globaltimer, ns) and an `extern "C" int fs_stamps(host)` that copies the array out."""
    return (f"\n__device__ unsigned long long {array};\n"
            "__device__ __forceinline__ unsigned long long fs_now() {\n"
            "  unsigned long long t;\n"
            '  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));\n'
            "  return t;\n"
            "}\n"
            'extern "C" int fs_stamps(unsigned long long* host) {\n'
            f"  return (int)cudaMemcpyFromSymbol(host, {symbol}, sizeof({symbol}));\n"
            "}\n")


def apply_marks(code: str, marks: list[tuple[str, str]], once: bool = False) -> str:
    """Replace each (old, new) in `code`; `old` must occur (exactly once with `once`)."""
    for old, new in marks:
        n = code.count(old)
        if n == 0 or (once and n != 1):
            raise SystemExit(f"template changed: cannot find {old[:60]!r}" + (" once" if once else ""))
        code = code.replace(old, new)
    return code


def load_verified(plan, name: str, code: str):
    """Build `code` (the instrumented source of `plan`) as NAME, verify it against the fp32 reference
    and bind a fresh problem: (the loaded kernel with its fs_stamps reader, the verification)."""
    import ctypes

    from fusesim.codegen import Source, generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, bind, make_problem, verify

    src = generate(plan)
    kern = Loaded(build(Source(name, src.family, code), "so"))
    kern.lib.fs_stamps.argtypes = [ctypes.c_void_p]
    ver = verify(kern, plan.chain, seed=3)
    bind(kern, make_problem(plan.chain, seed=4))
    return kern, ver


def stamped_launches(kern, host, reps: int = 7, lead_us: float = 0.0):
    """Launch `kern` `reps` times after an L2 flush (as fusesim bench times it); yield after each once
    `host` (a ctypes array of the stamp array's size) holds its stamps. `lead_us` > 0: hold the GPU that
    long after the flush (bench's queued mode), so the host has enqueued every kernel of the launch
    before the first starts; 0 (the committed probes): the kernels queue behind the flush alone."""
    import ctypes

    import torch

    from fusesim.gpu.timing import L2Flusher, hold_gpu

    flush = L2Flusher()
    for _ in range(reps):
        flush()
        if lead_us > 0:
            hold_gpu(lead_us)
        kern.launch(torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        if kern.lib.fs_stamps(ctypes.addressof(host)) != 0:
            raise SystemExit("cudaMemcpyFromSymbol failed")
        yield


def build_instrumented(plan, suffix: str, instrument) -> str:
    """nvcc `plan`'s source with `instrument` applied, as NAME + `suffix` (what load_verified builds on the
    device), into FUSESIM_CACHE here: the device's build then finds it in the carried cache."""
    from fusesim.codegen import Source, generate
    from fusesim.codegen.build import build

    src = generate(plan)
    return str(build(Source(src.name + suffix, src.family, instrument(src.code)), "so"))
