"""Simulator constants that the Hardware spec does not carry, each with where it comes from.

Keep this list short: every entry is a global, physically meaningful parameter (never tuned per
case). When a calibration microbenchmark measures one of them, move it into the Hardware spec.
"""

# Bytes per SM clock one SM can move between L2 and itself (loads or stores). Hopper's L1/TMA
# fill path is 64 B/clk per SM (inferred from public H100 microbenchmarks: ~120 GB/s per SM for a
# single-SM copy at 1.98 GHz). It only matters when few SMs are busy (tails, tiny grids).
SM_GLOBAL_BYTES_PER_CYCLE = 64

# Tiles of an unfused GEMM are rasterised in groups of this many M-tiles (1 = N fastest, as the
# generated gemm.cu.j2 maps blockIdx.x; 8 would be a CUTLASS/cuBLAS-style threadblock swizzle).
RASTER_GROUP_M = 1

# Fixed per-block cost of the prologue (mbarrier init, TMA descriptor prefetch) and epilogue
# bookkeeping, in SM cycles (inferred; small next to the mainloop of any real tile).
BLOCK_PROLOGUE_CYCLES = 600
