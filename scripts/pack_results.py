"""Pack the large result JSONs under results/ (NAME.json -> NAME.json.gz), before they are committed.

A device call sends the working tree and what it carries, 64 MiB at most; the measured results had grown
to 52 MB of JSON, which compresses about 14x. Everything in fusesim reads a result by its .json name and
finds the packed file (fusesim.stored), so the reports regenerate byte for byte either way.

    python3 scripts/pack_results.py            # pack every results/**/*.json over 100 kB, print a table
    python3 scripts/pack_results.py --check    # list the ones not packed yet; exit 1 if any
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fusesim.stored import PACK_MIN_BYTES, pack  # noqa: E402


def unpacked(root: Path, min_bytes: int = PACK_MIN_BYTES) -> list[Path]:
    """The result JSONs under `root` over `min_bytes` still stored plain."""
    return sorted(p for p in root.rglob("*.json") if p.is_file() and p.stat().st_size > min_bytes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT / "results")
    ap.add_argument("--min-bytes", type=int, default=PACK_MIN_BYTES)
    ap.add_argument("--check", action="store_true", help="only list what is not packed; exit 1 if anything is")
    args = ap.parse_args()
    todo = unpacked(args.root, args.min_bytes)
    if args.check:
        for p in todo:
            print(f"not packed: {p.relative_to(args.root.parent)} ({p.stat().st_size} bytes)")
        return 1 if todo else 0
    before = after = 0
    for p in todo:
        size = p.stat().st_size
        out = pack(p)
        before, after = before + size, after + out.stat().st_size
        print(f"{out.relative_to(args.root.parent)}  {size / 1e6:7.2f} MB -> {out.stat().st_size / 1e6:6.2f} MB")
    print(f"packed {len(todo)} files: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
