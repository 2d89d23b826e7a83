#!/usr/bin/env bash
# Why racecheck never finishes on the aliased reduce-scatter family (fused_wgmma, its reduce-scatter receive
# slots in the drained ring; memcheck and synccheck take 9.5 s on it): three racechecks at once --
#   long:       the plain check with a longer limit (does it finish at all?);
#   nomemcpy:   --racecheck-memcpy-async no (is it racecheck's tracking of the bulk copies that push the slices?);
#   reference:  the exchange_shuffle_reduce family (a reduce-scatter into slots of their own, which finishes),
#               timed, for the per-block cost of a racecheck on a fused_wgmma cluster of 8.
# PROBE=deadlock instead: racecheck's deadlock detection (a sync instruction waiting past 20 s is reported, then
# the check stops), alone and with its sync trace; the logs (first 4 MB) come back beside the JSON.
# Kernels come prebuilt in .fscarry (scripts/prebuild.py --sanitize). Usage: scripts/device_racecheck_probe.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: scripts/device_racecheck_probe.sh OUT_DIR}
mkdir -p "$DEST"
source scripts/device_env.sh
echo "$GPU"; compute-sanitizer --version | tail -1
compute-sanitizer --help 2>&1 | grep -A1 -- '--racecheck' | head -40
san() { python3 -m fusesim.gpu.sanitize --tools racecheck --work "/tmp/san_$1" --out "$DEST/racecheck_probe_$1$TAG.json" "${@:2}" \
  > "/tmp/san_$1.txt" 2>&1; }
if [ "${PROBE:-}" = deadlock ]; then
  DL="--racecheck-deadlock-timeout 20000 --racecheck-continue-on-deadlock no"
  san deadlock --only "reduce receive aliased" --job-timeout-s 240 --sanitizer-args "$DL" &
  san deadlock_trace --only "reduce receive aliased" --job-timeout-s 240 --sanitizer-args "$DL --racecheck-trace-sync yes" &
  wait
  for f in deadlock deadlock_trace; do
    echo "== $f"; tail -3 "/tmp/san_$f.txt"
    for log in /tmp/san_$f/*.log; do head -c 4000000 "$log" > "$DEST/racecheck_probe_$f$TAG.log"; grep -v '^=* *$' "$log" | head -40; done
  done
  exit 0
fi
san long --only "reduce receive aliased" --job-timeout-s "${LONG_S:-500}" &
san nomemcpy --only "reduce receive aliased" --job-timeout-s 400 --sanitizer-args "--racecheck-memcpy-async no" &
san reference --only "exchange shuffle reduce" --job-timeout-s 400 &
wait
for f in long nomemcpy reference; do echo "== $f"; tail -3 "/tmp/san_$f.txt"; done
