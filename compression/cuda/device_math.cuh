// Device versions of the CPU's bit-exact helpers (compression/values.h,
// compression/select.h, core/float16.cc): the same integer and IEEE
// operations, each float operation rounded on its own (no contraction into
// fused multiply-adds), so that every kernel computes the CPU's bits. Also
// the grid size the module's element-wise kernels launch with.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace murmur::compression::cuda::detail {

// Threads per block of the element-wise kernels, and the blocks for n
// elements at per_thread each (grid-stride loops cover the rest).
constexpr int kThreads = 256;
inline unsigned Blocks(std::size_t n, int per_thread = 1) {
  std::size_t b = (n + static_cast<std::size_t>(kThreads) * per_thread - 1) /
                  (static_cast<std::size_t>(kThreads) * per_thread);
  return static_cast<unsigned>(std::clamp<std::size_t>(b, 1, 65535u * 16));
}

__device__ __forceinline__ std::uint32_t AbsKeyD(float f) { return __float_as_uint(f) & 0x7FFFFFFFu; }

__device__ __forceinline__ std::uint32_t Mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// UniformAt of compression/values.h.
__device__ __forceinline__ float UniformAtD(std::uint64_t key, std::uint32_t i) {
  std::uint32_t h = Mix32(Mix32(i ^ static_cast<std::uint32_t>(key)) + static_cast<std::uint32_t>(key >> 32));
  return __fmul_rn(__uint2float_rn(h >> 8), 0x1p-24f);
}

// core/float16.cc's conversions.
__device__ __forceinline__ std::uint16_t FloatToHalfD(float f) {
  std::uint32_t x = __float_as_uint(f);
  std::uint32_t sign = (x >> 16) & 0x8000;
  x &= 0x7FFFFFFF;
  if (x >= 0x7F800000) return static_cast<std::uint16_t>(sign | 0x7C00 | (x > 0x7F800000 ? 0x200 : 0));
  if (x >= 0x477FF000) return static_cast<std::uint16_t>(sign | 0x7C00);
  if (x < 0x38800000) {
    float t = __fadd_rn(__uint_as_float(x), 0.5f);
    return static_cast<std::uint16_t>(sign | (__float_as_uint(t) - 0x3F000000));
  }
  std::uint32_t odd = (x >> 13) & 1;
  x += 0xC8000FFF + odd;
  return static_cast<std::uint16_t>(sign | (x >> 13));
}

__device__ __forceinline__ float HalfToFloatD(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0) return __uint_as_float(sign | __float_as_uint(__fmul_rn(__uint2float_rn(m), 0x1p-24f)));
  if (e == 31) return __uint_as_float(sign | 0x7F800000 | (m << 13));
  return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
}

__device__ __forceinline__ std::uint16_t FloatToBf16D(float f) {
  std::uint32_t x = __float_as_uint(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

__device__ __forceinline__ float Bf16ToFloatD(std::uint16_t b) {
  return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
}

// The b-bit field i (LSB first) of a payload, b <= 16.
__device__ __forceinline__ std::uint32_t GetFieldD(const std::uint8_t* p, std::size_t i, int b) {
  std::size_t bit = i * static_cast<std::size_t>(b);
  std::uint32_t w = 0;
  std::size_t byte = bit / 8, nbytes = (bit % 8 + b + 7) / 8;
  for (std::size_t k = 0; k < nbytes; ++k) w |= static_cast<std::uint32_t>(p[byte + k]) << (8 * k);
  return (w >> (bit % 8)) & ((1u << b) - 1);
}

}  // namespace murmur::compression::cuda::detail
