// core/reduce.h and core/simd.h: the fixed-order sums follow their
// documented order at every kernel level (against a scalar rendering of
// the definition written here) and are close to the exact sums; IntPow is
// exact where the powers are; MURMUR_SIMD names are parsed and refused.
#include "core/reduce.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "core/simd.h"

namespace murmur {
namespace {

// The documented order: 16 lanes by i mod 16, then halves folded.
template <typename Term>
float Definition(std::size_t n, Term term) {
  float lane[16] = {};
  for (std::size_t i = 0; i < n; ++i) lane[i % 16] = term(i, lane[i % 16]);
  for (std::size_t w = 8; w >= 1; w /= 2)
    for (std::size_t l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_CASE("fixed-order sums follow the documented order at every level") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
  Rng rng(5);
  for (std::size_t n : {0u, 1u, 7u, 15u, 16u, 17u, 31u, 100u, 1000u, 4099u}) {
    CAPTURE(n);
    std::vector<float> a(n), b(n);
    for (float& v : a)
      v = static_cast<float>(std::ldexp(rng.Normal(), static_cast<int>(rng.UniformInt(20)) - 10));
    for (float& v : b) v = static_cast<float>(rng.Normal());
    const float sum = Definition(n, [&](std::size_t i, float s) { return s + a[i]; });
    const float dot = Definition(n, [&](std::size_t i, float s) { return std::fma(a[i], b[i], s); });
    const float sq = Definition(n, [&](std::size_t i, float s) { return std::fma(a[i], a[i], s); });
    const float dist = Definition(n, [&](std::size_t i, float s) {
      const float d = a[i] - b[i];
      return std::fma(d, d, s);
    });
    for (int l = 0; l <= static_cast<int>(SupportedSimd()); ++l) {
      CapSimd(static_cast<SimdLevel>(l));
      CAPTURE(SimdName(ActiveSimd()));
      CHECK(SameBits(FixedSum(a), sum));
      CHECK(SameBits(FixedDot(a, b), dot));
      CHECK(SameBits(FixedSquaredNorm(a), sq));
      CHECK(SameBits(FixedSquaredDistance(a, b), dist));
      // The axpy beside the norm: b + 0.75 a, each product rounded, then added.
      std::vector<float> out = b;
      CHECK(SameBits(FixedAxpySquaredNorm(out, a, 0.75f), sq));
      for (std::size_t i = 0; i < n; ++i) {
        const float product = 0.75f * a[i];
        CHECK(SameBits(out[i], b[i] + product));
      }
      // And out = a + w b beside the norm of a: a - 0.5 b as Eigen's a - 0.5 * b rounds it.
      std::vector<float> half(n);
      CHECK(SameBits(FixedSquaredNormPlusScaled(a, b, -0.5f, half), sq));
      for (std::size_t i = 0; i < n; ++i) {
        const float product = 0.5f * b[i];
        CHECK(SameBits(half[i], a[i] - product));
      }
    }
    // And they are sums: within n u sum|terms| of the exact value (u = 2^-24).
    long double exact = 0, abs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      exact += static_cast<long double>(a[i]) * b[i];
      abs += std::fabs(static_cast<long double>(a[i]) * b[i]);
    }
    CHECK(std::fabs(dot - exact) <= static_cast<long double>(n + 4) * 0x1p-24L * abs);
  }
}

TEST_CASE("IntPow is repeated squaring: exact on powers of two, within 2 t 2^-53 of std::pow") {
  // Each squaring doubles the relative error it is given, so x^t carries at
  // most about t roundings' worth: 2 t u relative, u = 2^-53.
  CHECK(IntPow(2.0, 0) == 1.0);
  CHECK(IntPow(2.0, 10) == 1024.0);
  CHECK(IntPow(0.5, 60) == std::ldexp(1.0, -60));
  for (long long t : {1LL, 2LL, 3LL, 17LL, 1000LL, 123457LL})
    for (double x : {0.9, 0.99, 0.999, 1.0001}) {
      CAPTURE(t);
      CAPTURE(x);
      const double want = std::pow(x, static_cast<double>(t));
      CHECK(std::fabs(IntPow(x, t) - want) <= 2.0 * static_cast<double>(t) * 0x1p-53 * want);
    }
}

TEST_CASE("kernel levels: names, the cap and MURMUR_SIMD") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
  for (SimdLevel l : {SimdLevel::kGeneric, SimdLevel::kAvx2, SimdLevel::kAvx512})
    CHECK(ParseSimdLevel(SimdName(l)) == l);
  CHECK_FALSE(ParseSimdLevel("sse2").has_value());
  CapSimd(SimdLevel::kGeneric);
  CHECK(ActiveSimd() == SimdLevel::kGeneric);
  CapSimd(SimdLevel::kAvx512);
  CHECK(ActiveSimd() == SupportedSimd());
  ::setenv("MURMUR_SIMD", "avx1024", 1);
  const Status bad = CapSimdFromEnvironment();
  CHECK(bad.code() == StatusCode::kInvalidArgument);
  CHECK(bad.message().find("MURMUR_SIMD='avx1024'") != std::string::npos);
  CHECK(bad.message().find("generic, avx2 or avx512") != std::string::npos);
  ::setenv("MURMUR_SIMD", "generic", 1);
  CHECK(CapSimdFromEnvironment().ok());
  CHECK(ActiveSimd() == SimdLevel::kGeneric);
  ::unsetenv("MURMUR_SIMD");
}

}  // namespace
}  // namespace murmur
