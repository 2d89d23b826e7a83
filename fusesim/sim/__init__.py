"""The SimPy machine: executes a Plan on a Hardware description and predicts time and traffic.

Modules read like the hardware: `fluid` (bandwidth shared by concurrent transfers), `memory`
(HBM + write-back L2), `gpu` (GPCs of SMs, dispatcher, the per-block software pipeline),
`kernels` (what the generated kernels' blocks do, from the Plan), `engine` (launcher, results),
`trace` (Chrome/Perfetto export). `examples` builds hand-made Plans for micro-cases and tests.
"""

from fusesim.sim.engine import SimResult, simulate

__all__ = ["SimResult", "simulate"]
