"""Load a generated kernel (.so via ctypes), verify it against a float32 PyTorch reference, time it.

Verification: fresh random inputs (never zeros), E poisoned with NaN before the launch, every
element must be finite, relative Frobenius error against float32 (bf16 output) below 1e-2, and
the kernel's launch-configuration flag must be clear.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fusesim.workload import Chain

REL_TOL = 1e-2
HANG_S = 10.0  # a verification launch that has not finished after this long is a deadlocked kernel


class KernelError(RuntimeError):
    pass


class KernelHung(KernelError):
    """The launch did not complete in time: the kernel is still running on the GPU, so the process
    cannot use the device again and must exit (the driver re-runs the rest)."""


def sync_or_hang(seconds: float = HANG_S) -> None:
    """torch.cuda.synchronize(), but raise KernelHung after `seconds` instead of waiting forever."""
    import time

    import torch

    ev = torch.cuda.Event()
    ev.record()
    t0 = time.monotonic()
    while not ev.query():
        if time.monotonic() - t0 > seconds:
            raise KernelHung(f"launch not complete after {seconds:.0f} s")
        time.sleep(2e-4)


SPLIT_GRID_NOT_RESIDENT = 9201  # gemm_wgmma.cu.j2 prepare(): a split-K GEMM in slices whose grid cannot be resident


class Loaded:
    """A built .so: fs_prepare / fs_launch / fs_error_flag and its sizes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        lib = ctypes.CDLL(str(path))
        self.lib = lib
        lib.fs_launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        lib.fs_launch.restype = ctypes.c_int
        lib.fs_error_flag.argtypes = [ctypes.c_int]
        lib.fs_workspace_floats.restype = ctypes.c_long
        lib.fs_ticket_count.restype = ctypes.c_long
        self._check(lib.fs_prepare(), "fs_prepare")
        self.smem_bytes = lib.fs_smem_bytes()
        self.grid_blocks = lib.fs_grid_blocks()
        self.cluster_size = lib.fs_cluster_size()
        self.max_active_clusters = lib.fs_max_active_clusters()
        self.args = (ctypes.c_void_p * 8)()

    def _check(self, code: int, what: str) -> None:
        if code == SPLIT_GRID_NOT_RESIDENT:
            raise KernelError(f"{self.path.name}: {what}: the split-K parts of a tile wait for each other, and this "
                              f"GPU cannot hold the grid's {self.lib.fs_grid_blocks()} blocks at once (error {code})")
        if code != 0:
            raise KernelError(f"{self.path.name}: {what} returned CUDA error {code}")

    def bind(self, ptrs: list[int]) -> None:
        for i, p in enumerate(ptrs):
            self.args[i] = p

    def launch(self, stream: int) -> None:
        self._check(self.lib.fs_launch(self.args, ctypes.c_void_p(stream)), "fs_launch")

    def error_flag(self, reset: bool = True) -> int:
        return int(self.lib.fs_error_flag(1 if reset else 0))


@dataclass
class Problem:
    """Device tensors of one chain plus its float32 reference output."""

    tensors: dict[str, Any]
    ref: Any


def make_problem(ch: Chain, seed: int, reference: bool = True) -> Problem:
    """Random bf16 inputs at unit scale (weights scaled 1/sqrt(depth)) and the fp32 reference E
    (`reference=False`: inputs only, for launchers under Nsight Compute or compute-sanitizer, where
    the reference's library kernels -- cuDNN's conv2d -- need not run: racecheck faults inside it)."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    g = torch.Generator(device="cuda").manual_seed(seed)

    def rnd(*shape: int, scale: float = 1.0) -> Any:
        return (torch.randn(*shape, generator=g, device="cuda") * scale).to(torch.bfloat16)

    t: dict[str, Any] = {}  # drawn in this order for every seed: the same inputs with or without the reference
    cv = ch.conv
    if cv is not None:
        t["A"] = rnd(cv.batch, cv.h, cv.w, cv.ic)  # NHWC image
        w1 = rnd(ch.n, cv.ic, cv.k1, cv.k1, scale=ch.k ** -0.5)  # torch layout [OC1, IC, kh, kw]
        t["B0"] = w1.permute(2, 3, 1, 0).reshape(ch.k, ch.n).contiguous()  # (kh, kw, ic) x OC1
    else:
        t["A"] = rnd(ch.m, ch.k)
        t["B0"] = rnd(ch.k, ch.n, scale=ch.k ** -0.5)
    if ch.gated:
        t["B1"] = rnd(ch.k, ch.n, scale=ch.k ** -0.5)
    t["D"] = rnd(ch.n, ch.l, scale=ch.n ** -0.5)
    t["E"] = torch.empty(ch.m, ch.l, dtype=torch.bfloat16, device="cuda")
    t["C"] = torch.empty(ch.m, ch.n, dtype=torch.bfloat16, device="cuda")
    if not reference:
        return Problem(t, None)
    if cv is not None:
        x32 = t["A"].float().permute(0, 3, 1, 2)
        c32 = F.conv2d(x32, w1.float(), padding=cv.k1 // 2).permute(0, 2, 3, 1).reshape(ch.m, ch.n)
    else:
        c32 = t["A"].float() @ t["B0"].float()
    if ch.gated:
        c32 = F.silu(c32) * (t["A"].float() @ t["B1"].float())
    else:
        c32 = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "none": lambda x: x}[ch.activation](c32)
    ref = c32 @ t["D"].float()
    return Problem(t, ref)


def bind(kern: Loaded, prob: Problem) -> list[Any]:
    """Pointers in fs_launch's order: A, B0, B1, D, E, C, ws, tickets (workspace and tickets zeroed once, per kernel:
    each launch leaves them ready for the next)."""
    import torch

    t = prob.tensors
    ws_n = max(1, int(kern.lib.fs_workspace_floats()))
    tk_n = max(1, int(kern.lib.fs_ticket_count()))
    t["ws"] = torch.zeros(ws_n, dtype=torch.float32, device="cuda")
    t["tickets"] = torch.zeros(tk_n, dtype=torch.int32, device="cuda")
    ptrs = [t["A"].data_ptr(), t["B0"].data_ptr(), t["B1"].data_ptr() if "B1" in t else 0, t["D"].data_ptr(),
            t["E"].data_ptr(), t["C"].data_ptr(), t["ws"].data_ptr(), t["tickets"].data_ptr()]
    kern.bind(ptrs)
    return ptrs


def graph_replay(kern: Loaded) -> Callable[[], Any]:
    """fs_launch captured into a CUDA graph (both GEMMs of an unfused plan, their programmatic dependent launch an
    edge of the graph): the replay, one graph launch per call, as a user who captures the kernels runs them. The
    arguments bound now are the graph's; the capture's warm-up launches run first (timing.graph_of)."""
    import torch

    from fusesim.gpu.timing import graph_of

    return graph_of(lambda: kern.launch(torch.cuda.current_stream().cuda_stream))


def verify(kern: Loaded, ch: Chain, seed: int, launches: int = 2, graph: bool = False) -> dict[str, Any]:
    """Fresh inputs, poisoned output, `launches` runs (the 2nd checks the self-cleaning workspace); `graph`: each run
    a replay of the launch captured into a CUDA graph (`graph_replay`)."""
    import torch

    prob = make_problem(ch, seed)
    bind(kern, prob)
    stream = torch.cuda.current_stream().cuda_stream
    run = graph_replay(kern) if graph else (lambda: kern.launch(stream))
    errs = []
    for _ in range(launches):
        prob.tensors["E"].fill_(float("nan"))
        run()
        sync_or_hang()
        out = prob.tensors["E"].float()
        finite = bool(torch.isfinite(out).all())
        err = float(torch.linalg.norm(out - prob.ref) / torch.linalg.norm(prob.ref)) if finite else float("inf")
        errs.append(err)
    flag = kern.error_flag()
    ok = flag == 0 and all(e < REL_TOL for e in errs)
    return {"ok": ok, "rel_err": max(errs), "rel_errs": errs, "launch_flag": flag, "seed": seed,
            "unwritten_or_nan": any(e == float("inf") for e in errs)}


def time_kernel(kern: Loaded, ch: Chain, flush: Any, reps: int, graph: bool = False) -> dict[str, float]:
    """`timing.time_fn` of one launch (`graph`: one replay of the launch captured into a CUDA graph)."""
    import torch

    from fusesim.gpu.timing import time_fn

    prob = make_problem(ch, seed=12345)
    bind(kern, prob)
    stream = torch.cuda.current_stream().cuda_stream
    return time_fn(graph_replay(kern) if graph else (lambda: kern.launch(stream)), flush, reps=reps)
