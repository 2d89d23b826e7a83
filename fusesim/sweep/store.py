"""The results file: an append-only CSV that survives `kill -9` and resumes without duplicates.

Why CSV and not Parquet while running: Parquet cannot be appended row by row, and a sweep must
lose nothing when killed. Each finished task appends its rows with one write() followed by fsync,
so after a crash the file holds every finished row plus at most one torn last line, which the
next run detects (no trailing newline, or the wrong number of fields) and drops before appending.
Every row carries a stable `point_id`; a rerun skips ids already present. Parquet is written from
the CSV at the end of a run (pyarrow, when installed).

One writer at a time: an exclusive lock file next to the CSV stops a second sweep from
interleaving rows into the same file (outputs of different sweeps never clobber each other).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fusesim.errors import InputError
from fusesim.yamlio import atomic_write

FINISHED = ("ok", "infeasible")  # statuses a rerun does not recompute (errors too, unless retried)
# Columns that are text even when they look like numbers: a hex point id "4155e123..." must not
# become a float, nor a case id "1" an int.
TEXT_COLUMNS = frozenset({"point_id", "sweep", "hw_base", "hw", "workload", "case", "strategy", "status", "error",
                          "hw_name", "hw_fingerprint", "plan_strategy", "pred_bound", "instruction", "plan",
                          "trace_file"})


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    if isinstance(v, dict | list | tuple):
        v = json.dumps(v, sort_keys=True)
    return str(v).replace("\r", " ").replace("\n", " ")  # one row = one line, always


def parse_cell(text: str) -> Any:
    """CSV cell back to a Python value: int, float, bool, None or str."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def format_row(columns: Sequence[str], row: dict[str, Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def read_rows(path: str | Path, typed: bool = True) -> tuple[list[str], list[dict[str, Any]]]:
    """Read a results CSV, ignoring a torn last line (what a killed writer can leave)."""
    data = Path(path).read_bytes()
    text, _ = _complete_text(data)
    lines = text.splitlines()
    if not lines:
        return [], []
    header = next(csv.reader([lines[0]]))
    rows = []
    for fields in csv.reader(lines[1:]):
        if len(fields) != len(header):
            continue
        rows.append({c: (parse_cell(v) if typed and c not in TEXT_COLUMNS else (v if v or not typed else None))
                     for c, v in zip(header, fields, strict=True)})
    return header, rows


def _complete_text(data: bytes) -> tuple[str, int]:
    """The part of the file up to its last newline, and how many bytes after it were torn off."""
    cut = data.rfind(b"\n") + 1
    return data[:cut].decode("utf-8", errors="replace"), len(data) - cut


class ResultStore:
    """Append-only, fsync'd, lock-protected CSV of sweep rows keyed by `point_id`."""

    def __init__(self, path: str | Path, columns: Sequence[str]):
        self.path = Path(path)
        self.columns = list(columns)
        self._fh: Any = None
        self._lock_fh: Any = None
        self.dropped_torn = 0
        self.dropped_bad = 0

    # ---- lifecycle ---------------------------------------------------------------------------------
    def open(self, retry_errors: bool = False) -> set[str]:
        """Lock, repair and open the file; return the point ids that need no recomputation."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock()
        done: set[str] = set()
        if self.path.exists() and self.path.stat().st_size > 0:
            done = self._repair(retry_errors)
        else:
            atomic_write(self.path, format_row(self.columns, {c: c for c in self.columns}))
        self._fh = open(self.path, "a", encoding="utf-8", newline="")  # noqa: SIM115 - closed in close()
        return done

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock, single-writer is the user's job
            return
        self._lock_fh = open(self.path.with_name(self.path.name + ".lock"), "w")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise InputError(str(self.path), None, "another sweep is writing this file; use another --out") from None

    def _repair(self, retry_errors: bool) -> set[str]:
        data = self.path.read_bytes()
        text, torn = _complete_text(data)
        lines = text.splitlines()
        header = next(csv.reader([lines[0]])) if lines else []
        if header != self.columns:
            raise InputError(str(self.path), None,
                             "was written by a sweep with other columns (another spec?); "
                             "choose another --out or delete the file")
        keep = [lines[0]]
        done: set[str] = set()
        pid_i, st_i = header.index("point_id"), header.index("status")
        for line, fields in zip(lines[1:], csv.reader(lines[1:]), strict=True):
            if len(fields) != len(header) or not fields[pid_i]:
                self.dropped_bad += 1
                continue
            if fields[pid_i] in done:  # cannot happen with one writer; never keep a duplicate anyway
                self.dropped_bad += 1
                continue
            if retry_errors and fields[st_i] not in FINISHED:
                self.dropped_bad += 1
                continue
            keep.append(line)
            done.add(fields[pid_i])
        self.dropped_torn = 1 if torn else 0
        if torn or len(keep) != len(lines):
            atomic_write(self.path, "\n".join(keep) + "\n")
        return done

    def fds(self) -> list[int]:
        """Descriptors a forked worker inherits and must close (see executors._worker_init)."""
        return [fh.fileno() for fh in (self._fh, self._lock_fh) if fh is not None]

    def append(self, rows: Iterable[dict[str, Any]]) -> None:
        """All rows of one task in one write, then fsync: after a crash they are there or torn."""
        text = "".join(format_row(self.columns, r) for r in rows)
        if not text:
            return
        self._fh.write(text)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_parquet(csv_path: str | Path, parquet_path: str | Path) -> bool:
    """Parquet copy of the CSV (typed columns); False when pyarrow is not installed."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return False
    header, rows = read_rows(csv_path)
    cols: dict[str, list[Any]] = {c: [r.get(c) for r in rows] for c in header}
    arrays = {}
    for c, vals in cols.items():
        kinds = {type(v) for v in vals if v is not None}
        if kinds <= {int}:
            arrays[c] = pa.array(vals, type=pa.int64())
        elif kinds <= {int, float}:
            arrays[c] = pa.array([None if v is None else float(v) for v in vals], type=pa.float64())
        elif kinds <= {bool}:
            arrays[c] = pa.array(vals, type=pa.bool_())
        else:
            arrays[c] = pa.array([None if v is None else _cell(v) for v in vals], type=pa.string())
    table = pa.table(arrays) if arrays else pa.table({})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    atomic_write(parquet_path, sink.getvalue().to_pybytes())
    return True
