"""A standalone host harness per generated kernel: verify and time it with nvcc alone, no Python.

`fusesim codegen` writes, next to each kernel's .cu, `NAME_main.cu` (includes the .cu; fresh random inputs,
a float32 reference on the GPU, NaN-poisoned output, two launches, CUDA-event timing with L2 evicted
before each launch, the method of `fusesim bench`) and one `Makefile` for every harness in the folder.
"""

from __future__ import annotations

from pathlib import Path

from fusesim.codegen import Source, _conv, _env
from fusesim.codegen.build import ARCH, COMMON
from fusesim.plan import Plan

ACTIVATION_IDS = {"none": 0, "relu": 1, "gelu": 2, "silu": 3}
NVCC_FLAGS = [*ARCH, *COMMON]

MAKEFILE = """\
# Builds the standalone harnesses `fusesim codegen` wrote here (NAME_main.cu includes NAME.cu): `make`, then
# ./NAME [--reps N] [--seed S] [--json] [--no-time] [--dump DIR]. Needs nvcc (CUDA 12.3 or later) and a Hopper GPU.
NVCC ?= nvcc
NVCCFLAGS ?= {flags}
HARNESSES := $(patsubst %_main.cu,%,$(wildcard *_main.cu))

all: $(HARNESSES)

%:: %_main.cu %.cu $(wildcard *.cuh)
\t$(NVCC) $(NVCCFLAGS) -I. -o $@ $<

clean:
\trm -f $(HARNESSES)

.PHONY: all clean
"""


def harness_name(src: Source) -> str:
    return f"{src.name}_main.cu"


def nvcc_command(src: Source, nvcc: str = "nvcc") -> list[str]:
    """The line that builds the harness executable `src.name` in the folder the files were written to."""
    return [nvcc, *NVCC_FLAGS, "-I.", "-o", src.name, harness_name(src)]


def render_harness(plan: Plan, src: Source) -> str:
    ch = plan.chain
    cv = ch.conv
    problem = f"M x N x K x L = {ch.m} x {ch.n} x {ch.k} x {ch.l}"
    if cv is not None:
        problem += f" (conv {cv.k1}x{cv.k1} over {cv.batch}x{cv.h}x{cv.w}x{cv.ic} NHWC)"
    if ch.gated:
        problem += ", gated (silu)"
    else:
        problem += f", {ch.activation}"
    return _env().get_template("harness.cu.j2").render(
        name=src.name, family=src.family, case_id=plan.case_id, strategy=plan.strategy, problem=problem,
        nvcc_line=" ".join(nvcc_command(src)), m=ch.m, n=ch.n, k=ch.k, l=ch.l, gated=ch.gated,
        act_id=ACTIVATION_IDS[ch.activation], conv=_conv(plan), flops=ch.gemm0_flops + ch.gemm1_flops,
        min_bytes=ch.min_bytes,
    )


def makefile() -> str:
    return MAKEFILE.format(flags=" ".join(NVCC_FLAGS))


def write_harness(plan: Plan, src: Source, out_dir: Path) -> Path:
    """Write NAME_main.cu and the folder's Makefile (the same for every harness); return the harness path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / harness_name(src)
    path.write_text(render_harness(plan, src))
    (out_dir / "Makefile").write_text(makefile())
    return path
