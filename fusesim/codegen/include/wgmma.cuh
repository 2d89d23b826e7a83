// fusesim Hopper primitives for the gemm_wgmma family: mbarriers, TMA tile loads, wgmma descriptors.
// One hardware thing per function (sm_90a only). The wgmma instruction itself is emitted by the
// template with the accumulator count of its tile (its operand list depends on N).
#pragma once
#include <cuda.h>  // CUtensorMap (a header type: no libcuda link, the encoder comes via the runtime)
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include "dsm_comm.cuh"  // inter_cluster_ticket: the split-K ticket is the same protocol

namespace fs {
namespace wg {

// ---- mbarrier (CTA scope) --------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}
// Make the initialised barriers visible to the async proxy (TMA) before anyone uses them.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}
// Raise the barrier's expected transaction bytes without arriving: the stage's arrivals come from the
// threads whose cp.async copies share it (the implicit-im2col A loader), the bytes from TMA.
__device__ __forceinline__ void mbar_expect_tx_only(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
}
// Spin until the phase with this parity has completed (a fresh barrier counts parity 1 as done).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- TMA: 2-D tile global -> shared, completion counted in bytes on an mbarrier -----------------------
// c0 is the innermost (contiguous) coordinate. Out-of-bounds elements are written as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}
// Same, with an L2 eviction policy (from l2_policy_*): weights stream once, activations are re-read.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1,
                                            uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "l"(policy)
      : "memory");
}
// TMA im2col: `pixels` output pixels (the box's rows, one 128-byte row of channels c..c+63 each) of a
// k1 x k1 'same' convolution's implicit-GEMM A, for the filter tap (off_w, off_h); (w, h, n) is the first
// pixel's top-left tap in the image (pixel - pad). The map's bounding box walks the pixels along W, H,
// N; taps outside the image are zeros (Im2colMap below).
__device__ __forceinline__ void tma_load_im2col(void* dst, const CUtensorMap* map, uint64_t* bar, int c, int w, int h,
                                                int n, uint16_t off_w, uint16_t off_h, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n"
      ::"r"(smem_u32(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(smem_u32(bar)),
      "h"(off_w), "h"(off_h), "l"(policy)
      : "memory");
}
__device__ __forceinline__ uint64_t l2_policy_evict_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t l2_policy_evict_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// Bulk L2 prefetch with an eviction policy: start the DRAM read of `bytes` (16-byte multiple) into L2.
__device__ __forceinline__ void prefetch_l2_policy(const void* gmem, uint32_t bytes, uint64_t policy) {
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;\n" ::"l"(gmem), "r"(bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void tma_prefetch_desc(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- wgmma shared-memory matrix descriptors, 128-byte swizzle ---------------------------------------
// bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4,
// 62-63 layout (1 = 128B swizzle). Tiles start on 1024-byte boundaries (base offset 0).
__device__ __forceinline__ uint64_t desc_sw128(const void* smem, uint32_t lbo, uint32_t sbo) {
  const uint64_t addr = smem_u32(smem);
  return ((addr & 0x3FFFF) >> 4) | (uint64_t((lbo >> 4) & 0x3FFF) << 16) | (uint64_t((sbo >> 4) & 0x3FFF) << 32) |
         (uint64_t(1) << 62);
}
// K-major operand (A: rows of 64 bf16 = 128 B along K): 8-row core groups 1024 B apart; LBO unused.
__device__ __forceinline__ uint64_t desc_kmajor(const void* smem) { return desc_sw128(smem, 16, 1024); }
// MN-major operand (B: [K][64 N] sub-tiles of 64 x 128 B): 8 K-rows per 1024 B (SBO); the next 64
// columns of N live `chunk_bytes` further on (LBO).
__device__ __forceinline__ uint64_t desc_mnmajor(const void* smem, uint32_t chunk_bytes) {
  return desc_sw128(smem, chunk_bytes, 1024);
}

// ---- programmatic dependent launch ------------------------------------------------------------------
// The next kernel in the stream may start (its blocks run their prologue while this grid drains).
__device__ __forceinline__ void pdl_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); }
// Block until the previous grid in the stream has completed and its writes are visible.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// ---- cluster-scope mbarrier traffic (fused_wgmma's dsm_comm: push with completion on the receiver) ----
// Wait for a phase whose bytes were written by peers of the cluster (st.async / bulk DSM copies).
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
// 16 bytes into a peer's SMEM (`addr`, `bar`: cluster addresses from map_peer); the bytes count on the
// peer's mbarrier when they land.
__device__ __forceinline__ void st_async_f32x4(uint32_t addr, float4 v, uint32_t bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n"
               ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar)
               : "memory");
}
// Bulk copy of `bytes` (16-byte multiple) of own SMEM into a peer's SMEM by the copy engine,
// completion counted on the peer's mbarrier `bar` (cluster address).
__device__ __forceinline__ void bulk_copy_to_peer(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "r"(smem_u32(src)), "r"(bytes), "r"(bar)
               : "memory");
}
// Ordinary SMEM stores made visible to the async proxy (wgmma operand reads, bulk copies).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Barrier among the `threads` threads of named barrier `id` (1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Byte offset of bf16 element (row, col) in a K-major operand of `rows` rows stored as 64-column
// chunks of [rows][128 B] with the 128-byte swizzle (the layout TMA writes and desc_kmajor reads).
__device__ __forceinline__ uint32_t sw128_offset(int row, int col, int rows) {
  const int x = col & 63;
  return (uint32_t)((col >> 6) * rows * 128 + row * 128 + ((((x >> 3) ^ (row & 7)) << 4) | ((x & 7) << 1)));
}

// ---- split-K epilogue pieces ----------------------------------------------------------------------
__device__ __forceinline__ void red_add_f32x2(float* g, float a, float b) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(g), "f"(a), "f"(b) : "memory");
}
// ---- host: the im2col tensor map of an NHWC bf16 image (the driver's encoder through the runtime) -----
// Box: `pixels` pixels x `channels` channels (128-byte rows, 128-byte swizzle); bounding box of the first
// tap: [-pad, dim - 1 - (k1 - 1 - pad)] along W and H, so that the pixels walked are the output pixels
// of a stride-1 'same' convolution and every tap offset in [0, k1) stays within [-pad, dim - 1 + pad].
struct Im2colMap {
  CUtensorMap map;
  const void* ptr = nullptr;
  int get(const void* img, int n, int h, int w, int c, int k1, int pixels, int channels) {
    static PFN_cuTensorMapEncodeIm2col_v12000 encode = nullptr;
    if (img == ptr) return 0;
    if (encode == nullptr) {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
      const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &fn, 12000, cudaEnableDefault, &q);
      if (e != cudaSuccess) return (int)e;
      if (q != cudaDriverEntryPointSuccess || fn == nullptr) return 9002;
      encode = reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(fn);
    }
    const int pad = k1 / 2;
    const cuuint64_t dims[4] = {(cuuint64_t)c, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)n};
    const cuuint64_t strides[3] = {(cuuint64_t)c * 2, (cuuint64_t)w * c * 2, (cuuint64_t)h * w * c * 2};
    const int lower[2] = {-pad, -pad}, upper[2] = {pad - (k1 - 1), pad - (k1 - 1)};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(img), dims, strides, lower, upper,
                              (cuuint32_t)channels, (cuuint32_t)pixels, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return 9200 + (int)r;
    ptr = img;
    return 0;
  }
};
}  // namespace wg
}  // namespace fs
