"""Checks that a Plan can run on a Hardware: capacities, cluster limits and tile divisibility.

Plans normally come from the planner, which only emits plans that pass; this check exists for
plans that come from files (hand-edited, or produced for another GPU), so that a bad one is
rejected with one line naming the field instead of crashing the simulator or the generator.
M may be predicated (the last M tile partly empty); N, K and L must divide exactly, except a fused wgmma
plan's unsliced K (the template zero-fills the last k tile, as `capability.fused_wgmma_problem` says).
"""

from __future__ import annotations

from fusesim.capability import fused_smem_bytes, kernel_split
from fusesim.errors import InputError
from fusesim.hardware import Hardware
from fusesim.plan import LEVELS, STRATEGIES, TENSORS, Plan
from fusesim.workload import ACTIVATIONS, DTYPE_BYTES, KINDS, MAX_DIM, size_problems


def _chain_problems(plan: Plan, bad) -> None:
    """The chain a plan file carries, as a workload file's case would be checked."""
    ch = plan.chain
    if plan.case_id != ch.case_id:
        bad("case_id", f"{plan.case_id!r} but the chain's case_id is {ch.case_id!r}")
    if ch.kind not in KINDS:
        bad("chain.kind", f"unknown kind {ch.kind!r} (one of {', '.join(KINDS)})")
    if ch.dtype not in DTYPE_BYTES:
        bad("chain.dtype", f"unknown dtype {ch.dtype!r} (one of {', '.join(DTYPE_BYTES)})")
    if ch.activation not in ACTIVATIONS:
        bad("chain.activation", f"unknown activation {ch.activation!r} (one of {', '.join(ACTIVATIONS)})")
    if ch.gated != (ch.kind == "gated_ffn"):
        bad("chain.gated", f"gated is {ch.gated} for a {ch.kind} chain")
    if ch.kind != "conv_chain" and ch.conv is not None:
        bad("chain.conv", f"a {ch.kind} chain has no conv geometry")
    for name in ("m", "n", "k", "l"):
        if getattr(ch, name) > MAX_DIM:
            bad(f"chain.{name}", f"{getattr(ch, name)} exceeds {MAX_DIM}")
    for name, msg in size_problems(ch):
        bad(f"chain.{name}", msg)


def _kernels_problems(plan: Plan, bad) -> None:
    """What a plan states twice (top level and per kernel) agrees, and the kernels are the strategy's."""
    ch, cl, t = plan.chain, plan.cluster, plan.tiles
    ops = [k.op for k in plan.kernels]
    if plan.strategy == "unfused":
        if ops != ["gemm0", "gemm1"]:
            bad("kernels", f"an unfused plan launches gemm0 then gemm1 (got {', '.join(ops) or 'none'})")
            return
        if (plan.grid_m, plan.n_split, plan.n_passes) != (0, 1, 1):
            bad("grid_m", f"an unfused plan has grid_m 0, n_split 1, n_passes 1 (its kernels carry the grids); "
                f"got {plan.grid_m}, {plan.n_split}, {plan.n_passes}")
        for i, (k, cols) in enumerate(zip(plan.kernels, (ch.n, ch.l), strict=True)):
            if kernel_split(k, ch.m, cols) < 1:
                bad(f"kernels[{i}].grid_blocks", f"{k.grid_blocks} blocks is not a whole number of passes over "
                    f"the output tiles of {k.op}")
        return
    if plan.strategy not in ("smem", "dsm"):
        return
    if ops != ["fused"]:
        bad("kernels", f"a fused plan launches one kernel with op 'fused' (got {', '.join(ops) or 'none'})")
        return
    k = plan.kernels[0]
    for field, mine, top in (("stages", k.stages, plan.stages), ("threads", k.threads, plan.threads),
                             ("cluster_size", k.cluster_size, cl.size)):
        if mine != top:
            bad(f"kernels[0].{field}", f"{mine}, but the plan says {top}")
    if k.tiles != t:
        bad("kernels[0].tiles", "differ from the plan's tiles")
    if not _out_of_range(plan) and plan.dsm_comm != _expected_steps(plan):
        bad("dsm_comm", "does not match the steps the plan's cluster, tiles, passes and split imply "
            "(fusesim.planner.dsm_comm.dsm_steps; hand-edit the shape, not the steps)")


def _out_of_range(plan: Plan) -> bool:
    """Shapes too broken to derive dsm_comm steps from (reported by the other checks)."""
    c, t = plan.cluster, plan.tiles
    return (min(c.m, c.n, c.k, c.l, t.block_m, t.block_n, t.block_k, t.block_l, plan.n_passes, plan.n_split) < 1
            or not c.is_consistent())


def _expected_steps(plan: Plan) -> tuple:
    from fusesim.planner.dsm_comm import dsm_steps

    try:
        return dsm_steps(plan.cluster, plan.tiles, plan.n_passes, plan.n_split, plan.gated_mode,
                         DTYPE_BYTES.get(plan.chain.dtype, 2))
    except (ValueError, ZeroDivisionError, KeyError):
        return ()


def plan_problems(plan: Plan, hw: Hardware) -> list[tuple[str, str]]:
    """Every (field, message) the plan violates on this hardware; empty when it is valid."""
    out: list[tuple[str, str]] = []
    ch, cl, t = plan.chain, plan.cluster, plan.tiles

    def bad(field: str, msg: str) -> None:
        out.append((field, msg))

    _chain_problems(plan, bad)
    if out:
        return out

    if plan.strategy not in STRATEGIES:
        bad("strategy", f"unknown strategy {plan.strategy!r}")
    if plan.instruction not in hw.tensor_tflops:
        bad("instruction", f"{hw.name} has no {plan.instruction} instructions")
    if plan.gated_mode not in ("none", "sequential", "mul_exchange"):
        bad("gated_mode", f"unknown gated_mode {plan.gated_mode!r}")
    elif (plan.gated_mode != "none") != ch.gated:
        bad("gated_mode", f"{plan.gated_mode!r} does not match a {'gated' if ch.gated else 'plain'} chain")
    for name in TENSORS:
        if getattr(plan.placement, name) not in LEVELS:
            bad(f"placement.{name}", f"unknown level {getattr(plan.placement, name)!r}")
    if min(cl.m, cl.n, cl.k, cl.l) < 1:
        bad("cluster", f"cluster ({cl.m},{cl.n},{cl.k},{cl.l}): every cls_m, cls_n, cls_k, cls_l is at least 1")
    elif not cl.is_consistent():
        bad("cluster", f"cluster ({cl.m},{cl.n},{cl.k},{cl.l}) needs cls_k | cls_l | cls_n*cls_k")
    if cl.size > hw.max_cluster_size:
        bad("cluster", f"{cl.size} blocks per cluster exceeds {hw.name}'s max_cluster_size {hw.max_cluster_size}")
    if plan.strategy in ("unfused", "smem") and cl.size != 1:
        bad("cluster", f"strategy {plan.strategy} runs without clusters (size 1), got {cl.size}")
    if plan.strategy == "dsm" and cl.size < 2:
        bad("cluster", "strategy dsm needs a cluster of at least 2 blocks")
    if plan.gated_mode == "mul_exchange" and cl.k != 2:
        bad("cluster.k", "gated mul_exchange runs the two branches on cls_k = 2 blocks")
    if plan.stages < 1:
        bad("stages", "at least one pipeline stage")
    if not plan.kernels:
        bad("kernels", "a plan launches at least one kernel")

    for i, k in enumerate(plan.kernels):
        f = f"kernels[{i}]"
        if k.smem_bytes > hw.smem_per_block_bytes:
            bad(f"{f}.smem_bytes", f"{k.smem_bytes} B exceeds {hw.smem_per_block_bytes} B of SMEM per block")
        if k.threads < 32 or k.threads % 32 or k.threads > hw.max_threads_per_block:
            bad(f"{f}.threads", f"{k.threads} threads: need a multiple of 32 up to {hw.max_threads_per_block}")
        if k.regs_per_thread > hw.max_registers_per_thread or k.threads * k.regs_per_thread > hw.registers_per_sm:
            bad(f"{f}.regs_per_thread", f"{k.regs_per_thread} registers x {k.threads} threads do not fit an SM")
        if k.cluster_size > hw.max_cluster_size or hw.max_active_clusters(k.cluster_size) < 1:
            bad(f"{f}.cluster_size", f"clusters of {k.cluster_size} do not fit {hw.name} (max {hw.max_cluster_size})")
        if k.grid_blocks < 1 or k.grid_blocks % max(k.cluster_size, 1):
            bad(f"{f}.grid_blocks", f"{k.grid_blocks} blocks is not a positive multiple of the cluster size")
        if min(k.tiles.block_m, k.tiles.block_n, k.tiles.block_k) < 16:
            bad(f"{f}.tiles", "tiles are at least one 16x16x16 MMA")
        if k.op == "gemm0":
            _divides(bad, f"{f}.tiles.block_n", ch.n, k.tiles.block_n, "N")
            _divides(bad, f"{f}.tiles.block_k", ch.k, k.tiles.block_k, "K")
        elif k.op == "gemm1":
            _divides(bad, f"{f}.tiles.block_n", ch.l, k.tiles.block_n, "L")
            _divides(bad, f"{f}.tiles.block_k", ch.n, k.tiles.block_k, "N")

    if plan.strategy in ("smem", "dsm"):
        if t.block_m < 16 or t.block_n < 16 or t.block_k < 16 or t.block_l < 16:
            bad("tiles", "fused tiles are at least one 16x16x16 MMA in every dim")
            return out
        per_cluster_n = cl.n * t.block_n * plan.n_passes * plan.n_split
        if per_cluster_n != ch.n:
            bad("tiles.block_n", f"n_split {plan.n_split} x n_passes {plan.n_passes} x cls_n {cl.n} x block_n "
                f"{t.block_n} = {per_cluster_n} does not cover N = {ch.n}")
        k_slice = ch.k if plan.gated_mode == "mul_exchange" else ch.k // cl.k
        if plan.gated_mode != "mul_exchange" and ch.k % cl.k:
            bad("cluster.k", f"K = {ch.k} does not split over cls_k = {cl.k}")
        # the fused_wgmma template zero-fills a single K slice's tail (TMA); sliced K runs whole k tiles
        if not (plan.instruction == "wgmma" and (cl.k == 1 or plan.gated_mode == "mul_exchange")):
            _divides(bad, "tiles.block_k", k_slice, t.block_k, "the K slice")
        if t.block_l * cl.l != ch.l:
            bad("tiles.block_l", f"block_l {t.block_l} x cls_l {cl.l} != L = {ch.l}")
        rows = plan.grid_m * cl.m * t.block_m
        if rows < ch.m or rows - cl.m * t.block_m >= ch.m:
            bad("grid_m", f"{plan.grid_m} clusters x {cl.m} x {t.block_m} rows do not tile M = {ch.m}")
        fused = [k for k in plan.kernels if k.op == "fused"]
        if not fused:
            bad("kernels", "a fused plan has a kernel with op 'fused'")
        elif fused[0].grid_blocks != plan.grid_m * plan.n_split * cl.size:
            bad("kernels[0].grid_blocks", f"{fused[0].grid_blocks} != grid_m x n_split x cluster size "
                f"= {plan.grid_m * plan.n_split * cl.size}")
        if not out:  # the generator's SMEM layout (ring of `stages`, C' slices, exchange, E), not the recorded size
            need = fused_smem_bytes(plan)
            if need > hw.smem_per_block_bytes:
                bad("stages", f"{plan.stages} stages: the kernel's SMEM layout needs {need} B, more than "
                    f"{hw.smem_per_block_bytes} B per block")
    if not out:  # the shape is valid: what it states twice agrees, its kernels and dsm_comm are the shape's
        _kernels_problems(plan, bad)
    return out


def _divides(bad, field: str, total: int, tile: int, what: str) -> None:
    if tile <= 0 or total % tile:
        bad(field, f"tile {tile} does not divide {what} = {total}")


def check_plan(plan: Plan, hw: Hardware, file: str | None = None) -> None:
    """Raise InputError naming the first violated field."""
    problems = plan_problems(plan, hw)
    if problems:
        field, msg = problems[0]
        raise InputError(file or "<plan>", field, msg, case=plan.case_id)


def load_plan(path: str, hw: Hardware) -> Plan:
    """Read a plan file (JSON or YAML, as written by `fusesim plan --format json` or Plan.to_json)."""
    from fusesim.yamlio import read_mapping

    raw = read_mapping(path)
    if "plan" in raw and isinstance(raw["plan"], dict):
        raw = raw["plan"]
    if "cases" in raw and "chain" not in raw:
        raise InputError(path, None, "a workload file (it has cases), not a plan: plan files are what codegen writes "
                         "beside each kernel (NAME.plan.json), or one `plan` entry of `fusesim plan --format json`")
    key = _unknown_key(raw)
    if key is not None:
        raise InputError(path, key[0], key[1], case=str(raw.get("case_id", "")) or None)
    try:
        plan = Plan.from_dict(raw)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(path, None, f"not a plan: {type(exc).__name__}: {exc}") from None
    wrong = _type_problem(plan, "")
    if wrong:
        raise InputError(path, wrong[0], wrong[1], case=str(plan.case_id))
    for name in ("m", "n", "k", "l"):
        if getattr(plan.chain, name) <= 0:
            raise InputError(path, f"chain.{name}", "must be a positive integer", case=plan.case_id)
    check_plan(plan, hw, path)
    return plan


def _unknown_key(raw: dict) -> tuple[str, str] | None:
    """(field, message) for the first key a plan file has that Plan does not (a typo like `stage` would be
    ignored), or a required key it lacks."""
    import dataclasses

    from fusesim.plan import ClusterShape, DsmStep, Kernel, Placement, Schedule, Tiles
    from fusesim.workload import Chain, ConvGeom

    def names(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    def required(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]

    def check(d: object, cls, where: str, extra: set[str] = frozenset()) -> tuple[str, str] | None:
        if not isinstance(d, dict):
            return (where or "plan", f"must be a mapping (got {type(d).__name__})")
        known = names(cls) | extra
        for k in d:
            if k not in known:
                return (f"{where}.{k}" if where else str(k), "unknown key")
        for k in required(cls):
            if k not in d:
                return (f"{where}.{k}" if where else k, "missing")
        return None

    nested = {"chain": Chain, "schedule": Schedule, "cluster": ClusterShape, "tiles": Tiles, "placement": Placement}
    found = check(raw, Plan, "")
    for name, cls in nested.items():
        extra = {"shuffle", "reduce", "size"} if name == "cluster" else set()
        found = found or check(raw[name], cls, name, extra)
    conv = raw["chain"].get("conv") if isinstance(raw.get("chain"), dict) else None
    if not found and conv is not None:
        found = check(conv, ConvGeom, "chain.conv")
    for list_name, cls in (("dsm_comm", DsmStep), ("kernels", Kernel)):
        items = raw.get(list_name)
        if not isinstance(items, list):
            found = found or (list_name, "must be a list")
            continue
        for i, item in enumerate(items):
            found = found or check(item, cls, f"{list_name}[{i}]")
            if not found and list_name == "kernels":
                found = check(item["tiles"], Tiles, f"kernels[{i}].tiles")
    return found


def _type_problem(obj: object, prefix: str) -> tuple[str, str] | None:
    """First field whose value has the wrong type (a hand-edited file can hold anything)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        v = getattr(obj, f.name)
        name = f"{prefix}{f.name}"
        want = hints[f.name]
        if dataclasses.is_dataclass(v):
            sub = _type_problem(v, f"{name}.")
            if sub:
                return sub
        elif isinstance(v, tuple):
            for i, item in enumerate(v):
                if dataclasses.is_dataclass(item):
                    sub = _type_problem(item, f"{name}[{i}].")
                    if sub:
                        return sub
        elif want is int and (not isinstance(v, int) or isinstance(v, bool)):
            return name, f"must be an integer (got {v!r})"
        elif want is str and not isinstance(v, str):
            return name, f"must be a string (got {v!r})"
        elif want is bool and not isinstance(v, bool):
            return name, f"must be true or false (got {v!r})"
    return None
