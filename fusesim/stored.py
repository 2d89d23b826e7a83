"""Result files as committed: JSON, gzip-compressed once large (NAME.json -> NAME.json.gz).

The measured results outgrew what a device call may send (64 MiB with the working tree), and a run's
JSON compresses about 14x. `scripts/pack_results.py` packs every committed result over PACK_MIN_BYTES;
code keeps naming a result by its `.json` path, and these functions find whichever form is on disk, so
a report reads the same measurements and prints the same file names either way.
"""

from __future__ import annotations

import glob as _glob
import gzip
import json
from pathlib import Path
from typing import Any

GZ_SUFFIX = ".gz"
PACK_MIN_BYTES = 100_000  # results over this are committed packed (tests/test_stored.py keeps it so)


def on_disk(path: str | Path) -> Path | None:
    """The file that holds `path`: itself, else its packed twin (`path` + .gz); None if neither exists."""
    p = Path(path)
    if p.is_file():
        return p
    packed = p.with_name(p.name + GZ_SUFFIX)
    return packed if packed.is_file() else None


def exists(path: str | Path) -> bool:
    return on_disk(path) is not None


def read_text(path: str | Path) -> str:
    """The text of `path` or of its packed twin; FileNotFoundError names `path` when neither exists."""
    p = on_disk(path)
    if p is None:
        raise FileNotFoundError(f"no such file: {path}")
    if p.name.endswith(GZ_SUFFIX):
        return gzip.decompress(p.read_bytes()).decode()
    return p.read_text()


def read_json(path: str | Path) -> Any:
    return json.loads(read_text(path))


def logical(path: str | Path) -> Path:
    """The name code uses for a stored file: NAME.json for NAME.json.gz."""
    p = Path(path)
    return p.with_name(p.name[: -len(GZ_SUFFIX)]) if p.name.endswith(".json" + GZ_SUFFIX) else p


def glob_json(pattern: str | Path) -> list[Path]:
    """Sorted `.json` names of the files matching `pattern`, packed or not (a pattern ending .json also
    matches NAME.json.gz, listed as NAME.json)."""
    pat = str(pattern)
    hits = set(_glob.glob(pat))
    if pat.endswith(".json"):
        hits |= set(_glob.glob(pat + GZ_SUFFIX))
    return sorted({logical(h) for h in hits})


def pack(path: str | Path) -> Path:
    """Write `path` as `path`.gz (deterministic: no name or time in the header) and remove `path`."""
    p = Path(path)
    out = p.with_name(p.name + GZ_SUFFIX)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(gzip.compress(p.read_bytes(), compresslevel=9, mtime=0))
    tmp.replace(out)
    p.unlink()
    return out
