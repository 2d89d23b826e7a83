"""Packed result files (fusesim.stored): read by their .json name, byte-identical packing, and the
committed results kept small enough for a device call to send them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fusesim.report.measured import load_measured
from fusesim.stored import PACK_MIN_BYTES, exists, glob_json, logical, on_disk, pack, read_json
from fusesim.yamlio import read_mapping

ROOT = Path(__file__).resolve().parents[1]
DEVICE_SEND_LIMIT_BYTES = 64 << 20  # what one device call may send: the working tree plus what it carries
CARRY_ROOM_BYTES = 16 << 20  # kept free for the carried wheels and prebuilt kernels (.whl, .fscarry)


def _bench_doc() -> dict:
    plan = {"case_id": "G1", "strategy": "unfused"}
    return {"codegen": {"gemm_split_lean": True},
            "cases": [{"case": "G1", "plans": [{"strategy": "unfused", "plan": plan, "verify": {"ok": True},
                                                "time": {"queued_median_us": 5.5, "sync_median_us": 9.0}}]}]}


def test_packed_file_reads_as_its_json_name(tmp_path: Path) -> None:
    doc = _bench_doc()
    plain = tmp_path / "run_a.json"
    plain.write_text(json.dumps(doc))
    packed = pack(plain)
    assert packed.name == "run_a.json.gz" and not plain.exists()
    assert on_disk(plain) == packed and exists(plain) and not exists(tmp_path / "run_b.json")
    assert read_json(plain) == doc and read_json(packed) == doc
    assert read_mapping(plain) == doc  # the CLI's reader (fusesim calibrate --from, bench --plans file:)
    (tmp_path / "run_b.json").write_text(json.dumps(doc))
    assert glob_json(tmp_path / "run_*.json") == [tmp_path / "run_a.json", tmp_path / "run_b.json"]
    assert logical(packed) == plain
    with pytest.raises(FileNotFoundError, match="run_c.json"):
        read_json(tmp_path / "run_c.json")


def test_packing_is_deterministic(tmp_path: Path) -> None:
    """The same JSON packs to the same bytes (no name or time in the gzip header): repacking changes no commit."""
    text = json.dumps(_bench_doc())
    blobs = []
    for name in ("x.json", "y.json"):
        (tmp_path / name).write_text(text)
        blobs.append(pack(tmp_path / name).read_bytes())
    assert blobs[0] == blobs[1]


def test_measurements_load_the_same_packed(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "packed").mkdir()
    for sub in ("plain", "packed"):
        (tmp_path / sub / "bench_x.json").write_text(json.dumps(_bench_doc()))
    pack(tmp_path / "packed" / "bench_x.json")
    for how in (lambda d: d, lambda d: d / "bench_*.json", lambda d: d / "bench_x.json"):
        a, b = load_measured(how(tmp_path / "plain")), load_measured(how(tmp_path / "packed"))
        assert [(m.case, m.time_us) for m in a.items] == [(m.case, m.time_us) for m in b.items] == [("G1", 5.5)]
        assert not b.warnings and b.items[0].codegen == {"gemm_split_lean": True}


def test_pack_script_packs_and_checks(tmp_path: Path) -> None:
    big = tmp_path / "results" / "h200" / "big.json"
    big.parent.mkdir(parents=True)
    big.write_text(json.dumps({"rows": list(range(40_000))}))
    (big.parent / "small.json").write_text("{}")
    script = [sys.executable, str(ROOT / "scripts" / "pack_results.py"), "--root", str(tmp_path / "results")]
    check = subprocess.run([*script, "--check"], capture_output=True, text=True)
    assert check.returncode == 1 and "big.json" in check.stdout and "small.json" not in check.stdout
    assert subprocess.run(script, capture_output=True, text=True).returncode == 0
    assert (big.parent / "big.json.gz").is_file() and (big.parent / "small.json").is_file()
    assert read_json(big) == {"rows": list(range(40_000))}
    assert subprocess.run([*script, "--check"], capture_output=True, text=True).returncode == 0


def _tracked() -> list[Path]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / f for f in out.split("\0") if f and (ROOT / f).is_file()]


def test_committed_results_are_packed() -> None:
    big = [p.relative_to(ROOT) for p in _tracked()
           if p.suffix == ".json" and p.parts[len(ROOT.parts)] == "results" and p.stat().st_size > PACK_MIN_BYTES]
    assert not big, f"run scripts/pack_results.py before committing: {big[:5]}"


def test_working_tree_leaves_room_to_carry() -> None:
    """A device call refuses a tree over 64 MiB with what it carries; keep 16 MiB of that for the carry."""
    total = sum(p.stat().st_size for p in _tracked())
    assert total < DEVICE_SEND_LIMIT_BYTES - CARRY_ROOM_BYTES, f"tracked files {total / 2**20:.1f} MiB"
