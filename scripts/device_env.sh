# Sourced (not run) by the device scripts, from the repository root of a bare GPU machine:
# installs the wheels carried in .whl/ (scripts/device_wheels.sh) into /tmp/site, points Python
# at them and at the repo, and unpacks kernels prebuilt here (.fscarry/cache.tar.xz, made by
# `tar -cJf .fscarry/cache.tar.xz .fscache` after scripts/prebuild.py) into $FUSESIM_CACHE.
# the GPU, and the suffix of result files measured on an H100 (asked for an H200, another GPU's are named apart)
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
# REQUIRE_GPU=H200: stop at once (exit 3, before the wheels and the kernels are unpacked) on any other GPU, when
# only that GPU's numbers are wanted (the device tool may lend an H100 for an H200; the start is spent either way)
if [ -n "${REQUIRE_GPU:-}" ] && [[ "$GPU" != *"$REQUIRE_GPU"* ]]; then
  echo "${GPU:-no GPU} is not the $REQUIRE_GPU asked for: nothing run"; exit 3
fi
TAG=""; case "$GPU" in *H100*) TAG=_h100 ;; esac
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export FUSESIM_CACHE=${FUSESIM_CACHE:-/tmp/fusesim_cache}
mkdir -p "$FUSESIM_CACHE"
if [ -f .fscarry/cache.tar.xz ]; then
  tar -xJf .fscarry/cache.tar.xz -C /tmp && cp -rn /tmp/.fscache/. "$FUSESIM_CACHE"/
fi
