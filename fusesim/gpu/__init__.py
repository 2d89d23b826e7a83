"""Running on a GPU: baselines, loading generated kernels, verification, timing, Nsight Compute.

The only package that imports torch, and only inside functions, so planning and simulation run
on machines without a GPU.
"""
