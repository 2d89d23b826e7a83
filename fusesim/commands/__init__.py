"""One module per `fusesim` subcommand; each exposes `register(subparsers)` and sets `func`.

Modules are imported when the CLI starts, so they import nothing heavy (torch, simpy, dask) at
module level.
"""

COMMANDS = ("list", "show", "plan", "simulate", "codegen", "bench", "calibrate", "validate", "sweep", "roofline")
