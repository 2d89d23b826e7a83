"""Workload cases and their lowering to the two-GEMM `Chain` every other part reads.

Chain: C = A[M,K] @ B[K,N]; C' = act(C) (gated: silu(A@Bg) * (A@Bu)); E = C' @ D[N,L].
A conv chain (k1 x k1 conv, then 1x1) lowers by implicit im2col, stride 1, "same" padding:
M = batch*H*W, K = IC*k1*k1, N = OC1, L = OC2. The A operand's unique bytes stay the image's
(batch*H*W*IC), not the im2col matrix's: the expansion happens on chip.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fusesim.errors import InputError, pydantic_error
from fusesim.yamlio import read_mapping

DTYPE_BYTES = {"bf16": 2, "fp16": 2}
MAX_DIM = 1 << 24  # any single dimension
MAX_TENSOR_ELEMS = (1 << 31) - 1  # generated kernels index tensors with 32-bit element offsets
CASE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

Dim = Annotated[int, Field(gt=0, le=MAX_DIM, strict=True)]
Activation = Literal["relu", "gelu", "silu", "none"]
DType = Literal["bf16", "fp16"]


@dataclass(frozen=True)
class ConvGeom:
    """Geometry of the first conv, kept so the A-tile loader can do implicit im2col (NHWC)."""

    batch: int
    h: int
    w: int
    ic: int
    k1: int


@dataclass(frozen=True)
class Chain:
    """The two-GEMM problem every strategy solves."""

    case_id: str
    kind: str
    m: int
    n: int
    k: int
    l: int  # noqa: E741 - the paper's name
    activation: str
    gated: bool
    dtype: str = "bf16"
    conv: ConvGeom | None = None

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def gemm0_flops(self) -> int:
        return 2 * self.m * self.n * self.k * (2 if self.gated else 1)

    @property
    def gemm1_flops(self) -> int:
        return 2 * self.m * self.n * self.l

    @property
    def flops(self) -> int:
        return self.gemm0_flops + self.gemm1_flops

    # unique bytes of each tensor in global memory
    @property
    def a_bytes(self) -> int:
        elems = self.conv.batch * self.conv.h * self.conv.w * self.conv.ic if self.conv else self.m * self.k
        return elems * self.dtype_bytes

    @property
    def b_bytes(self) -> int:
        return self.k * self.n * (2 if self.gated else 1) * self.dtype_bytes

    @property
    def c_bytes(self) -> int:
        """The intermediate after activation/gating (what an unfused chain writes and re-reads)."""
        return self.m * self.n * self.dtype_bytes

    @property
    def d_bytes(self) -> int:
        return self.n * self.l * self.dtype_bytes

    @property
    def e_bytes(self) -> int:
        return self.m * self.l * self.dtype_bytes

    @property
    def min_bytes(self) -> int:
        """Each input read once, the output written once: the fused data-movement floor."""
        return self.a_bytes + self.b_bytes + self.d_bytes + self.e_bytes

    def floor_ns(self, hw: Any, family: str | None = None) -> float:
        """Roofline floor: max(FLOPs at the tensor peak, minimum bytes at HBM bandwidth)."""
        family = family or hw.best_instruction()
        compute = self.flops / hw.tensor_flops_per_ns(family, self.dtype)
        memory = self.min_bytes / hw.hbm_bandwidth_gbps  # GB/s == bytes/ns
        return max(compute, memory)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chain:
        d = dict(d)
        if d.get("conv") is not None:
            d["conv"] = ConvGeom(**d["conv"])
        return cls(**d)


class _CaseBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    dtype: DType = "bf16"

    @field_validator("id")
    @classmethod
    def _id_ok(cls, v: str) -> str:
        if not CASE_ID_RE.match(v):
            raise ValueError("case id must be 1-64 letters, digits, '_', '.', '-' (it becomes a file name)")
        return v


class FfnCase(_CaseBase):
    kind: Literal["ffn"]
    m: Dim
    n: Dim
    k: Dim
    l: Dim  # noqa: E741
    activation: Activation = "relu"


class GatedFfnCase(_CaseBase):
    kind: Literal["gated_ffn"]
    m: Dim
    n: Dim
    k: Dim
    l: Dim  # noqa: E741
    activation: Literal["silu", "gelu"] = "silu"


class GemmChainCase(_CaseBase):
    kind: Literal["gemm_chain"]
    m: Dim
    n: Dim
    k: Dim
    l: Dim  # noqa: E741
    activation: Literal["none"] = "none"


class ConvChainCase(_CaseBase):
    kind: Literal["conv_chain"]
    batch: Dim = 1
    ic: Dim
    h: Dim
    w: Dim
    oc1: Dim
    oc2: Dim
    k1: Literal[1, 3, 5, 7] = 1
    k2: int = Field(1, strict=True)
    activation: Activation = "relu"

    @field_validator("k2")
    @classmethod
    def _k2_is_one(cls, v: int) -> int:
        if v != 1:
            raise ValueError(
                f"k2 = {v}: a second conv larger than 1x1 needs halo exchange between tiles, which fusesim does not fuse"
            )
        return v


CASE_MODELS: dict[str, type[_CaseBase]] = {
    "ffn": FfnCase,
    "gated_ffn": GatedFfnCase,
    "gemm_chain": GemmChainCase,
    "conv_chain": ConvChainCase,
}


def lower(case: _CaseBase) -> Chain:
    """Every kind becomes a two-GEMM chain."""
    if isinstance(case, ConvChainCase):
        return Chain(
            case_id=case.id, kind=case.kind, m=case.batch * case.h * case.w, n=case.oc1,
            k=case.ic * case.k1 * case.k1, l=case.oc2, activation=case.activation, gated=False,
            dtype=case.dtype, conv=ConvGeom(case.batch, case.h, case.w, case.ic, case.k1) if case.k1 > 1 else None,
        )
    return Chain(
        case_id=case.id, kind=case.kind, m=case.m, n=case.n, k=case.k, l=case.l,  # type: ignore[attr-defined]
        activation=case.activation, gated=isinstance(case, GatedFfnCase), dtype=case.dtype,  # type: ignore[attr-defined]
    )


KINDS = tuple(get_args(c.model_fields["kind"].annotation)[0] for c in (FfnCase, GatedFfnCase, GemmChainCase,
                                                                          ConvChainCase))
ACTIVATIONS = get_args(Activation)


def size_problems(chain: Chain) -> list[tuple[str, str]]:
    """(tensor, message) for each operand over the generated kernels' 32-bit element offsets."""
    return [(name, f"tensor of {elems} elements exceeds the 2^31-1 element limit")
            for name, elems in (("m*k", chain.m * chain.k), ("k*n", chain.k * chain.n), ("m*n", chain.m * chain.n),
                                ("n*l", chain.n * chain.l), ("m*l", chain.m * chain.l))
            if elems > MAX_TENSOR_ELEMS]


def _check_sizes(chain: Chain, file: str) -> None:
    for name, msg in size_problems(chain)[:1]:
        raise InputError(file, name, msg, case=chain.case_id)


@dataclass(frozen=True)
class Workload:
    name: str
    path: str
    cases: tuple[Chain, ...]

    def select(self, ids: list[str] | None) -> list[Chain]:
        if not ids:
            return list(self.cases)
        by_id = {c.case_id: c for c in self.cases}
        for i in ids:
            if i not in by_id:
                raise InputError(self.path, "id", f"no case {i!r} (have {', '.join(by_id)})", case=i)
        return [by_id[i] for i in ids]


def parse_case(raw: Any, file: str, index: int) -> Chain:
    if not isinstance(raw, dict):
        raise InputError(file, f"cases[{index}]", "each case must be a mapping")
    case_name = str(raw.get("id", f"#{index}"))
    kind = raw.get("kind")
    if kind is None:
        raise InputError(file, "kind", "missing required field", case=case_name)
    model = CASE_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise InputError(file, "kind", f"unknown kind {kind!r} (one of {', '.join(CASE_MODELS)})", case=case_name)
    try:
        case = model.model_validate(raw)
    except ValidationError as exc:
        raise pydantic_error(file, exc, case=case_name) from None
    chain = lower(case)
    _check_sizes(chain, file)
    return chain


def workload_from_dict(raw: dict[str, Any], file: str = "<workload>") -> Workload:
    unknown = set(raw) - {"name", "description", "cases"}
    if unknown:
        raise InputError(file, sorted(unknown)[0], "unknown key")
    cases = raw.get("cases")
    if not isinstance(cases, list) or not cases:
        raise InputError(file, "cases", "must be a non-empty list")
    chains = [parse_case(c, file, i) for i, c in enumerate(cases)]
    seen: set[str] = set()
    for ch in chains:
        if ch.case_id in seen:
            raise InputError(file, "id", "duplicate case id", case=ch.case_id)
        seen.add(ch.case_id)
    name = raw.get("name", Path(file).stem)
    if not isinstance(name, str):
        raise InputError(file, "name", "must be a string")
    return Workload(name=name, path=file, cases=tuple(chains))


def load_workload(path: str | Path) -> Workload:
    raw = read_mapping(path)
    if "cases" not in raw and "sm_count" in raw:
        raise InputError(str(path), None, "a hardware file (it has sm_count), not a workload: pass it with --hw")
    return workload_from_dict(raw, str(path))
