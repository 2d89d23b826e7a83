// fusesim tile primitives: cp.async loads, ldmatrix, mma.sync m16n8k16 (bf16 -> fp32), warp tiles.
// Small, composable pieces in the ThunderKittens spirit: each does one hardware thing.
#pragma once
#include <cuda_bf16.h>
#include <stdint.h>

namespace fs {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- cp.async (global -> shared, 16 bytes, zero-filled when !pred) -------------------------------
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(pred ? 16 : 0));
}
// Bulk L2 prefetch (sm_90): start a DRAM read of `bytes` (16-byte multiple, 16-byte aligned) into L2.
__device__ __forceinline__ void prefetch_l2(const void* gmem, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// ---- ldmatrix ------------------------------------------------------------------------------------
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

// ---- mma.sync m16n8k16, bf16 inputs, fp32 accumulate ---------------------------------------------
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ---- a warp's tile of the block tile: TM x TN of fp32 accumulators -------------------------------
// Fragment (i, j) covers rows 16*i.., cols 8*j..; thread holds (row lane/4 [+8], cols 2*(lane%4)+{0,1}).
template <int TM, int TN>
struct WarpAcc {
  static constexpr int MI = TM / 16, NI = TN / 8;
  static_assert(TM % 16 == 0 && TN % 16 == 0, "warp tile must be a multiple of 16x16");
  float v[MI][NI][4];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) v[i][j][e] = 0.f;
  }

  // acc += A[TM x 16*KSTEPS] (row-major, lda) @ B[16*KSTEPS x TN] (row-major, ldb); both in SMEM.
  template <int KSTEPS>
  __device__ __forceinline__ void mma(const bf16* sA, int lda, const bf16* sB, int ldb) {
    const int lane = threadIdx.x & 31;
    const int r = lane & 15, c = (lane >> 4) * 8;
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
      uint32_t a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) ldsm_x4(a[i], sA + (16 * i + r) * lda + 16 * ks + c);
#pragma unroll
      for (int j = 0; j < NI / 2; ++j) {
        uint32_t b[4];
        ldsm_x4_trans(b, sB + (16 * ks + r) * ldb + 16 * j + c);
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          mma_16816(v[i][2 * j], a[i], b[0], b[1]);
          mma_16816(v[i][2 * j + 1], a[i], b[2], b[3]);
        }
      }
    }
  }

  // Visit every pair of adjacent columns this thread holds: f(row, col, v0&, v1&), row/col in the warp tile.
  template <class F>
  __device__ __forceinline__ void for_pairs(F&& f) {
    for_frags([&](int r, int c, int i, int j, int h) { f(r, c, v[i][j][2 * h], v[i][j][2 * h + 1]); });
  }
  // Same walk, handing out fragment coordinates so a second accumulator can be read alongside.
  template <class F>
  __device__ __forceinline__ void for_frags(F&& f) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) f(16 * i + (lane >> 2) + 8 * h, 8 * j + 2 * (lane & 3), i, j, h);
  }
};

// ---- block-cooperative 16-byte tile loads into SMEM ----------------------------------------------
// ROWS x COLS bf16 tile from a row-major global matrix; rows >= rows_valid are zero-filled.
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile(bf16* s, int lds, const bf16* g, long ldg, int rows_valid) {
  constexpr int CPR = COLS / 8;  // 16-byte chunks per row
  constexpr int CHUNKS = ROWS * CPR;
#pragma unroll
  for (int c = threadIdx.x; c < CHUNKS; c += THREADS) {
    const int row = c / CPR, col = (c % CPR) * 8;
    const bool ok = row < rows_valid;
    cp_async16(s + row * lds + col, ok ? g + row * ldg + col : g, ok);
  }
}

// Implicit im2col (NHWC, stride 1, 'same' padding, k1 x k1 window, patch order (kh, kw, ic)):
// A[m, kk] with m = (b, y, x) and kk = ((ky * k1) + kx) * IC + c. Out-of-image taps are zero.
template <int ROWS, int COLS, int THREADS, int H, int W, int IC, int K1>
__device__ __forceinline__ void load_tile_im2col(bf16* s, int lds, const bf16* img, int m0, int k0, int m_valid) {
  constexpr int CPR = COLS / 8;
  constexpr int CHUNKS = ROWS * CPR;
  constexpr int PAD = K1 / 2;
#pragma unroll
  for (int c = threadIdx.x; c < CHUNKS; c += THREADS) {
    const int row = c / CPR, col = (c % CPR) * 8;
    const int m = m0 + row, kk = k0 + col;
    const int tap = kk / IC, ch = kk % IC;
    const int ky = tap / K1, kx = tap % K1;
    const int b = m / (H * W), yx = m % (H * W);
    const int y = yx / W + ky - PAD, x = yx % W + kx - PAD;
    const bool ok = m < m_valid && y >= 0 && y < H && x >= 0 && x < W;
    const bf16* src = ok ? img + ((long)(b * H + y) * W + x) * IC + ch : img;
    cp_async16(s + row * lds + col, src, ok);
  }
}

// Implicit im2col with each copy's row decoded once per block (capability.IM2COL_ROWS_HOISTED):
// when a k tile never straddles a filter tap (IC % COLS == 0, k0 a multiple of COLS) the tap is
// uniform per tile, so a 16-byte copy only offsets its row's pixel by the tap and checks the image
// bounds, instead of four constant divisions per copy (load_tile_im2col). Rows past m_valid and
// copies past the tile keep an out-of-image row (zero-filled, like load_tile_im2col's).
template <int ROWS, int COLS, int THREADS, int H, int W, int IC, int K1>
struct Im2colRows {
  static_assert(IC % COLS == 0, "a k tile must not straddle a filter tap");
  static constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR, PER = (CHUNKS + THREADS - 1) / THREADS;
  static constexpr int PAD = K1 / 2, OUTSIDE = -K1 - 1;  // OUTSIDE + any tap offset stays < 0
  int y[PER], x[PER], m[PER];  // each copy's output pixel: image row and column, and its row of A

  __device__ __forceinline__ Im2colRows(int m0, int m_valid) {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = threadIdx.x + i * THREADS;
      m[i] = m0 + c / CPR;
      const int yx = m[i] % (H * W);
      y[i] = (c < CHUNKS && m[i] < m_valid) ? yx / W : OUTSIDE;
      x[i] = yx % W;
    }
  }

  __device__ __forceinline__ void load(bf16* s, int lds, const bf16* img, int k0) const {
    const int tap = k0 / IC, dy = tap / K1 - PAD, dx = tap % K1 - PAD;
    const bf16* shifted = img + ((long)dy * W + dx) * IC + k0 % IC;  // pixel (y + dy, x + dx), channel k0 % IC
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CHUNKS % THREADS != 0 && c >= CHUNKS) continue;
      const int row = c / CPR, col = (c % CPR) * 8;
      const bool ok = (unsigned)(y[i] + dy) < (unsigned)H && (unsigned)(x[i] + dx) < (unsigned)W;
      cp_async16(s + row * lds + col, ok ? shifted + (long)m[i] * IC + col : img, ok);
    }
  }

  // The same copies into a wgmma A operand (COLS = 64: one 128-byte row per pixel) with the 128-byte
  // swizzle that TMA writes and a K-major descriptor reads: 16-byte chunk q of row r at
  // r * 128 + ((q ^ (r % 8)) * 16) from a 1024-byte aligned `s`.
  __device__ __forceinline__ void load_sw128(unsigned char* s, const bf16* img, int k0) const {
    static_assert(COLS == 64, "a 128-byte swizzled row holds 64 bf16");
    const int tap = k0 / IC, dy = tap / K1 - PAD, dx = tap % K1 - PAD;
    const bf16* shifted = img + ((long)dy * W + dx) * IC + k0 % IC;
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = threadIdx.x + i * THREADS;
      if (CHUNKS % THREADS != 0 && c >= CHUNKS) continue;
      const int row = c / CPR, q = c % CPR;
      const bool ok = (unsigned)(y[i] + dy) < (unsigned)H && (unsigned)(x[i] + dx) < (unsigned)W;
      cp_async16(s + row * 128 + ((q ^ (row & 7)) << 4), ok ? shifted + (long)m[i] * IC + q * 8 : img, ok);
    }
  }
};

// ---- epilogue math ---------------------------------------------------------------------------------
__device__ __forceinline__ float act_relu(float x) { return fmaxf(x, 0.f); }
// GELU and SiLU through the MUFU tanh (tanh.approx.f32): an epilogue thread holds up to 128 values
// with one or two warps per scheduler, so erff's polynomial and an IEEE division are latency it waits
// on. GELU is its tanh form: with tanh.approx's error bound (2^-10.987 relative) it stays within
// 5e-4 + 2.5e-4 |x| of the erf GELU the fp32 reference computes, under bf16's rounding of the output;
// SiLU = x * sigmoid(x), sigmoid = 0.5 tanh(x / 2) + 0.5 (within 2.5e-4 |x|). On the H200 the 13
// gelu/silu cases' fastest plans took 0.93-0.995x the time with these (results/h200/act_math_trial.json).
__device__ __forceinline__ float tanh_mufu(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float act_gelu(float x) {
  return 0.5f * x * (1.f + tanh_mufu(0.7978845608f * fmaf(0.044715f * x, x * x, x)));
}
__device__ __forceinline__ float act_silu(float x) { return x * fmaf(0.5f, tanh_mufu(0.5f * x), 0.5f); }
__device__ __forceinline__ float act_none(float x) { return x; }

__device__ __forceinline__ uint32_t pack_bf16x2(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

// Launch-configuration guard: a kernel run with the wrong shape reports instead of computing.
__device__ int g_fs_error;
__device__ __forceinline__ bool launch_ok(int threads, int grid, int cluster) {
  uint32_t ncta = 1;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(ncta));
  const bool ok = blockDim.x == (unsigned)threads && blockDim.y == 1 && blockDim.z == 1 &&
                  gridDim.x == (unsigned)grid && gridDim.y == 1 && ncta == (unsigned)cluster;
  if (!ok && threadIdx.x == 0) atomicExch(&g_fs_error, 1);
  return ok;
}

}  // namespace fs
