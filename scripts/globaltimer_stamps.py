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
