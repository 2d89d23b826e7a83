"""What a built kernel is made of: the bytes of its sm_90a code, read from the cubins nvcc embeds.

A kernel's instructions (`.text.<kernel>`) and its parameter constant bank (`.nv.constant0.<kernel>`)
live in device memory; after an L2 flush the first warps to run fetch them from HBM, so Nsight
Compute's DRAM read bytes of a small kernel include them (results/h200/README.md). The simulator
adds them to a plan's HBM reads when the bench recorded them (`fusesim.sim.simulate(code_bytes=)`).
Reading them needs no CUDA tools: the .so carries its fatbin uncompressed, whose cubins are ELF64.
"""

from __future__ import annotations

import struct
from pathlib import Path

FATBIN_MAGIC = b"\x50\xed\x55\xba"
ELF_MAGIC = b"\x7fELF"


def _sections(blob: bytes, off: int) -> list[tuple[str, int]]:
    """(name, size) of every section of the little-endian ELF64 image at `off`."""
    shoff, = struct.unpack_from("<Q", blob, off + 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, off + 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", blob, off + shoff + i * shentsize) for i in range(shnum)]
    strtab = off + heads[shstrndx][4]
    out = []
    for name, _type, _flags, _addr, _off, size in heads:
        end = blob.index(b"\0", strtab + name)
        out.append((blob[strtab + name:end].decode("ascii", "replace"), size))
    return out


def code_bytes(artifact: str | Path) -> dict[str, int] | None:
    """{"text_bytes", "const_bytes", "cubins"} of a built .so (its embedded cubins) or a .cubin;
    None when no cubin can be read (a compressed fatbin, PTX only, a truncated file)."""
    blob = Path(artifact).read_bytes()
    if blob.startswith(ELF_MAGIC) and Path(artifact).suffix == ".cubin":
        starts = [0]
    else:
        fat = blob.find(FATBIN_MAGIC)
        if fat < 0:
            return None
        starts, at = [], fat
        while (at := blob.find(ELF_MAGIC, at + 1)) >= 0:
            starts.append(at)
    text = const = cubins = 0
    for s in starts:
        try:
            secs = _sections(blob, s)
        except (struct.error, ValueError, IndexError):
            continue
        t = sum(size for name, size in secs if name.startswith(".text."))
        if t:
            cubins += 1
            text += t
            const += sum(size for name, size in secs if name.startswith(".nv.constant0."))
    if not cubins:
        return None
    return {"text_bytes": text, "const_bytes": const, "cubins": cubins}
