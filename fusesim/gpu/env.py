"""What a measurement ran on: GPU, clocks, driver, toolkit and library versions, date, command."""

from __future__ import annotations

import datetime as _dt
import platform
import shlex
import shutil
import subprocess
import sys
from typing import Any


def _cmd(args: list[str]) -> str:
    exe = shutil.which(args[0])
    if exe is None:
        return "not found"
    try:
        out = subprocess.run([exe, *args[1:]], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"error: {exc}"
    return (out.stdout or out.stderr).strip()


def smi_query(fields: str) -> str:
    return _cmd(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"])


def hopper_missing() -> str | None:
    """Why this machine cannot build and run the generated kernels (None: it can): they need nvcc, PyTorch with
    CUDA (inputs, the float32 reference, the timing) and a GPU of compute capability 9.0 (wgmma, TMA, clusters)."""
    if shutil.which("nvcc") is None:
        return "no nvcc on PATH"
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA GPU"
    major, minor = torch.cuda.get_device_capability(0)
    if (major, minor) != (9, 0):
        return f"{torch.cuda.get_device_name(0)} is sm_{major}{minor}, not sm_90"
    return None


def environment(argv: list[str] | None = None) -> dict[str, Any]:
    import torch  # lazy: only on a GPU machine

    props = torch.cuda.get_device_properties(0)
    nvcc = _cmd(["nvcc", "--version"]).splitlines()
    return {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv)),
        "gpu": torch.cuda.get_device_name(0),
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "gpu_memory_bytes": props.total_memory,
        "clocks": smi_query("clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu"),
        "driver": smi_query("driver_version"),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "nvcc": nvcc[-2] if len(nvcc) >= 2 else "",
        "python": platform.python_version(),
        "host": platform.node(),
    }
