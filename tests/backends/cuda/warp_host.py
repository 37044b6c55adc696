"""Kernel text run on the host: a block of GR_BLOCK threads (GR_BLOCK / 32 warps), one std::thread
each, the warp's shuffles exchanged through a buffer between two barriers (so every lane must
reach each shuffle and vote, as on the GPU), ``__syncthreads`` a barrier of the block; a sum
monoid of doubles (``gr_atomic_add`` under a lock) and an ``indptr`` that counts its reads
(``t_reads``). Compiled with ``g++ -std=c++20 -pthread`` by the tests of the kernels' warp walks."""

#: the C++ head of such a host program: the CUDA names the kernel text uses, emulated
WARP_HOST = r"""
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#include <algorithm>
#include <atomic>
using std::max; using std::min;
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define GR_FULL 0xffffffffu
#define GR_BLOCK 64
typedef double gr_msg_t;
struct gr_dim { unsigned x; };
thread_local gr_dim threadIdx, blockIdx;
struct gr_warp { std::barrier<> bar{32}; unsigned long long buf[32]; };
thread_local gr_warp* t_warp;
thread_local int t_lane;
std::barrier<>* t_block;
std::mutex t_mu;
void __syncthreads() { t_block->arrive_and_wait(); }
template <class T> T gr_xchg(T v, int src, bool own) {
  unsigned long long raw = 0;
  memcpy(&raw, &v, sizeof(T));
  t_warp->buf[t_lane] = raw;
  t_warp->bar.arrive_and_wait();
  T out = v;
  if (!own) memcpy(&out, &t_warp->buf[src], sizeof(T));
  t_warp->bar.arrive_and_wait();
  return out;
}
template <class T> T __shfl_sync(unsigned, T v, int src) { return gr_xchg(v, src & 31, false); }
template <class T> T __shfl_up_sync(unsigned, T v, int o) { return gr_xchg(v, t_lane - o, t_lane - o < 0); }
template <class T> T __shfl_down_sync(unsigned, T v, int o) { return gr_xchg(v, t_lane + o, t_lane + o > 31); }
inline bool __any_sync(unsigned, bool p) {
  bool any = false;
  for (int k = 0; k < 32; ++k) any |= gr_xchg((int)p, k, false) != 0;
  return any;
}
// n elements of T from f (a vector of n + 1)
template <class T> std::vector<T> take(FILE* f, long long n) {
  std::vector<T> v(n + 1);
  if (fread(v.data(), sizeof(T), n, f) != (size_t)n) exit(2);
  return v;
}
// one block's threads at a time, block after block
template <class F> void gr_run_blocks(long long blocks, F body) {
  for (long long b = 0; b < blocks; ++b) {
    std::barrier<> block(GR_BLOCK);
    t_block = &block;
    gr_warp warps[GR_BLOCK / 32];
    std::vector<std::thread> ts;
    for (int t = 0; t < GR_BLOCK; ++t)
      ts.emplace_back([&, t] {
        threadIdx.x = t; blockIdx.x = (unsigned)b; t_lane = t & 31; t_warp = &warps[t / 32];
        body();
      });
    for (auto& t : ts) t.join();
  }
}
inline bool gr_active(const unsigned* f, long long v) { return f == 0 || ((f[v >> 5] >> (v & 31)) & 1u); }
inline double gr_identity_msg() { return 0.0; }
inline double gr_combine_msg(double a, double b) { return a + b; }
inline double gr_warp_reduce_msg(double x) {
  for (int o = 16; o > 0; o >>= 1) x = gr_combine_msg(x, __shfl_down_sync(GR_FULL, x, o));
  return x;
}
inline void gr_atomic_add(double* p, double x) { std::lock_guard<std::mutex> g(t_mu); *p += x; }
std::atomic<long long> t_reads{0};
struct gr_counted {
  const long long* p;
  long long operator[](long long i) const { t_reads.fetch_add(1, std::memory_order_relaxed); return p[i]; }
};
"""
