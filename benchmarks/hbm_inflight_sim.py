"""The simulator's memory model on calibrate's hbm_inflight pattern: N SMs each keep one 32 KiB load
in flight over a cold buffer. Prints simulated GB/s and latency per load next to the H200's
(results/h200/calibration_hbm_inflight.json).

    python benchmarks/hbm_inflight_sim.py
"""

from pathlib import Path

import simpy

from fusesim.hardware import load_hardware
from fusesim.sim.memory import MemorySystem
from fusesim.stored import read_json

ROOT = Path(__file__).resolve().parents[1]
hw = load_hardware(ROOT / "hw_configs" / "h200_calibrated.yaml")
raw = read_json(ROOT / "results" / "h200" / "calibration_hbm_inflight.json")
measured = {c["sms"]: c for c in raw["groups"]["hbm_inflight"]["cases"] if c["blocks_per_sm"] == 1}
print("| SMs | simulated GB/s | measured GB/s | simulated ns per load | measured ns |")
print("| --- | --- | --- | --- | --- |")
CH = 32 * 1024
for sms in (16, 33, 66, 76, 100, 132):
    env = simpy.Environment()
    mem = MemorySystem(env, hw)
    total = 256 << 20
    per = total // CH // sms
    def sm(i: int, per: int = per, mem: MemorySystem = mem):
        for j in range(per):
            yield mem.load([(("X", i, j), CH)], CH, 1)
    for i in range(sms):
        env.process(sm(i))
    env.run()
    gbps = per * sms * CH / env.now
    m = measured[sms]
    print(f"| {sms} | {gbps:.0f} | {m['gbps_median']:.0f} | {sms * CH / gbps:.0f} | {m['latency_ns']:.0f} |")
