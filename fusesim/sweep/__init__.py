"""Hardware sweeps: grids of hardware overrides x workload cases x strategies, resumable, local or Dask.

    from fusesim.sweep import load_spec, run_sweep
    summary = run_sweep(load_spec("sweeps/dsm_bandwidth_x_cluster.yaml"), "out/dsm.csv", jobs=2)

See spec.py for the spec format, store.py for the file format and its crash guarantees,
derive.py for the rules that keep swept machines valid, evaluate.py for what a row holds.
"""

from fusesim.sweep.evaluate import METRIC_COLUMNS, NONDETERMINISTIC_COLUMNS, evaluate_point
from fusesim.sweep.runner import SweepSummary, columns_for, default_out, run_sweep
from fusesim.sweep.spec import HardwarePoint, SweepSpec, Task, load_spec, spec_from_args, spec_from_dict
from fusesim.sweep.store import read_rows, write_parquet

__all__ = [
    "METRIC_COLUMNS", "NONDETERMINISTIC_COLUMNS", "HardwarePoint", "SweepSpec", "SweepSummary", "Task",
    "columns_for", "default_out", "evaluate_point", "load_spec", "read_rows", "run_sweep", "spec_from_args",
    "spec_from_dict", "write_parquet",
]
