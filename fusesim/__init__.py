"""fusesim: plan, simulate and generate DSM-fused kernels for operator chains on Hopper-class GPUs."""

__version__ = "0.1.0"
