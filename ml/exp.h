// The exponential of a float with one result on every machine.
//
// The C library's expf and Eigen's vectorized exp are each accurate to
// about an ulp, but which float they return depends on the library, its
// code path for the CPU (glibc picks an FMA variant at run time) and, for
// Eigen, on whether an element falls in a vector or in the scalar tail. Exp
// is built from IEEE 754 basic operations and fused multiply-adds alone:
//
//   n = round-to-nearest-even(x log2 e);  r = x - n ln2 (two steps, Cody and
//   Waite's split of ln2: 0.693359375 and -2.12194440e-4);
//   e^r = 1 + r + r^2 P(r), P of degree 5 (Cephes' expf coefficients),
//   each step of Horner's rule a fused multiply-add;
//   e^x = e^r 2^n, the power applied in two exact halves so that results
//   below the normal range round once.
//
// so any vector width, CPU and architecture gives the same bits. Relative
// error below 2^-22 over the whole range (tests/ml/exp_test.cc checks it
// against std::exp in double); +inf above 88.72, +0 below -103.98, NaN for
// NaN.
//
// Thread-safety: a pure function.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace murmur::ml {

inline float Exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kMax = 88.7228394f, kMin = -103.972076f;
  if (!(x == x)) return x;  // NaN
  if (x > kMax) return INFINITY;
  if (x < kMin) return 0.0f;
  const float n = (std::fma(x, kLog2e, kRound)) - kRound;
  float r = std::fma(-n, kLn2Hi, x);
  r = std::fma(-n, kLn2Lo, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float e = std::fma(p, r * r, r) + 1.0f;
  // 2^n as two factors 2^h and 2^(n - h), each a normal float for n in [-150, 128].
  const auto k = static_cast<std::int32_t>(n);
  const std::int32_t h = k / 2;
  const float s1 = std::bit_cast<float>(static_cast<std::uint32_t>(h + 127) << 23);
  const float s2 = std::bit_cast<float>(static_cast<std::uint32_t>(k - h + 127) << 23);
  return e * s1 * s2;
}

}  // namespace murmur::ml
