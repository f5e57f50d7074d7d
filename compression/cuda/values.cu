// Value coding kernels, fused with error feedback (compression/cuda/kernels.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

#include "compression/cuda/device_math.cuh"
#include "compression/cuda/kernels.h"

namespace murmur::compression::cuda::detail {

void Check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "murmur: CUDA error in %s: %s (%s)\n", what, cudaGetErrorName(err),
               cudaGetErrorString(err));
  std::abort();
}

namespace {

template <Mode kMode>
__device__ __forceinline__ float Input(const float* x, const float* r, std::size_t i) {
  if constexpr (kMode == Mode::kPlain) return x[i];
  if constexpr (kMode == Mode::kFused) return __fadd_rn(x[i], r[i]);
  return r[i];
}

__global__ void AccumulateKernel(float* r, const float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    r[i] = __fadd_rn(x[i], r[i]);
}

template <Mode kMode>
__global__ void PackF32Kernel(const float* x, float* r, std::size_t n, float* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = Input<kMode>(x, r, i);
    if constexpr (kMode != Mode::kPlain) r[i] = 0.0f;
  }
}

template <Mode kMode, bool kBf16>
__global__ void PackHalfKernel(const float* x, float* r, std::size_t n, std::uint16_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float a = Input<kMode>(x, r, i);
    std::uint16_t h = kBf16 ? FloatToBf16D(a) : FloatToHalfD(a);
    out[i] = h;
    if constexpr (kMode != Mode::kPlain) r[i] = __fsub_rn(a, kBf16 ? Bf16ToFloatD(h) : HalfToFloatD(h));
  }
}

// One CTA per int8 block. kPer values per thread stay in registers between
// the block maximum and the rounding (blocks up to kPer * blockDim).
template <Mode kMode, int kPer>
__global__ void PackInt8Kernel(const float* x, float* r, std::size_t n, std::uint32_t block,
                               std::uint64_t key, std::int8_t* out, float* scales) {
  __shared__ float warp_max[32];
  for (std::size_t b = blockIdx.x; b * block < n; b += gridDim.x) {
    const std::size_t lo = b * block;
    const std::size_t m = min(static_cast<std::size_t>(block), n - lo);
    float a[kPer];
    float amax = 0.0f;
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      std::size_t j = threadIdx.x + static_cast<std::size_t>(t) * blockDim.x;
      a[t] = j < m ? Input<kMode>(x, r, lo + j) : 0.0f;
      if (j < m) amax = fmaxf(amax, fabsf(a[t]));
    }
    for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) amax = fmaxf(amax, warp_max[w]);
    __syncthreads();  // warp_max is reused by the next block
    const float scale = __fdiv_rn(amax, 127.0f);
    const float inv = amax > 0 ? __fdiv_rn(127.0f, amax) : 0.0f;
    if (threadIdx.x == 0) scales[b] = scale;
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      std::size_t j = threadIdx.x + static_cast<std::size_t>(t) * blockDim.x;
      if (j >= m) continue;
      float q = floorf(__fadd_rn(__fmul_rn(a[t], inv), UniformAtD(key, static_cast<std::uint32_t>(lo + j))));
      q = q > -127.0f ? q : -127.0f;
      q = q < 127.0f ? q : 127.0f;
      out[lo + j] = static_cast<std::int8_t>(static_cast<int>(q));
      if constexpr (kMode != Mode::kPlain) r[lo + j] = __fsub_rn(a[t], __fmul_rn(q, scale));
    }
  }
}

// Blocks larger than the registers hold: the maximum, then the rounding, each
// reading the block (the second time from cache).
template <Mode kMode>
__global__ void PackInt8LargeKernel(const float* x, float* r, std::size_t n, std::uint32_t block,
                                    std::uint64_t key, std::int8_t* out, float* scales) {
  __shared__ float warp_max[32];
  for (std::size_t b = blockIdx.x; b * block < n; b += gridDim.x) {
    const std::size_t lo = b * block;
    const std::size_t m = min(static_cast<std::size_t>(block), n - lo);
    float amax = 0.0f;
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x)
      amax = fmaxf(amax, fabsf(Input<kMode>(x, r, lo + j)));
    for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) amax = fmaxf(amax, warp_max[w]);
    __syncthreads();
    const float scale = __fdiv_rn(amax, 127.0f);
    const float inv = amax > 0 ? __fdiv_rn(127.0f, amax) : 0.0f;
    if (threadIdx.x == 0) scales[b] = scale;
    for (std::size_t j = threadIdx.x; j < m; j += blockDim.x) {
      float a = Input<kMode>(x, r, lo + j);
      float q = floorf(__fadd_rn(__fmul_rn(a, inv), UniformAtD(key, static_cast<std::uint32_t>(lo + j))));
      q = q > -127.0f ? q : -127.0f;
      q = q < 127.0f ? q : 127.0f;
      out[lo + j] = static_cast<std::int8_t>(static_cast<int>(q));
      if constexpr (kMode != Mode::kPlain) r[lo + j] = __fsub_rn(a, __fmul_rn(q, scale));
    }
  }
}

// The fixed-order reductions of compression/values.h: a half-warp per
// 1024-element block, lane l summing elements l, l + 16, ... in order.
template <bool kSquare>
__global__ void BlockSumsKernel(const float* a, std::size_t n, double* blocks) {
  const std::size_t nb = (n + kReduceBlock - 1) / kReduceBlock;
  const unsigned lane = threadIdx.x % 16;
  const std::size_t first = (blockIdx.x * std::size_t{blockDim.x} + threadIdx.x) / 16;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x / 16;
  // Every thread of a warp runs the same number of iterations (the shuffles need them all).
  const std::size_t warp_first = first - (threadIdx.x % 32) / 16;
  for (std::size_t base = warp_first; base < nb; base += stride) {
    const std::size_t b = base + (threadIdx.x % 32) / 16;
    const bool live = b < nb;
    const std::size_t lo = b * kReduceBlock;
    const std::size_t m = live ? min(kReduceBlock, n - lo) : 0;
    float fpart = 0.0f;
    double dpart = 0.0;
    for (std::size_t j = lane; j < m; j += kReduceLanes) {
      float v = a[lo + j];
      if constexpr (kSquare)
        dpart = __dadd_rn(dpart, __dmul_rn(static_cast<double>(v), static_cast<double>(v)));
      else
        fpart = __fadd_rn(fpart, fabsf(v));
    }
    double mine = kSquare ? dpart : static_cast<double>(fpart);
    double total = 0.0;
    const unsigned half = (threadIdx.x % 32) & 16u;
    for (unsigned l = 0; l < 16; ++l)
      total = __dadd_rn(total, __shfl_sync(0xFFFFFFFFu, mine, static_cast<int>(half + l)));
    if (live && lane == 0) blocks[b] = total;
  }
}

__global__ void PairwiseLevelKernel(const double* in, double* out, std::size_t count) {
  const std::size_t half = count / 2;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < (count + 1) / 2;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = i < half ? __dadd_rn(in[2 * i], in[2 * i + 1]) : in[count - 1];
}

// scales[0] = the coding's one scale from the reduced total (or 0 for n == 0).
__global__ void OneScaleKernel(const double* total, std::size_t n, ValueType type, float* scales) {
  if (n == 0) {
    scales[0] = 0.0f;
    return;
  }
  if (type == ValueType::kSign)
    scales[0] = static_cast<float>(__ddiv_rn(*total, static_cast<double>(n)));
  else
    scales[0] = static_cast<float>(sqrt(*total));
}

// max |a| (NaN ignored, as std::max(m, NaN) keeps m), into *bits as the
// order-preserving bits of a non-negative float.
__global__ void AbsMaxKernel(const float* a, std::size_t n, unsigned* bits) {
  float m = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    m = fmaxf(m, fabsf(a[i]));
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
  if (threadIdx.x % 32 == 0) atomicMax(bits, __float_as_uint(m));
}

__global__ void BitsToScaleKernel(const unsigned* bits, float* scales) { scales[0] = __uint_as_float(*bits); }

// Sign bits (1 = negative), 32 per warp ballot. acc is the coded vector.
template <bool kEF>
__global__ void PackSignKernel(const float* acc, float* r, std::size_t n, const float* scales,
                               std::uint8_t* out) {
  const float scale = scales[0];
  const std::size_t words = (n + 31) / 32;
  const std::size_t warps = std::size_t{gridDim.x} * blockDim.x / 32;
  const unsigned lane = threadIdx.x % 32;
  for (std::size_t w = (blockIdx.x * std::size_t{blockDim.x} + threadIdx.x) / 32; w < words; w += warps) {
    const std::size_t i = w * 32 + lane;
    const bool live = i < n;
    const float a = live ? acc[i] : 0.0f;
    const bool neg = live && (__float_as_uint(a) >> 31) != 0;
    const unsigned ballot = __ballot_sync(0xFFFFFFFFu, neg);
    if (lane < 4 && w * 4 + lane < (n + 7) / 8)
      out[w * 4 + lane] = static_cast<std::uint8_t>(ballot >> (8 * lane));
    if (kEF && live) r[i] = __fsub_rn(a, neg ? -scale : scale);
  }
}

// ORs the b-bit field i into a zeroed, 4-byte padded payload.
__device__ __forceinline__ void OrFieldD(std::uint8_t* p, std::size_t i, int b, std::uint32_t v) {
  const std::size_t bit = i * static_cast<std::size_t>(b);
  unsigned* words = reinterpret_cast<unsigned*>(p);
  const std::size_t w = bit / 32;
  const unsigned off = bit % 32;
  if (v == 0) return;
  atomicOr(words + w, v << off);
  if (off + b > 32) atomicOr(words + w + 1, v >> (32 - off));
}

template <bool kEF>
__global__ void PackTernaryKernel(const float* acc, float* r, std::size_t n, const float* scales,
                                  std::uint64_t key, std::uint8_t* out) {
  const float s = scales[0];
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float a = acc[i];
    bool keep = s > 0 && __fmul_rn(UniformAtD(key, static_cast<std::uint32_t>(i)), s) < fabsf(a);
    std::uint32_t c = keep ? (a < 0 ? 2u : 1u) : 0u;
    OrFieldD(out, i, 2, c);
    if (kEF) r[i] = __fsub_rn(a, c == 0 ? 0.0f : (c == 1 ? s : -s));
  }
}

template <bool kEF>
__global__ void PackQsgdKernel(const float* acc, float* r, std::size_t n, const float* scales,
                               std::uint32_t levels, int bits, std::uint64_t key, std::uint8_t* out) {
  const float norm = scales[0];
  const float s = static_cast<float>(levels);
  const float inv = norm > 0 ? __fdiv_rn(s, norm) : 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float a = acc[i];
    float l = floorf(__fadd_rn(__fmul_rn(fabsf(a), inv), UniformAtD(key, static_cast<std::uint32_t>(i))));
    l = s < l ? s : l;
    const bool neg = (__float_as_uint(a) >> 31) != 0;
    std::uint32_t c = (static_cast<std::uint32_t>(l) << 1) | (neg ? 1u : 0u);
    OrFieldD(out, i, bits, c);
    if (kEF) {
      float v = __fdiv_rn(__fmul_rn(norm, l), s);
      r[i] = __fsub_rn(a, (c & 1) ? -v : v);
    }
  }
}

template <Mode kMode>
void LaunchInt8(const float* x, float* r, std::size_t n, std::uint32_t block, std::uint64_t key,
                std::uint8_t* out, float* scales, cudaStream_t stream) {
  const std::size_t nblocks = (n + block - 1) / block;
  const unsigned grid = static_cast<unsigned>(std::min<std::size_t>(nblocks, 1u << 20));
  auto* q = reinterpret_cast<std::int8_t*>(out);
  if (block <= 128) {
    PackInt8Kernel<kMode, 1><<<grid, 128, 0, stream>>>(x, r, n, block, key, q, scales);
  } else if (block <= 1024) {
    const unsigned threads = 256;
    PackInt8Kernel<kMode, 4><<<grid, threads, 0, stream>>>(x, r, n, block, key, q, scales);
  } else {
    PackInt8LargeKernel<kMode><<<grid, 512, 0, stream>>>(x, r, n, block, key, q, scales);
  }
}

// The pairwise total of the block sums of a, into *total (work[0]).
template <bool kSquare>
double* ReduceInto(const float* a, std::size_t n, double* work, cudaStream_t stream) {
  const std::size_t nb = (n + kReduceBlock - 1) / kReduceBlock;
  double* in = work + 1;
  double* out = work + 1 + nb;
  if (nb == 0) {
    Check(cudaMemsetAsync(work, 0, sizeof(double), stream), "memset");
    return work;
  }
  BlockSumsKernel<kSquare><<<Blocks(nb * 16), kThreads, 0, stream>>>(a, n, in);
  std::size_t count = nb;
  while (count > 1) {
    PairwiseLevelKernel<<<Blocks((count + 1) / 2), kThreads, 0, stream>>>(in, out, count);
    std::swap(in, out);
    count = (count + 1) / 2;
  }
  return in;
}

}  // namespace

std::size_t ReduceWorkDoubles(std::size_t n) { return 1 + 2 * ((n + kReduceBlock - 1) / kReduceBlock); }

void Accumulate(float* r, const float* x, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  AccumulateKernel<<<Blocks(n, 4), kThreads, 0, stream>>>(r, x, n);
  Check(cudaGetLastError(), "Accumulate");
}

void PackValuesDevice(const float* x, float* r, std::size_t n, const ValueCoding& coding, std::uint64_t key,
                      Mode mode, std::uint8_t* payload, float* scales, double* work, cudaStream_t stream) {
  const std::size_t bytes = (coding.PayloadBytes(n) + 3) / 4 * 4;
  if (coding.type != ValueType::kF32 && coding.type != ValueType::kF16 && coding.type != ValueType::kBF16 &&
      coding.type != ValueType::kInt8)
    Check(cudaMemsetAsync(payload, 0, bytes, stream), "payload memset");
  if (n == 0) {
    if (coding.NumScales(0) > 0) Check(cudaMemsetAsync(scales, 0, sizeof(float), stream), "scales memset");
    return;
  }
  const unsigned grid = Blocks(n, 4);
  switch (coding.type) {
    case ValueType::kF32: {
      auto* out = reinterpret_cast<float*>(payload);
      if (mode == Mode::kPlain)
        Check(cudaMemcpyAsync(out, x, 4 * n, cudaMemcpyDeviceToDevice, stream), "copy");
      else if (mode == Mode::kFused)
        PackF32Kernel<Mode::kFused><<<grid, kThreads, 0, stream>>>(x, r, n, out);
      else
        PackF32Kernel<Mode::kInPlace><<<grid, kThreads, 0, stream>>>(x, r, n, out);
      break;
    }
    case ValueType::kF16:
    case ValueType::kBF16: {
      auto* out = reinterpret_cast<std::uint16_t*>(payload);
      const bool bf = coding.type == ValueType::kBF16;
      if (mode == Mode::kPlain)
        bf ? PackHalfKernel<Mode::kPlain, true><<<grid, kThreads, 0, stream>>>(x, r, n, out)
           : PackHalfKernel<Mode::kPlain, false><<<grid, kThreads, 0, stream>>>(x, r, n, out);
      else if (mode == Mode::kFused)
        bf ? PackHalfKernel<Mode::kFused, true><<<grid, kThreads, 0, stream>>>(x, r, n, out)
           : PackHalfKernel<Mode::kFused, false><<<grid, kThreads, 0, stream>>>(x, r, n, out);
      else
        bf ? PackHalfKernel<Mode::kInPlace, true><<<grid, kThreads, 0, stream>>>(x, r, n, out)
           : PackHalfKernel<Mode::kInPlace, false><<<grid, kThreads, 0, stream>>>(x, r, n, out);
      break;
    }
    case ValueType::kInt8:
      if (mode == Mode::kPlain)
        LaunchInt8<Mode::kPlain>(x, r, n, coding.block, key, payload, scales, stream);
      else if (mode == Mode::kFused)
        LaunchInt8<Mode::kFused>(x, r, n, coding.block, key, payload, scales, stream);
      else
        LaunchInt8<Mode::kInPlace>(x, r, n, coding.block, key, payload, scales, stream);
      break;
    case ValueType::kSign:
    case ValueType::kTernary:
    case ValueType::kQsgd: {
      // One global scale: the CPU's two passes (r += x, then code r).
      if (mode == Mode::kFused) Accumulate(r, x, n, stream);
      const bool ef = mode != Mode::kPlain;
      const float* acc = ef ? r : x;
      if (coding.type == ValueType::kTernary) {
        auto* bits = reinterpret_cast<unsigned*>(work);
        Check(cudaMemsetAsync(bits, 0, sizeof(unsigned), stream), "memset");
        AbsMaxKernel<<<grid, kThreads, 0, stream>>>(acc, n, bits);
        BitsToScaleKernel<<<1, 1, 0, stream>>>(bits, scales);
        ef ? PackTernaryKernel<true><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, key, payload)
           : PackTernaryKernel<false><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, key, payload);
        break;
      }
      const bool sign = coding.type == ValueType::kSign;
      double* total = sign ? ReduceInto<false>(acc, n, work, stream) : ReduceInto<true>(acc, n, work, stream);
      OneScaleKernel<<<1, 1, 0, stream>>>(total, n, coding.type, scales);
      if (sign)
        ef ? PackSignKernel<true><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, payload)
           : PackSignKernel<false><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, payload);
      else
        ef ? PackQsgdKernel<true><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, coding.levels,
                                                                 coding.BitsPerValue(), key, payload)
           : PackQsgdKernel<false><<<grid, kThreads, 0, stream>>>(acc, r, n, scales, coding.levels,
                                                                  coding.BitsPerValue(), key, payload);
      break;
    }
  }
  Check(cudaGetLastError(), "PackValuesDevice");
}

}  // namespace murmur::compression::cuda::detail
