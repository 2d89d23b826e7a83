"""nvcc build with a cache keyed by the source hash (source + device headers + flags).

Subprocess argument lists only (no shell). The shared object links the CUDA runtime statically,
so it loads next to any PyTorch build; the cubin mode is what CI uses to prove templates compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fusesim.codegen import INCLUDE, Source

ARCH = ["-gencode=arch=compute_90a,code=sm_90a"]
COMMON = ["-std=c++17", "-O3", "-lineinfo", "--expt-relaxed-constexpr", "-Xptxas=-warn-spills", "-diag-suppress=177"]


class BuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    d = Path(os.environ.get("FUSESIM_CACHE", Path.home() / ".cache" / "fusesim"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def nvcc() -> str:
    exe = shutil.which("nvcc")
    if exe is None:
        raise BuildError("nvcc not found on PATH")
    return exe


def _flags(mode: str) -> list[str]:
    if mode == "so":
        return [*ARCH, *COMMON, "-Xcompiler=-fPIC", "-shared", "-cudart=static"]
    if mode == "cubin":
        return [*ARCH, *COMMON, "--cubin"]
    raise ValueError(mode)


PERF_NOTE = "Potential Performance Loss"  # ptxas's notes, e.g. C7520: wgmma.mma_async serialized


def artifact_path(src: Source, mode: str = "so", out_dir: Path | None = None) -> Path:
    """Where build() caches `src` (built or not): the name carries the hash of source and flags."""
    key = hashlib.sha256((src.digest + " ".join(_flags(mode))).encode()).hexdigest()[:16]
    ext = ".so" if mode == "so" else ".cubin"
    return (out_dir or cache_dir()) / f"{src.name}_{key}{ext}"


def build(src: Source, mode: str = "so", out_dir: Path | None = None, verbose: bool = False) -> Path:
    """Compile `src`; return the cached artifact (a .so with fs_launch, or a .cubin)."""
    flags = _flags(mode)
    art = artifact_path(src, mode, out_dir)
    root = art.parent
    root.mkdir(parents=True, exist_ok=True)
    if art.exists():
        return art
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        cu = Path(tmp) / f"{src.name}.cu"
        cu.write_text(src.code)
        obj = Path(tmp) / f"out{art.suffix}"
        cmd = [nvcc(), *flags, f"-I{INCLUDE}", "-o", str(obj), str(cu)]
        if verbose:
            cmd.insert(1, "-Xptxas=-v")
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise BuildError(f"nvcc failed for {src.name}:\n{res.stderr[-4000:]}")
        if verbose or PERF_NOTE in res.stderr:
            art.with_suffix(".ptxas.txt").write_text(res.stderr)
        os.replace(obj, art)
    return art


def ptxas_perf_notes(art: Path | str) -> list[str]:
    """ptxas's "Potential Performance Loss" notes of a built artifact (kept beside it by build(); empty if
    none, or if it was built before build() kept them)."""
    log = Path(art).with_suffix(".ptxas.txt")
    if not log.exists():
        return []
    return [line.split(":", 1)[1].strip() for line in log.read_text().splitlines() if PERF_NOTE in line]


def stage_artifacts(arts: set[Path] | set[str], dest: Path | str) -> int:
    """Copy built artifacts into `dest` (a cache folder another machine unpacks), each with the ptxas notes
    build() kept beside it, so that what reads them there finds them; the number of artifacts copied."""
    Path(dest).mkdir(parents=True, exist_ok=True)
    for art in arts:
        shutil.copy2(art, dest)
        if (notes := Path(art).with_suffix(".ptxas.txt")).exists():
            shutil.copy2(notes, dest)
    return len(arts)


def write_source(src: Source, out_dir: Path) -> Path:
    """Write the .cu next to copies of the device headers, so `nvcc -I.` builds it standalone."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for hdr in INCLUDE.glob("*.cuh"):
        shutil.copyfile(hdr, out_dir / hdr.name)
    path = out_dir / f"{src.name}.cu"
    path.write_text(src.code)
    return path
