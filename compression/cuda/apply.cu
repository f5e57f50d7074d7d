// Decoding and applying updates, gossip's weighted mix, and the read floor
// of the benchmarks (compression/cuda/kernels.h).
#include <cuda_runtime.h>

#include "compression/cuda/device_math.cuh"
#include "compression/cuda/kernels.h"

namespace murmur::compression::cuda::detail {

namespace {

struct Coded {
  ValueType type;
  std::uint32_t block;
  std::uint32_t levels;
  int bits;
  const std::uint8_t* payload;
  const float* scales;
};

Coded MakeCoded(const ValueCoding& c, const std::uint8_t* payload, const float* scales) {
  return {c.type, c.block, c.levels, c.BitsPerValue(), payload, scales};
}

// PackedValues::Get.
__device__ float GetD(const Coded& c, std::size_t i) {
  const std::uint8_t* p = c.payload;
  switch (c.type) {
    case ValueType::kF32: return reinterpret_cast<const float*>(p)[i];
    case ValueType::kF16: return HalfToFloatD(reinterpret_cast<const std::uint16_t*>(p)[i]);
    case ValueType::kBF16: return Bf16ToFloatD(reinterpret_cast<const std::uint16_t*>(p)[i]);
    case ValueType::kInt8:
      return __fmul_rn(static_cast<float>(static_cast<std::int8_t>(p[i])), c.scales[i / c.block]);
    case ValueType::kSign: return (p[i / 8] >> (i % 8)) & 1 ? -c.scales[0] : c.scales[0];
    case ValueType::kTernary: {
      std::uint32_t v = GetFieldD(p, i, 2);
      return v == 0 ? 0.0f : (v == 1 ? c.scales[0] : -c.scales[0]);
    }
    case ValueType::kQsgd: {
      std::uint32_t v = GetFieldD(p, i, c.bits);
      float x = __fdiv_rn(__fmul_rn(c.scales[0], static_cast<float>(v >> 1)), static_cast<float>(c.levels));
      return (v & 1) ? -x : x;
    }
  }
  return 0;
}

}  // namespace

namespace {

__global__ void GatherKernel(const float* a, const std::uint32_t* idx, std::size_t m, float gain,
                             float* out) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < m;
       j += std::size_t{gridDim.x} * blockDim.x)
    out[j] = gain == 1.0f ? a[idx[j]] : __fmul_rn(gain, a[idx[j]]);
}

__global__ void ZeroAtKernel(float* r, const std::uint32_t* idx, std::size_t m) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < m;
       j += std::size_t{gridDim.x} * blockDim.x)
    r[idx[j]] = 0.0f;
}

__global__ void SubtractCodedKernel(float* r, const std::uint32_t* idx, std::size_t m, Coded c) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < m;
       j += std::size_t{gridDim.x} * blockDim.x)
    r[idx[j]] = __fsub_rn(r[idx[j]], GetD(c, j));
}

// Update::AddTo: PackedValues::AddTo for a dense update, ScatterAddTo for a sparse one.
__global__ void AddCodedKernel(float* out, const std::uint32_t* idx, std::size_t m, Coded c, float scale) {
  for (std::size_t j = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; j < m;
       j += std::size_t{gridDim.x} * blockDim.x) {
    float add;
    if (idx == nullptr && c.type == ValueType::kInt8) {
      add = __fmul_rn(__fmul_rn(scale, c.scales[j / c.block]),
                      static_cast<float>(static_cast<std::int8_t>(c.payload[j])));
    } else if (idx == nullptr && c.type == ValueType::kSign) {
      const float s = __fmul_rn(scale, c.scales[0]);
      add = (c.payload[j / 8] >> (j % 8)) & 1 ? -s : s;
    } else {
      add = __fmul_rn(scale, GetD(c, j));
    }
    float* o = out + (idx == nullptr ? j : idx[j]);
    *o = __fadd_rn(*o, add);
  }
}

__global__ void MixKernel(float own, const float* x, const float* const* inputs, const float* weights,
                          int count, float* acc, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float o = __fmul_rn(own, x[i]);
    for (int k = 0; k < count; ++k) o = __fadd_rn(o, __fmul_rn(weights[k], inputs[k][i]));
    acc[i] = o;
  }
}

__global__ void ReadAllKernel(const float4* a, std::size_t n4, const float* tail, std::size_t rest,
                              float* out) {
  float sum = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n4;
       i += std::size_t{gridDim.x} * blockDim.x) {
    float4 v = a[i];
    sum += (v.x + v.y) + (v.z + v.w);
  }
  if (blockIdx.x == 0 && threadIdx.x < rest) sum += tail[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
  if (threadIdx.x % 32 == 0) atomicAdd(out, sum);
}

}  // namespace

void ReadAll(const float* a, std::size_t n, float* out, cudaStream_t stream) {
  Check(cudaMemsetAsync(out, 0, sizeof(float), stream), "memset");
  int device = 0, sms = 0;
  Check(cudaGetDevice(&device), "cudaGetDevice");
  Check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "multiprocessors");
  ReadAllKernel<<<static_cast<unsigned>(8 * sms), 512, 0, stream>>>(reinterpret_cast<const float4*>(a), n / 4,
                                                                    a + n / 4 * 4, n % 4, out);
  Check(cudaGetLastError(), "ReadAll");
}

void Gather(const float* a, const std::uint32_t* idx, std::size_t m, float gain, float* out,
            cudaStream_t stream) {
  if (m == 0) return;
  GatherKernel<<<Blocks(m), kThreads, 0, stream>>>(a, idx, m, gain, out);
  Check(cudaGetLastError(), "Gather");
}

void ZeroAt(float* r, const std::uint32_t* idx, std::size_t m, cudaStream_t stream) {
  if (m == 0) return;
  ZeroAtKernel<<<Blocks(m), kThreads, 0, stream>>>(r, idx, m);
  Check(cudaGetLastError(), "ZeroAt");
}

void SubtractCodedAt(float* r, const std::uint32_t* idx, std::size_t m, const ValueCoding& coding,
                     const std::uint8_t* payload, const float* scales, cudaStream_t stream) {
  if (m == 0) return;
  SubtractCodedKernel<<<Blocks(m), kThreads, 0, stream>>>(r, idx, m, MakeCoded(coding, payload, scales));
  Check(cudaGetLastError(), "SubtractCodedAt");
}

void AddCoded(float* out, const std::uint32_t* idx, std::size_t m, const ValueCoding& coding,
              const std::uint8_t* payload, const float* scales, float scale, cudaStream_t stream) {
  if (m == 0) return;
  AddCodedKernel<<<Blocks(m, 4), kThreads, 0, stream>>>(out, idx, m, MakeCoded(coding, payload, scales),
                                                        scale);
  Check(cudaGetLastError(), "AddCoded");
}

void LaunchMix(float own, const float* x, const float* const* inputs, const float* weights, int count,
               float* acc, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  MixKernel<<<Blocks(n, 4), kThreads, 0, stream>>>(own, x, inputs, weights, count, acc, n);
  Check(cudaGetLastError(), "MixDense");
}

}  // namespace murmur::compression::cuda::detail
