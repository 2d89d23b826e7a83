#!/usr/bin/env bash
# Prepare wheels for a bare GPU machine with no network (run HERE, where pip can reach PyPI).
# The device image has torch, numpy, pyyaml, jinja2 but not simpy / pydantic; fusesim imports
# pydantic (hardware.py, workload.py). The wheels land in .whl/ (git-ignored) and travel with the
# device call via `carry: [".whl"]`; scripts/device_bench.sh installs them with --target. pytest and its
# dependencies come along for `python3 -m pytest -m gpu tests/test_gpu.py` on the device.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=3.12   # the device image's python3
mkdir -p .whl
pyver() { python3 -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true; }
for pkg in simpy pydantic pydantic_core annotated_types typing_inspection typing_extensions pytest pluggy iniconfig packaging; do
  v=$(pyver "$pkg")
  spec=$pkg${v:+==$v}
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "$spec"
done
ls -l .whl
