// dsm_comm: the FlashFuser communication primitives on Hopper distributed shared memory.
// Push-style: a block writes into its peers' SMEM with st.shared::cluster and a cluster barrier
// (arrive.release / wait.acquire) publishes the data; the receiver then reads only its own SMEM.
// Rules kept here (reference/hopper.md): a cluster barrier before the first remote access and
// before exit; no float reduction into remote SMEM exists, so fp32 partials are pushed and added
// by the receiver; DSM stores coalesced and 32-byte aligned.
#pragma once
#include "tile.cuh"

namespace fs {

// ---- cluster basics --------------------------------------------------------------------------------
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory"); }
// relaxed: no release of this thread's earlier memory operations (where they are ordered by other means: the
// mbarrier-init fence at entry, or an acquire wait on everything addressed to the block before the exit arrive)
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() { cluster_arrive(); cluster_wait(); }

// Address of `p` (own SMEM) as seen in the SMEM of cluster block `rank`.
__device__ __forceinline__ uint32_t map_peer(const void* p, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(smem_u32(p)), "r"(rank));
  return out;
}
__device__ __forceinline__ void st_peer_f32x2(uint32_t addr, float a, float b) {
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void st_peer_u32x4(uint32_t addr, uint4 v) {
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w) : "memory");
}
__device__ __forceinline__ float4 ld_peer_f32x4(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
  return v;
}

// ---- dsm_all_exchange (GEMM0 phase) -----------------------------------------------------------------
// Push this block's fp32 partial C tile (a warp tile of accumulators at (wrow, wcol) of a
// ROWS x LD slot) into slot `slot` of peer `peer`'s receive area `xbuf`. The caller publishes
// with cluster_sync() and then combines (add partials, or mul silu(gate) * up) from its own xbuf.
template <class Acc>
__device__ __forceinline__ void dsm_all_exchange_push(Acc& acc, float* xbuf, int ld, int slot_elems, int slot,
                                                      uint32_t peer, int wrow, int wcol) {
  const uint32_t base = map_peer(xbuf + slot * slot_elems, peer);
  acc.for_pairs([&](int r, int c, float& a, float& b) {
    st_peer_f32x2(base + 4u * ((wrow + r) * ld + wcol + c), a, b);
  });
}

// ---- dsm_shuffle (GEMM1 phase) ----------------------------------------------------------------------
// Ring step: copy this block's current C' slice (bf16, BYTES contiguous) into the next buffer of
// the ring predecessor `pred`. 16-byte coalesced DSM stores; published by the caller's cluster_sync().
template <int BYTES, int THREADS>
__device__ __forceinline__ void dsm_shuffle_push(const void* cur, const void* peer_next_local, uint32_t pred) {
  static_assert(BYTES % 16 == 0, "shuffle slices are 16-byte multiples");
  const uint32_t dst = map_peer(peer_next_local, pred);
  const uint4* src = reinterpret_cast<const uint4*>(cur);
#pragma unroll 4
  for (int i = threadIdx.x; i < BYTES / 16; i += THREADS) st_peer_u32x4(dst + 16u * i, src[i]);
}

// ---- dsm_reduce_scatter (Store phase) ---------------------------------------------------------------
// The NPEERS blocks sharing an L-range each hold an fp32 E partial (ROWS x LD in SMEM); block
// `me` owns columns [me*SLICE, (me+1)*SLICE). Sums the owned slice over all peers (remote reads
// of 16-byte vectors after a cluster barrier) and hands each float4 to `out(row, col, v)`.
template <int ROWS, int SLICE, int NPEERS, int THREADS, class Out>
__device__ __forceinline__ void dsm_reduce_scatter(const float* eacc, int ld, const uint32_t (&peers)[NPEERS], int me,
                                                   Out&& out) {
  constexpr int V = SLICE / 4;
  for (int i = threadIdx.x; i < ROWS * V; i += THREADS) {
    const int row = i / V, col = me * SLICE + (i % V) * 4;
    const float* p = eacc + row * ld + col;
    float4 s = *reinterpret_cast<const float4*>(p);
#pragma unroll
    for (int k = 0; k < NPEERS; ++k) {
      if (k == me) continue;
      const float4 v = ld_peer_f32x4(map_peer(p, peers[k]));
      s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w;
    }
    out(row, col, s);
  }
}

// ---- inter_cluster_reduce (Store phase, across clusters) --------------------------------------------
// fp32 atomic add of a partial E into a global workspace; the last of `contributors` clusters
// (per tile, counted with a global ticket) converts the tile to bf16 and re-zeroes the workspace
// and the ticket, so the next launch starts clean.
__device__ __forceinline__ void red_add_f32x4(float* g, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(g), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}
__device__ __forceinline__ bool inter_cluster_ticket(int* ticket, int contributors) {
  __shared__ int last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1) == contributors - 1;
  __syncthreads();
  if (last) __threadfence();
  return last;
}

}  // namespace fs
