// Selection kernels: the key histogram, and exact and approximate top-k and
// threshold selection on device vectors (compression/cuda/select.h), each
// choosing exactly the indices compression/select.h chooses on the CPU.
#include "compression/cuda/select.h"

#include <cuda_runtime.h>

#include <thrust/iterator/counting_iterator.h>
#include <algorithm>
#include <bit>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include "compression/cuda/device_math.cuh"
#include "compression/cuda/kernels.h"
#include "compression/select.h"

namespace murmur::compression::cuda::detail {

namespace {

constexpr int kBucketShift = 20;  // as compression/select.cc: 11 bits
constexpr unsigned kBuckets = 1u << (31 - kBucketShift);
constexpr int kSubHists = 4;  // per CTA, so that warps collide less on one counter
constexpr int kHistThreads = 256;

int Multiprocessors() {
  static const int sms = [] {
    int device = 0, v = 0;
    Check(cudaGetDevice(&device), "cudaGetDevice");
    Check(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
    return v;
  }();
  return sms;
}

template <bool kAcc>
__device__ __forceinline__ float Load(float* r, const float* x, std::size_t i) {
  if constexpr (kAcc) {
    float a = __fadd_rn(x[i], r[i]);
    r[i] = a;
    return a;
  } else {
    return x[i];
  }
}

template <bool kAcc>
__global__ void __launch_bounds__(kHistThreads)
    HistogramKernel(float* r, const float* x, std::size_t n, std::uint32_t* hist) {
  __shared__ std::uint32_t sub[kSubHists][kBuckets];
  for (unsigned b = threadIdx.x; b < kSubHists * kBuckets; b += blockDim.x) (&sub[0][0])[b] = 0;
  __syncthreads();
  std::uint32_t* h = sub[(threadIdx.x / 32) % kSubHists];
  const bool vec = (reinterpret_cast<std::uintptr_t>(x) % 16 == 0) &&
                   (!kAcc || reinterpret_cast<std::uintptr_t>(r) % 16 == 0);
  const std::size_t tid = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t done = 0;
  if (vec) {
    const std::size_t n4 = n / 4;
    for (std::size_t v = tid; v < n4; v += stride) {
      float4 a = reinterpret_cast<const float4*>(x)[v];
      if constexpr (kAcc) {
        float4 e = reinterpret_cast<const float4*>(r)[v];
        a.x = __fadd_rn(a.x, e.x);
        a.y = __fadd_rn(a.y, e.y);
        a.z = __fadd_rn(a.z, e.z);
        a.w = __fadd_rn(a.w, e.w);
        reinterpret_cast<float4*>(r)[v] = a;
      }
      atomicAdd(&h[AbsKeyD(a.x) >> kBucketShift], 1u);
      atomicAdd(&h[AbsKeyD(a.y) >> kBucketShift], 1u);
      atomicAdd(&h[AbsKeyD(a.z) >> kBucketShift], 1u);
      atomicAdd(&h[AbsKeyD(a.w) >> kBucketShift], 1u);
    }
    done = n4 * 4;
  }
  for (std::size_t i = done + tid; i < n; i += stride)
    atomicAdd(&h[AbsKeyD(Load<kAcc>(r, x, i)) >> kBucketShift], 1u);
  __syncthreads();
  for (unsigned b = threadIdx.x; b < kBuckets; b += blockDim.x) {
    std::uint32_t c = 0;
    for (int s = 0; s < kSubHists; ++s) c += sub[s][b];
    if (c != 0) atomicAdd(&hist[b], c);
  }
}

struct KeyAtLeast {
  const float* a;
  std::uint32_t min_key;
  __device__ bool operator()(const std::uint32_t& i) const { return AbsKeyD(a[i]) >= min_key; }
};

__global__ void SampleKeysKernel(const float* r, const float* x, const std::uint32_t* pos, std::size_t chunks,
                                 std::uint32_t* out) {
  for (std::size_t s = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; s < chunks * 16;
       s += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t i = pos[s / 16] + s % 16;
    out[s] = AbsKeyD(r != nullptr ? __fadd_rn(r[i], x[i]) : x[i]);
  }
}

__global__ void KeysAtKernel(const float* a, const std::uint32_t* idx, std::size_t m, std::uint32_t* keys) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < m;
       j += std::size_t{gridDim.x} * blockDim.x)
    keys[j] = AbsKeyD(a[idx[j]]);
}

__global__ void IotaKernel(std::uint32_t* out, std::size_t n) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < n;
       j += std::size_t{gridDim.x} * blockDim.x)
    out[j] = static_cast<std::uint32_t>(j);
}

unsigned GridFor(std::size_t m) {
  return static_cast<unsigned>(std::clamp<std::size_t>((m + 255) / 256, 1, 65535u * 16));
}

}  // namespace

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

Scratch::~Scratch() {
  // At process exit the CUDA runtime may be gone first: errors are ignored.
  for (void* p : device_) cudaFree(p);
  for (void* p : host_) cudaFreeHost(p);
}

void* Scratch::Device(Slot slot, std::size_t bytes) {
  const auto s = static_cast<std::size_t>(slot);
  if (device_cap_[s] < bytes) {
    if (device_[s] != nullptr) Check(cudaFree(device_[s]), "cudaFree");
    device_[s] = nullptr;
    const std::size_t cap = std::max<std::size_t>(bytes + bytes / 4, 256);
    Check(cudaMalloc(&device_[s], cap), "cudaMalloc (scratch)");
    device_cap_[s] = cap;
  }
  return device_[s];
}

void* Scratch::Host(Slot slot, std::size_t bytes) {
  const auto s = static_cast<std::size_t>(slot);
  if (host_cap_[s] < bytes) {
    if (host_[s] != nullptr) Check(cudaFreeHost(host_[s]), "cudaFreeHost");
    host_[s] = nullptr;
    const std::size_t cap = std::max<std::size_t>(bytes + bytes / 4, 256);
    Check(cudaMallocHost(&host_[s], cap), "cudaMallocHost (scratch)");
    host_cap_[s] = cap;
  }
  return host_[s];
}

void KeyHistogram(float* r, const float* x, std::size_t n, std::uint32_t* hist, cudaStream_t stream) {
  Check(cudaMemsetAsync(hist, 0, kBuckets * sizeof(std::uint32_t), stream), "memset");
  if (n == 0) return;
  const unsigned grid = static_cast<unsigned>(std::clamp<std::size_t>(
      (n + 4 * kHistThreads - 1) / (4 * kHistThreads), 1, static_cast<std::size_t>(4 * Multiprocessors())));
  if (x != nullptr)
    HistogramKernel<true><<<grid, kHistThreads, 0, stream>>>(r, x, n, hist);
  else
    HistogramKernel<false><<<grid, kHistThreads, 0, stream>>>(nullptr, r, n, hist);
  Check(cudaGetLastError(), "KeyHistogram");
}

std::size_t SelectAtLeast(const float* a, std::size_t n, std::uint32_t min_key, std::uint32_t* out,
                          cudaStream_t stream) {
  Scratch& s = ThreadScratch();
  auto* count = static_cast<std::int64_t*>(s.Device(Slot::kCount, sizeof(std::int64_t)));
  std::size_t temp_bytes = 0;
  thrust::counting_iterator<std::uint32_t> first(0);
  Check(cub::DeviceSelect::If(nullptr, temp_bytes, first, out, count, static_cast<std::int64_t>(n),
                              KeyAtLeast{a, min_key}, stream),
        "DeviceSelect::If (size)");
  void* temp = s.Device(Slot::kCubTemp, temp_bytes);
  Check(cub::DeviceSelect::If(temp, temp_bytes, first, out, count, static_cast<std::int64_t>(n),
                              KeyAtLeast{a, min_key}, stream),
        "DeviceSelect::If");
  auto* host = static_cast<std::int64_t*>(s.Host(Slot::kCount, sizeof(std::int64_t)));
  Check(cudaMemcpyAsync(host, count, sizeof(std::int64_t), cudaMemcpyDeviceToHost, stream), "copy count");
  Check(cudaStreamSynchronize(stream), "select");
  return static_cast<std::size_t>(*host);
}

// FinishTopK of compression/select.cc: the k largest keys among the c
// candidates (in index order) with ties to the lowest index, ascending, by a
// stable descending sort of (key, index) and an ascending sort of the first k.
void FinishTopK(const float* a, std::size_t n, const std::uint32_t* cand, std::size_t c, std::size_t k,
                std::uint32_t* out, cudaStream_t stream) {
  if (c <= k) {
    if (c > 0) Check(cudaMemcpyAsync(out, cand, 4 * c, cudaMemcpyDeviceToDevice, stream), "copy");
    return;
  }
  Scratch& s = ThreadScratch();
  auto* keys = static_cast<std::uint32_t*>(s.Device(Slot::kKeys, 4 * c));
  auto* keys_sorted = static_cast<std::uint32_t*>(s.Device(Slot::kKeysSorted, 4 * c));
  auto* idx_sorted = static_cast<std::uint32_t*>(s.Device(Slot::kIndexSorted, 4 * c));
  KeysAtKernel<<<GridFor(c), 256, 0, stream>>>(a, cand, c, keys);
  std::size_t t1 = 0, t2 = 0;
  Check(cub::DeviceRadixSort::SortPairsDescending(nullptr, t1, keys, keys_sorted, cand, idx_sorted,
                                                  static_cast<std::int64_t>(c), 0, 31, stream),
        "SortPairsDescending (size)");
  const int index_bits = std::max(1, static_cast<int>(std::bit_width(n - 1)));
  Check(cub::DeviceRadixSort::SortKeys(nullptr, t2, idx_sorted, out, static_cast<std::int64_t>(k), 0,
                                       index_bits, stream),
        "SortKeys (size)");
  void* temp = s.Device(Slot::kCubTemp, std::max(t1, t2));
  Check(cub::DeviceRadixSort::SortPairsDescending(temp, t1, keys, keys_sorted, cand, idx_sorted,
                                                  static_cast<std::int64_t>(c), 0, 31, stream),
        "SortPairsDescending");
  Check(cub::DeviceRadixSort::SortKeys(temp, t2, idx_sorted, out, static_cast<std::int64_t>(k), 0, index_bits,
                                       stream),
        "SortKeys");
}

void TopKExact(float* r, const float* x, std::size_t n, std::size_t k, std::uint32_t* out,
               cudaStream_t stream) {
  const float* a = r;  // after the fused pass, r holds the accumulated values
  Scratch& s = ThreadScratch();
  auto* hist = static_cast<std::uint32_t*>(s.Device(Slot::kHist, kBuckets * 4));
  if (n > 0) KeyHistogram(r, x, n, hist, stream);
  if (k == 0) {
    Check(cudaStreamSynchronize(stream), "histogram");
    return;
  }
  if (k >= n) {
    IotaKernel<<<GridFor(n), 256, 0, stream>>>(out, n);
    Check(cudaStreamSynchronize(stream), "iota");
    return;
  }
  auto* host = static_cast<std::uint32_t*>(s.Host(Slot::kHist, kBuckets * 4));
  Check(cudaMemcpyAsync(host, hist, kBuckets * 4, cudaMemcpyDeviceToHost, stream), "copy histogram");
  Check(cudaStreamSynchronize(stream), "histogram");
  std::size_t above = 0, b = kBuckets;
  while (b > 0 && above + host[b - 1] < k) above += host[--b];
  auto* cand = static_cast<std::uint32_t*>(s.Device(Slot::kCandidates, 4 * (above + host[b - 1])));
  const std::size_t c = SelectAtLeast(a, n, static_cast<std::uint32_t>(b - 1) << kBucketShift, cand, stream);
  FinishTopK(a, n, cand, c, k, out, stream);
  Check(cudaStreamSynchronize(stream), "top-k");
}

std::size_t TopKApprox(float* r, const float* x, std::size_t n, std::size_t k, Rng& rng, std::uint32_t* out,
                       cudaStream_t stream) {
  constexpr std::size_t kChunk = 16;
  if (k == 0 || k >= n) {
    TopKExact(r, x, n, k, out, stream);
    return std::min(k, n);
  }
  const std::size_t want = std::min<std::size_t>(std::max<std::size_t>(256 * (n / k + 1), 4096), n);
  const std::size_t chunks = want / kChunk;
  if (chunks == 0 || 2 * chunks * kChunk >= n) {
    TopKExact(r, x, n, k, out, stream);
    return k;
  }
  Scratch& s = ThreadScratch();
  auto* pos_host = static_cast<std::uint32_t*>(s.Host(Slot::kPositions, 4 * chunks));
  for (std::size_t c = 0; c < chunks; ++c)
    pos_host[c] = static_cast<std::uint32_t>(rng.UniformInt(n - kChunk + 1));
  auto* pos = static_cast<std::uint32_t*>(s.Device(Slot::kPositions, 4 * chunks));
  Check(cudaMemcpyAsync(pos, pos_host, 4 * chunks, cudaMemcpyHostToDevice, stream), "copy positions");
  const std::size_t m = chunks * kChunk;
  auto* sample = static_cast<std::uint32_t*>(s.Device(Slot::kKeys, 4 * m));
  auto* sorted = static_cast<std::uint32_t*>(s.Device(Slot::kKeysSorted, 4 * m));
  // The sample is of x + r before the accumulation (as the CPU's).
  SampleKeysKernel<<<GridFor(m), 256, 0, stream>>>(x != nullptr ? r : nullptr, x != nullptr ? x : r, pos,
                                                   chunks, sample);
  std::size_t t = 0;
  Check(cub::DeviceRadixSort::SortKeysDescending(nullptr, t, sample, sorted, static_cast<std::int64_t>(m), 0,
                                                 31, stream),
        "SortKeysDescending (size)");
  Check(cub::DeviceRadixSort::SortKeysDescending(s.Device(Slot::kCubTemp, t), t, sample, sorted,
                                                 static_cast<std::int64_t>(m), 0, 31, stream),
        "SortKeysDescending");
  if (x != nullptr) Accumulate(r, x, n, stream);  // the CPU fuses this into its first collecting pass
  const float* a = r;
  const std::size_t lo = (8 * k + 9) / 10, hi = (13 * k) / 10;
  std::size_t q = m * k / n;
  auto* cand = static_cast<std::uint32_t*>(s.Device(Slot::kCandidates, 4 * n));
  auto* key_host = static_cast<std::uint32_t*>(s.Host(Slot::kCount, 4));
  for (int attempt = 0; attempt <= kApproxRetries; ++attempt) {
    q = std::min(q, m - 1);
    Check(cudaMemcpyAsync(key_host, sorted + q, 4, cudaMemcpyDeviceToHost, stream), "copy threshold");
    Check(cudaStreamSynchronize(stream), "sample");
    const std::uint32_t threshold = std::max<std::uint32_t>(*key_host, 1);
    const std::size_t c = SelectAtLeast(a, n, threshold, cand, stream);
    if (c > hi) {
      FinishTopK(a, n, cand, c, k, out, stream);
      Check(cudaStreamSynchronize(stream), "approximate top-k");
      return k;
    }
    if (c >= lo) {
      Check(cudaMemcpyAsync(out, cand, 4 * c, cudaMemcpyDeviceToDevice, stream), "copy");
      Check(cudaStreamSynchronize(stream), "approximate top-k");
      return c;
    }
    q = 2 * q + kChunk;
  }
  TopKExact(r, nullptr, n, k, out, stream);
  return k;
}

std::size_t Threshold(float* r, const float* x, std::size_t n, float tau, std::uint32_t* out,
                      cudaStream_t stream) {
  if (x != nullptr) Accumulate(r, x, n, stream);
  return SelectAtLeast(r, n, AbsKey(tau), out, stream);
}

}  // namespace murmur::compression::cuda::detail
