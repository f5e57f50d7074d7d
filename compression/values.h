// Values of an update in their wire form: fp32, fp16, bf16, int8 with
// per-block scales, sign bits with one scale, ternary codes with one scale,
// or QSGD levels with one norm.
//
// PackValues quantizes a vector and, when given a residual, does the error
// feedback in the same pass: acc = residual + x is quantized and residual
// becomes acc - Q(acc) (Stich et al. 2018; Karimireddy et al. 2019). Stochastic
// rounding draws its uniforms from a counter-based hash keyed by `key` (drawn by
// the caller from the node's Rng), so the result depends only on (key, index).
//
// Thread-safety: PackedValues is an immutable value once built; functions are
// reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/float16.h"

namespace murmur::compression {

enum class ValueType : std::uint8_t {
  kF32 = 0,      // IEEE binary32, 4 bytes
  kF16 = 1,      // IEEE binary16, 2 bytes, round to nearest even
  kBF16 = 2,     // bfloat16, 2 bytes, round to nearest even
  kInt8 = 3,     // int8 in [-127, 127] times a per-block fp32 scale, stochastic rounding
  kSign = 4,     // 1 bit (1 = negative) times one fp32 scale
  kTernary = 5,  // 2 bits (0 -> 0, 1 -> +s, 2 -> -s) times one fp32 scale
  kQsgd = 6,     // sign bit + level l in [0, s] (bit_width(s) bits): norm * l / s
};
inline constexpr std::uint8_t kMaxValueType = 6;

std::string ValueTypeName(ValueType t);

struct ValueCoding {
  ValueType type = ValueType::kF32;
  std::uint32_t block = 0;   // kInt8 only: elements per scale, 1..kMaxInt8Block
  std::uint32_t levels = 0;  // kQsgd only: s, 1..kMaxQsgdLevels

  // Bits one value takes in the payload.
  int BitsPerValue() const;
  // Number of fp32 scales sent with `count` values.
  std::size_t NumScales(std::size_t count) const;
  // Bytes of the packed payload of `count` values (padding bits are zero).
  std::size_t PayloadBytes(std::size_t count) const;
  std::size_t EncodedBytes(std::size_t count) const { return 4 * NumScales(count) + PayloadBytes(count); }

  friend bool operator==(const ValueCoding&, const ValueCoding&) = default;
};
inline constexpr std::uint32_t kMaxInt8Block = 1u << 16;
inline constexpr std::uint32_t kMaxQsgdLevels = (1u << 15) - 1;

// `count` values, as sent.
struct PackedValues {
  ValueCoding coding;
  std::size_t count = 0;
  std::vector<float> scales;
  std::vector<std::uint8_t> payload;

  // Value i decoded. REQUIRES: i < count.
  float Get(std::size_t i) const;
  // out[i] += scale * value i for every i. REQUIRES: out.size() == count.
  void AddTo(std::span<float> out, float scale) const;
  // out[i] = value i for every i (what AddTo adds to zeros, without reading
  // out). REQUIRES: out.size() == count.
  void DecodeTo(std::span<float> out) const;
  // out[indices[i]] += scale * value i. REQUIRES: indices.size() == count, indices within out.
  void ScatterAddTo(std::span<const std::uint32_t> indices, std::span<float> out, float scale) const;

  friend bool operator==(const PackedValues&, const PackedValues&) = default;
};

// Quantizes x. With a non-empty residual (same size as x), quantizes
// acc = residual + x and leaves residual = acc - Q(acc), in one pass for
// fp32/fp16/bf16/int8 and two for the codings with one global scale.
// REQUIRES: residual.empty() || residual.size() == x.size(); coding valid.
PackedValues PackValues(std::span<const float> x, std::span<float> residual, const ValueCoding& coding,
                        std::uint64_t key);

// The reductions behind the codings with one scale (sign's ||a||_1 / d and
// QSGD's ||a||_2), in a fixed order that a GPU computes in parallel with the
// same bits (compression/cuda/): blocks of kReduceBlock elements (the last
// one shorter), each summed in kReduceLanes interleaved lanes (lane l takes
// elements l, l + 16, ... of the block, in that order), the lanes added in
// lane order into the block's total in double, and the block totals added by
// PairwiseSum. AbsSum keeps its lanes in float, SquareSum in double (of the
// exact double squares).
inline constexpr std::size_t kReduceBlock = 1024;
inline constexpr std::size_t kReduceLanes = 16;
double AbsSum(std::span<const float> a);
double SquareSum(std::span<const float> a);
// Pairwise tree over s, level by level: s[i] = s[2i] + s[2i+1], an odd last
// value carried up unchanged; 0 for an empty s. Overwrites s.
double PairwiseSum(std::span<double> s);

// The 16-bit float conversions (core/float16.h), under their earlier names here.
using murmur::Bf16ToFloat;
using murmur::FloatToBf16;
using murmur::FloatToHalf;
using murmur::HalfToFloat;

// The uniform in [0, 1) used for stochastic rounding of element i under key.
inline float UniformAt(std::uint64_t key, std::uint32_t i) {
  auto mix = [](std::uint32_t x) {  // "lowbias32" integer hash (C. Wellons, 2018)
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
  };
  std::uint32_t h = mix(mix(i ^ static_cast<std::uint32_t>(key)) + static_cast<std::uint32_t>(key >> 32));
  return static_cast<float>(h >> 8) * 0x1p-24f;
}

}  // namespace murmur::compression
