"""Write a calibrated hardware YAML: the base file with every measured field replaced.

Each replaced field's provenance names the GPU, driver, CUDA version, date and command of the
measurement and how the benchmark measured it; fields the calibration did not measure keep the
base file's value and provenance. The result must pass `fusesim.hardware` validation, or nothing is
written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fusesim.calibrate.derive import Derived, derive, ncu_summary
from fusesim.hardware import Hardware, hardware_from_dict
from fusesim.yamlio import atomic_write, read_mapping

# Fields whose benchmark kernels Nsight Compute checks (kernel `what` prefixes in the verify group).
_NCU_FOR_FIELD = {
    "smem_bandwidth_gbps_per_sm": ("smem",),
    "dsm_push_bandwidth_gbps_per_sm": ("dsm push",),
    "dsm_pull_bandwidth_gbps_per_sm": ("dsm pull",),
    "l2_bandwidth_gbps": ("l2",),
    "hbm_bandwidth_gbps": ("hbm",),
    "tensor_tflops": ("mma.sync", "wgmma"),
}


def measured_on(raw: dict[str, Any]) -> str:
    env = raw.get("environment", {})
    return (f"measured on {env.get('gpu', 'unknown GPU')} (driver {env.get('driver', '?')}, CUDA {env.get('cuda', '?')}, "
            f"{str(env.get('date_utc', '?'))[:10]}) by `{env.get('command', '?')}`"
            + (" [quick run]" if raw.get("quick") else ""))


def provenance_for(name: str, how: str, raw: dict[str, Any], d: Derived) -> str:
    text = f"{measured_on(raw)}: {how}"
    prefixes = _NCU_FOR_FIELD.get(name)
    if prefixes and d.ncu:
        checks = [c for c in d.ncu if str(c.get("what", "")).startswith(prefixes)]
        if checks:
            text += f"; Nsight Compute executed/expected: {ncu_summary(checks)}"
    return text


def calibrated_mapping(raw: dict[str, Any], base: dict[str, Any], source: str = "") -> tuple[dict[str, Any], Derived]:
    """The base mapping with measured fields (and their provenance) replaced."""
    d = derive(raw, base)
    out = dict(base)
    prov = dict(base.get("provenance", {}))
    for name, value in d.values.items():
        if name not in base and name not in Hardware.model_fields:
            continue
        out[name] = value
        prov[name] = provenance_for(name, d.how[name], raw, d)
    base_name = str(base.get("name", "gpu"))
    out["name"] = base_name if base_name.endswith("_calibrated") else f"{base_name}_calibrated"
    env = raw.get("environment", {})
    out["description"] = (f"{base.get('description', '')} - calibrated on {env.get('gpu', '?')} "
                          f"{str(env.get('date_utc', '?'))[:10]}{' from ' + source if source else ''}").strip(" -")
    out["provenance"] = prov
    return out, d


def dump_yaml(mapping: dict[str, Any], header: str) -> str:
    """Hardware YAML in the shipped files' style: one key per line, tables and lists inline."""
    def flow(v: Any) -> str:
        return yaml.safe_dump(v, default_flow_style=True, sort_keys=False, width=4096).strip()

    def is_leaf(v: Any) -> bool:
        return not isinstance(v, dict | list)

    parts = ["".join(f"# {ln}\n" if ln else "#\n" for ln in header.splitlines())]
    for key, value in mapping.items():
        if key == "provenance":
            continue
        if is_leaf(value):
            parts.append(yaml.safe_dump({key: value}, default_flow_style=False, sort_keys=False, width=4096))
        elif isinstance(value, dict) and not all(is_leaf(v) for v in value.values()):
            parts.append(f"{key}:\n" + "".join(f"  {flow({k: v})[1:-1]}\n" if is_leaf(v) else f"  {k}: {flow(v)}\n"
                                               for k, v in value.items()))
        else:
            parts.append(f"{key}: {flow(value)}\n")
    parts.append(yaml.safe_dump({"provenance": mapping.get("provenance", {})}, default_flow_style=False,
                                sort_keys=False, width=4096, allow_unicode=True))
    return "".join(parts)


def _display(p: str | Path) -> str:
    """A repository-relative path where possible, so committed files name no machine's folders."""
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def write_calibrated(raw: dict[str, Any], base_path: str | Path, out_path: str | Path,
                     raw_path: str | Path | None = None,
                     more: list[tuple[dict[str, Any], str | Path]] | None = None) -> tuple[Hardware, Derived]:
    """Validate, then write; returns the loaded Hardware and what was derived. `more`: further raw
    JSONs (a later run of some groups), applied in order: a field they derive replaces the first
    run's, with its own provenance."""
    base = read_mapping(base_path)
    raw_label = _display(raw_path) if raw_path else ""
    mapping, d = calibrated_mapping(raw, base, raw_label)
    for extra, extra_path in more or []:
        description = mapping["description"]
        mapping, d2 = calibrated_mapping(extra, mapping, _display(extra_path))
        mapping["description"] = f"{description} and {_display(extra_path)}"
        d.values.update(d2.values)
        d.how.update(d2.how)
        d.notes += [f"{_display(extra_path)}: {n}" for n in d2.notes]
        raw_label += f" + {_display(extra_path)}"
    hw = hardware_from_dict(mapping, str(out_path))  # raises InputError: nothing written
    base_label = _display(base_path)
    env = raw.get("environment", {})
    header = (f"{hw.name}: written by `fusesim calibrate` from {raw_label or 'a fresh measurement'}; do not edit by hand.\n"
              f"GPU {env.get('gpu')}, driver {env.get('driver')}, CUDA {env.get('cuda')}, {env.get('date_utc')}.\n"
              f"Measured fields: {', '.join(d.values)}.\n"
              f"Other fields and their provenance come from {base_label}.")
    if d.notes:
        header += "\nNotes:\n" + "\n".join(f"- {n}" for n in d.notes)
    text = dump_yaml(mapping, header)
    hardware_from_dict(yaml.safe_load(text), str(out_path))  # what we write reads back valid
    atomic_write(out_path, text)
    return hw, d
