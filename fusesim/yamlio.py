"""Reading YAML/JSON files and applying dotted-path overrides, with errors that name the file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from fusesim.errors import InputError
from fusesim.stored import on_disk, read_text


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load that refuses a key given twice in one mapping (PyYAML keeps the last one silently, so a
    workload with `m: 128` and `m: 256` in one case would run M = 256 without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Load a YAML (or JSON) file whose top level must be a mapping."""
    p = Path(path)
    found = on_disk(p)  # a committed result may be stored packed (fusesim.stored)
    if found is None:
        raise InputError(str(path), None, "a folder, not a file" if p.is_dir() else "no such file")
    try:
        text = read_text(found)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(str(path), None, f"cannot read: {exc}") from None
    try:
        data = (json.loads(text, object_pairs_hook=_duplicate_pairs) if p.suffix == ".json"
                else yaml.load(text, Loader=_UniqueKeyLoader))  # noqa: S506 - a SafeLoader subclass
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise InputError(str(path), None, f"JSON syntax error at line {exc.lineno}: {exc.msg}") from None
        raise InputError(str(path), None, str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        if problem.startswith("duplicate key"):  # _UniqueKeyLoader
            raise InputError(str(path), None, f"{problem}{where} (each key once per mapping)") from None
        raise InputError(str(path), None, f"YAML syntax error{where}: {problem}") from None
    if not isinstance(data, dict):
        raise InputError(str(path), None, "top level must be a mapping")
    return data


def _coerce_key(container: dict, key: str) -> Any:
    """Dotted paths are strings; tables keyed by cluster size use int keys."""
    if key in container:
        return key
    if key.lstrip("-").isdigit() and (int(key) in container or any(isinstance(k, int) for k in container)):
        return int(key)
    return key


def set_dotted(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Return a copy of `data` with the value at dotted `path` replaced (intermediate maps created)."""
    out = copy.deepcopy(data)
    node: Any = out
    parts = path.split(".")
    for part in parts[:-1]:
        if not isinstance(node, dict):
            raise InputError(None, path, "path goes through a non-mapping value")
        key = _coerce_key(node, part)
        if key not in node or node[key] is None:
            node[key] = {}
        node = node[key]
    if not isinstance(node, dict):
        raise InputError(None, path, "path goes through a non-mapping value")
    node[_coerce_key(node, parts[-1])] = value
    return out


def get_dotted(data: dict[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, dict):
            raise KeyError(path)
        node = node[_coerce_key(node, part)]
    return node


def parse_scalar(text: str) -> Any:
    """Parse a command-line value the way YAML would (8 -> int, 1.5 -> float, true -> bool)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def check_writable(path: str | Path, field: str, folder: bool = False) -> None:
    """Before any work: `path` (a file, or with `folder` a folder) can be written -- it is not the other kind of
    thing, and its nearest existing ancestor is a writable folder. One InputError naming the path and the flag
    otherwise, so a long run never ends in a traceback at its last step."""
    import os
    import tempfile

    p = Path(path)
    if p.exists() and p.is_dir() != folder:
        raise InputError(str(path), field, "is a file, not a folder" if folder else "is a folder; expected a file name")
    anc = p if folder else p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(str(path), field, f"cannot be created: {anc} is not a folder")
    try:  # a probe file, gone at once: also catches what os.access does not (read-only mounts, /proc, as root)
        fd, probe = tempfile.mkstemp(prefix=".fusesim-probe.", dir=anc)
    except OSError as exc:
        raise InputError(str(path), field, f"cannot be written: {anc} refuses a new file ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def atomic_write(path: str | Path, text: str | bytes) -> None:
    """Write a whole file or nothing: a user never finds a half-written result. A file system that refuses
    (no such folder can be made, no permission, no space) is one InputError naming the file."""
    import os
    import tempfile

    p = Path(path)
    tmp = None
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode() if isinstance(text, str) else text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a result file reads like any other
        os.replace(tmp, p)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(str(path), None, f"cannot write: {exc.strerror or exc}") from None
        raise
