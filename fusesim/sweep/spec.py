"""Sweep specs: a Cartesian grid of hardware variations x workload cases x strategies.

A spec is a YAML file (or the same thing built from command-line flags)::

    name: dsm-bw-x-cluster            # names the default output folder out/sweeps/<name>/
    hw: hw_configs/hopper_next.yaml   # a base config, or a list of them (then "hw" is an axis)
    workloads: [workloads/paper_gemm_chains.yaml]
    cases: [G4, G5]                   # optional: only these case ids
    strategies: [unfused, smem, dsm]  # default: all three ("best" is also accepted)
    vary:                             # dotted YAML path of a hardware field -> values
      max_cluster_size: [4, 8, 16, 32]
    scale:                            # axis name -> factors applied to one or more fields
      dsm_bandwidth:                  #   (a number, or every number of a table)
        paths: [dsm_push_bandwidth_gbps_per_sm, dsm_pull_bandwidth_gbps_per_sm]
        factors: [1, 2, 4]
      hbm_bandwidth_gbps: [1, 2]      #   shorthand: the axis name is the one path
    derive: [cluster_tables, gpc_layout]   # opt-in rules (fusesim/sweep/derive.py), applied last

Every axis becomes a result column (`vary` axes by their dotted path, `scale` axes as
`scale:<name>`, a list of bases as `hw`). Every grid point is validated as a Hardware before
anything runs, so a spec that produces an invalid machine fails at once with an error naming the
spec file and the field, not after an hour of sweeping.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fusesim.errors import InputError
from fusesim.hardware import CLUSTER_TABLES, L2_REDUCTION_RATES, Hardware, hardware_from_dict
from fusesim.sweep.derive import RULES
from fusesim.workload import Chain, load_workload
from fusesim.yamlio import get_dotted, parse_scalar, read_mapping, set_dotted

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_KEYS = {"name", "description", "hw", "workloads", "cases", "strategies", "vary", "scale", "derive",
             "evaluator"}
STRATEGY_CHOICES = ("unfused", "smem", "dsm", "best")
DEFAULT_STRATEGIES = ("unfused", "smem", "dsm")
# the plan `fusesim simulate` runs at each point (each strategy's fastest simulated of the pool `best` simulates),
# so a sweep answers as simulate does; the cost model's top plan alone (evaluate_case, the default until
# 2026-12-08) runs 4-9x more rows per second (benchmarks/sweep.py: 3.7x on Dask, 5.2x with two workers, 8.7x in process) but its picks move with the swept field: on
# sweeps/dsm_bandwidth_x_cluster.yaml it credited 4x DSM bandwidth with C4 1.92x, where the simulated picks
# gain 1.12x (README "Sweeps")
DEFAULT_EVALUATOR = "fusesim.sweep.evaluate:evaluate_case_simulated"
# Fields the derive rules maintain; an invalid value there gets a hint to use them.
DERIVED_FIELDS = {"max_cluster_size", "gpc_sm_counts", *CLUSTER_TABLES}
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ScaleAxis:
    name: str
    paths: tuple[str, ...]
    factors: tuple[float, ...]

    @property
    def column(self) -> str:
        return f"scale:{self.name}"


@dataclass(frozen=True)
class HardwarePoint:
    """One machine of the grid: a base file plus overrides; picklable, so workers rebuild it."""

    base: str  # absolute path of the base hardware YAML
    set: tuple[tuple[str, Any], ...] = ()
    scale: tuple[tuple[tuple[str, ...], float], ...] = ()
    derive: tuple[str, ...] = ()

    def key(self) -> str:
        return json.dumps([self.base, self.set, self.scale, self.derive], sort_keys=True, default=str)

    def raw(self) -> dict[str, Any]:
        """The effective hardware mapping: base, then `set`, then `scale`, then the derive rules."""
        return json.loads(_raw_json(self.key()))

    def hardware(self) -> Hardware:
        return _hardware(self.key())


def _scale_value(value: Any, factor: float) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(round(value * factor))
    if isinstance(value, float):
        return value * factor
    if isinstance(value, dict):
        return {k: _scale_value(v, factor) for k, v in value.items()}
    return value


@lru_cache(maxsize=256)
def _raw_json(key: str) -> str:
    base, sets, scales, derive = json.loads(key)
    raw = read_mapping(base)
    for path, value in sets:
        raw = set_dotted(raw, path, value)
    for paths, factor in scales:
        for path in paths:
            raw = set_dotted(raw, path, _scale_value(get_dotted(raw, path), factor))
    for rule in derive:
        raw = RULES[rule](raw)
    return json.dumps(raw, sort_keys=True)


@lru_cache(maxsize=256)
def _hardware(key: str) -> Hardware:
    base = json.loads(key)[0]
    return hardware_from_dict(json.loads(_raw_json(key)), base)


@dataclass(frozen=True)
class GridPoint:
    """A hardware point of the grid with its axis values (the columns that vary)."""

    axes: tuple[tuple[str, Any], ...]
    hw: HardwarePoint


@dataclass(frozen=True)
class Task:
    """The unit of work sent to a worker: one machine x one case, the strategies still missing.

    Strategies of one case share one planner search, so they travel together; each still becomes
    its own result row with its own point id.
    """

    hw: HardwarePoint
    axes: tuple[tuple[str, Any], ...]
    workload: str  # absolute path
    workload_name: str
    case_id: str
    strategies: tuple[str, ...]
    point_ids: tuple[str, ...]  # one per strategy, same order
    evaluator: str
    trace_dir: str | None = None  # write a Chrome/Perfetto trace of each simulated plan here


@dataclass
class SweepSpec:
    name: str
    file: str  # the spec file, or "<command line>"
    hw: tuple[str, ...]
    workloads: tuple[str, ...]
    cases: tuple[str, ...] = ()
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    vary: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    scale: tuple[ScaleAxis, ...] = ()
    derive: tuple[str, ...] = ()
    evaluator: str = DEFAULT_EVALUATOR
    description: str = ""
    _chains: dict[str, tuple[str, list[Chain]]] = field(default_factory=dict, repr=False)

    # ---- columns and grid ----------------------------------------------------------------------
    @property
    def axis_columns(self) -> list[str]:
        cols = ["hw"] if len(self.hw) > 1 else []
        cols += [k for k, _ in self.vary]
        cols += [s.column for s in self.scale]
        return cols

    def hardware_points(self) -> list[GridPoint]:
        """All machines of the grid, in a fixed order (hw, then vary axes, then scale axes)."""
        out = []
        axes_values = [list(self.hw)] + [list(v) for _, v in self.vary] + [list(s.factors) for s in self.scale]
        for combo in itertools.product(*axes_values):
            base, rest = combo[0], combo[1:]
            sets = tuple((k, v) for (k, _), v in zip(self.vary, rest[:len(self.vary)], strict=True))
            scales = tuple((s.paths, float(f)) for s, f in zip(self.scale, rest[len(self.vary):], strict=True))
            axes: list[tuple[str, Any]] = [("hw", Path(base).stem)] if len(self.hw) > 1 else []
            axes += list(sets)
            axes += [(s.column, f) for s, f in zip(self.scale, rest[len(self.vary):], strict=True)]
            out.append(GridPoint(tuple(axes), HardwarePoint(base, sets, scales, self.derive)))
        return out

    def chains(self) -> list[tuple[str, str, Chain]]:
        """(workload path, workload name, chain) for every selected case, in file order."""
        out = []
        for wpath in self.workloads:
            wl = load_workload(wpath)
            for ch in wl.cases:
                if not self.cases or ch.case_id in self.cases:
                    out.append((wpath, wl.name, ch))
        if self.cases:
            found = {c.case_id for _, _, c in out}
            missing = [c for c in self.cases if c not in found]
            if missing:
                raise InputError(self.file, "cases", f"no case {missing[0]!r} in {', '.join(self.workloads)}")
        if not out:
            raise InputError(self.file, "workloads", "selects no case")
        return out

    def validate_hardware(self) -> list[tuple[GridPoint, Hardware]]:
        """Build every machine now: a bad grid fails before any point runs."""
        out = []
        for gp in self.hardware_points():
            try:
                out.append((gp, gp.hw.hardware()))
            except InputError as exc:
                where = ", ".join(f"{k}={v}" for k, v in gp.axes) or "the base"
                hint = ""
                field = exc.field.split(".")[0] if exc.field else ""
                if field in DERIVED_FIELDS and not self.derive:
                    hint = " (add `derive: [cluster_tables, gpc_layout]` to extend DSM tables and GPCs)"
                elif field in L2_REDUCTION_RATES and "l2_rates" not in self.derive:
                    hint = " (add `derive: [l2_rates]` to cap the L2 reduction rates at the swept L2 bandwidth)"
                raise InputError(self.file, exc.field or "vary", f"at grid point {where}: {exc.message}{hint}") \
                    from None
        return out

    def tasks(self, done: set[str] | None = None, trace_dir: str | None = None) -> tuple[list[Task], int]:
        """Tasks for every (machine, case) with strategies not yet in `done`; also the row total."""
        done = done or set()
        chains = self.chains()
        tasks, total = [], 0
        for gp, hw in self.validate_hardware():
            for wpath, wname, ch in chains:
                strategies, ids = [], []
                for s in self.strategies:
                    pid = point_id(gp.axes, hw.fingerprint, ch, s, self.evaluator)
                    total += 1
                    if pid not in done:
                        strategies.append(s)
                        ids.append(pid)
                if strategies:
                    tasks.append(Task(gp.hw, gp.axes, wpath, wname, ch.case_id, tuple(strategies),
                                      tuple(ids), self.evaluator, trace_dir))
        return tasks, total

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description, "file": self.file, "hw": list(self.hw),
            "workloads": list(self.workloads), "cases": list(self.cases), "strategies": list(self.strategies),
            "vary": {k: list(v) for k, v in self.vary},
            "scale": {s.name: {"paths": list(s.paths), "factors": list(s.factors)} for s in self.scale},
            "derive": list(self.derive), "evaluator": self.evaluator,
        }


def point_id(axes: tuple[tuple[str, Any], ...], hw_fingerprint: str, chain: Chain, strategy: str,
             evaluator: str) -> str:
    """Stable row key: the axis values, the effective machine, the problem, the strategy, the model.

    The effective machine's fingerprint is part of the key, so editing a base config makes a
    rerun recompute instead of reusing rows computed for the old numbers.
    """
    blob = json.dumps({"axes": [[k, v] for k, v in axes], "hw": hw_fingerprint, "chain": chain.to_dict(),
                       "strategy": strategy, "evaluator": evaluator}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ---- parsing ------------------------------------------------------------------------------------
def _resolve(path: str, folder: str, rel_to: Path | None, file: str, field_name: str) -> str:
    p = Path(path)
    cands = [p] if p.is_absolute() else [Path.cwd() / p]
    if rel_to is not None and not p.is_absolute():
        cands.insert(0, rel_to / p)
    cands += [REPO_ROOT / p, REPO_ROOT / folder / p, REPO_ROOT / folder / f"{path}.yaml"]
    for c in cands:
        if c.is_file():
            return str(c.resolve())
    raise InputError(file, field_name, f"no such file {path!r}")


def _str_list(value: Any, file: str, field_name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise InputError(file, field_name, "must be a non-empty list of strings")
    if len(set(value)) != len(value):
        raise InputError(file, field_name, "has duplicate entries")
    return tuple(value)


def _values(value: Any, file: str, field_name: str) -> tuple[Any, ...]:
    if not isinstance(value, list) or not value:
        raise InputError(file, field_name, "must be a non-empty list of values")
    if len({json.dumps(v, sort_keys=True, default=str) for v in value}) != len(value):
        raise InputError(file, field_name, "has duplicate values (each grid point must be distinct)")
    return tuple(value)


def _factors(value: Any, file: str, field_name: str) -> tuple[float, ...]:
    vals = _values(value, file, field_name)
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            raise InputError(file, field_name, f"scale factors must be positive numbers (got {v!r})")
    return tuple(float(v) for v in vals)


def spec_from_dict(raw: dict[str, Any], file: str = "<sweep>", rel_to: Path | None = None) -> SweepSpec:
    """Validate a spec mapping; every mistake names the file and the field."""
    unknown = sorted(set(raw) - SPEC_KEYS)
    if unknown:
        raise InputError(file, unknown[0], f"unknown key (known: {', '.join(sorted(SPEC_KEYS))})")
    for req in ("hw", "workloads"):
        if req not in raw:
            raise InputError(file, req, "missing required field")
    name = raw.get("name", Path(file).stem if file.endswith((".yaml", ".yml")) else "sweep")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InputError(file, "name", "must be 1-64 letters, digits, '_', '.', '-' (it names the output folder)")
    hw = tuple(_resolve(h, "hw_configs", rel_to, file, "hw") for h in _str_list(raw["hw"], file, "hw"))
    wls = tuple(_resolve(w, "workloads", rel_to, file, "workloads")
                for w in _str_list(raw["workloads"], file, "workloads"))
    cases = _str_list(raw["cases"], file, "cases") if raw.get("cases") is not None else ()
    strategies = _str_list(raw.get("strategies", list(DEFAULT_STRATEGIES)), file, "strategies")
    for s in strategies:
        if s not in STRATEGY_CHOICES:
            raise InputError(file, "strategies", f"unknown strategy {s!r} (one of {', '.join(STRATEGY_CHOICES)})")
    base_raw = read_mapping(hw[0])

    vary_raw = raw.get("vary") or {}
    if not isinstance(vary_raw, dict):
        raise InputError(file, "vary", "must be a mapping of dotted hardware paths to lists of values")
    vary = []
    for key, vals in vary_raw.items():
        key = str(key)
        if key in ("name", "provenance", "description"):
            raise InputError(file, f"vary.{key}", "cannot be swept")
        try:
            get_dotted(base_raw, key)
        except KeyError:
            raise InputError(file, f"vary.{key}", f"no such hardware field in {Path(hw[0]).name}") from None
        vary.append((key, _values(vals, file, f"vary.{key}")))

    scale_raw = raw.get("scale") or {}
    if not isinstance(scale_raw, dict):
        raise InputError(file, "scale", "must be a mapping of axis names to factors or {paths, factors}")
    scale = []
    for axis, body in scale_raw.items():
        axis = str(axis)
        fld = f"scale.{axis}"
        if isinstance(body, dict):
            extra = sorted(set(body) - {"paths", "factors"})
            if extra:
                raise InputError(file, f"{fld}.{extra[0]}", "unknown key (known: paths, factors)")
            paths = _str_list(body.get("paths"), file, f"{fld}.paths")
            factors = _factors(body.get("factors"), file, f"{fld}.factors")
        else:
            paths, factors = (axis,), _factors(body, file, fld)
        for p in paths:
            try:
                v = get_dotted(base_raw, p)
            except KeyError:
                raise InputError(file, fld, f"no such hardware field {p!r} in {Path(hw[0]).name}") from None
            if isinstance(v, bool) or not isinstance(v, int | float | dict):
                raise InputError(file, fld, f"{p} is not a number or a table of numbers")
        scale.append(ScaleAxis(axis, paths, factors))
    cols = [k for k, _ in vary] + [s.name for s in scale]
    if len(set(cols)) != len(cols):
        raise InputError(file, "scale", "an axis name repeats")

    derive = _str_list(raw["derive"], file, "derive") if raw.get("derive") else ()
    for d in derive:
        if d not in RULES:
            raise InputError(file, "derive", f"unknown rule {d!r} (one of {', '.join(RULES)})")
    evaluator = raw.get("evaluator", DEFAULT_EVALUATOR)
    if not isinstance(evaluator, str) or ":" not in evaluator:
        raise InputError(file, "evaluator", "must be 'module:function'")
    description = raw.get("description", "")
    if not isinstance(description, str):
        raise InputError(file, "description", "must be a string")
    return SweepSpec(name=name, file=file, hw=hw, workloads=wls, cases=cases, strategies=strategies,
                     vary=tuple(vary), scale=tuple(scale), derive=derive, evaluator=evaluator,
                     description=description)


def load_spec(path: str | Path) -> SweepSpec:
    p = Path(path)
    if not p.is_file() and (REPO_ROOT / "sweeps" / p).is_file():
        p = REPO_ROOT / "sweeps" / p
    elif not p.is_file() and (REPO_ROOT / "sweeps" / f"{path}.yaml").is_file():
        p = REPO_ROOT / "sweeps" / f"{path}.yaml"
    return spec_from_dict(read_mapping(p), str(path), rel_to=p.resolve().parent)


def parse_assignment(text: str, flag: str) -> tuple[str, list[Any]]:
    """`key=v1,v2` from the command line; values parse as YAML scalars (8 -> int)."""
    key, sep, vals = text.partition("=")
    if not sep or not key or not vals:
        raise InputError("<command line>", flag, f"expected KEY=V1,V2,... (got {text!r})")
    return key.strip(), [parse_scalar(v.strip()) for v in _split_top_level(vals) if v.strip()]


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets, so a list value survives: gpc_sm_counts=[36,36],[18,18]."""
    parts, depth, cur = [], 0, []
    for ch in text:
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def spec_from_args(hw: list[str], vary: list[str], scale: list[str], workloads: list[str],
                   cases: list[str] | None = None, strategies: list[str] | None = None,
                   derive: list[str] | None = None, name: str | None = None,
                   evaluator: str | None = None) -> SweepSpec:
    """The flags form of a spec (`--hw --vary k=v1,v2 --scale a+b=f1,f2 --workloads ...`)."""
    raw: dict[str, Any] = {"hw": hw, "workloads": workloads}
    if vary:
        raw["vary"] = dict(parse_assignment(v, "--vary") for v in vary)
    if scale:
        raw["scale"] = {}
        for s in scale:
            k, vals = parse_assignment(s, "--scale")
            raw["scale"][k] = {"paths": k.split("+"), "factors": vals}
    if cases:
        raw["cases"] = cases
    if strategies:
        raw["strategies"] = strategies
    if derive:
        raw["derive"] = derive
    if evaluator:
        raw["evaluator"] = evaluator
    if name is None:
        digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:8]
        name = f"adhoc-{digest}"
    raw["name"] = name
    return spec_from_dict(raw, "<command line>")
