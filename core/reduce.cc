#include "core/reduce.h"

#include <cmath>
#include <cstddef>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/check.h"
#include "core/simd.h"

namespace murmur {
namespace {

constexpr std::size_t kLanes = 16;

// Runs term(i) into the lanes in the documented order and combines them.
template <typename T = float, typename Term>
[[gnu::always_inline]] inline T LaneSum(std::size_t n, Term term) {
  T lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (std::size_t l = 0; l < kLanes; ++l) lane[l] = term(i + l, lane[l]);
  for (std::size_t l = 0; i + l < n; ++l) lane[l] = term(i + l, lane[l]);
  for (std::size_t width = kLanes / 2; width >= 1; width /= 2)
    for (std::size_t l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

// The four sums, as one kernel per level over the same source, so that
// their fused multiply-adds are instructions rather than calls in a
// portable build too.
enum class Kind { kSum, kDot, kSquaredNorm, kSquaredDistance };

template <Kind K>
[[gnu::always_inline]] inline float Run(const float* a, const float* b, std::size_t n) {
  if constexpr (K == Kind::kSum) {
    return LaneSum(n, [&](std::size_t i, float acc) { return acc + a[i]; });
  } else if constexpr (K == Kind::kDot) {
    return LaneSum(n, [&](std::size_t i, float acc) { return std::fma(a[i], b[i], acc); });
  } else if constexpr (K == Kind::kSquaredNorm) {
    return LaneSum(n, [&](std::size_t i, float acc) { return std::fma(a[i], a[i], acc); });
  } else {
    return LaneSum(n, [&](std::size_t i, float acc) {
      const float d = a[i] - b[i];
      return std::fma(d, d, acc);
    });
  }
}

template <Kind K>
float RunGeneric(const float* a, const float* b, std::size_t n) {
  return Run<K>(a, b, n);
}
#if defined(__x86_64__)
template <Kind K>
MURMUR_TARGET_AVX2 float RunAvx2(const float* a, const float* b, std::size_t n) {
  return Run<K>(a, b, n);
}
template <Kind K>
MURMUR_TARGET_AVX512 float RunAvx512(const float* a, const float* b, std::size_t n) {
  return Run<K>(a, b, n);
}
#endif

template <Kind K>
float Dispatch(const float* a, const float* b, std::size_t n) {
  switch (ActiveSimd()) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: return RunAvx512<K>(a, b, n);
    case SimdLevel::kAvx2: return RunAvx2<K>(a, b, n);
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  return RunGeneric<K>(a, b, n);
}

}  // namespace

float FixedSum(std::span<const float> x) { return Dispatch<Kind::kSum>(x.data(), nullptr, x.size()); }

float FixedDot(std::span<const float> a, std::span<const float> b) {
  MURMUR_CHECK(a.size() == b.size());
  return Dispatch<Kind::kDot>(a.data(), b.data(), a.size());
}

float FixedSquaredNorm(std::span<const float> x) {
  return Dispatch<Kind::kSquaredNorm>(x.data(), nullptr, x.size());
}

float FixedSquaredDistance(std::span<const float> a, std::span<const float> b) {
  MURMUR_CHECK(a.size() == b.size());
  return Dispatch<Kind::kSquaredDistance>(a.data(), b.data(), a.size());
}

namespace {

// out = base + w v (each product rounded, then added) and the fixed-order
// squared norm of v (kOfBase false) or of base (kOfBase true). base may be
// out itself (an axpy); v overlaps neither.
template <bool kOfBase>
[[gnu::always_inline]] inline float AxpyNormTail(float* out, const float* base, const float* v, std::size_t i,
                                                 std::size_t n, float w, float* lane) {
  for (std::size_t l = 0; i + l < n; ++l) {
    const float measured = kOfBase ? base[i + l] : v[i + l];
    out[i + l] = base[i + l] + w * v[i + l];
    lane[l] = std::fma(measured, measured, lane[l]);
  }
  for (std::size_t width = kLanes / 2; width >= 1; width /= 2)
    for (std::size_t l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

template <bool kOfBase>
float AxpyNormGeneric(float* out, const float* base, const float* v, std::size_t n, float w) {
  float lane[kLanes] = {};
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) {
      const float measured = kOfBase ? base[i + l] : v[i + l];
      out[i + l] = base[i + l] + w * v[i + l];
      lane[l] = std::fma(measured, measured, lane[l]);
    }
  }
  return AxpyNormTail<kOfBase>(out, base, v, i, n, w, lane);
}
#if defined(__x86_64__)
// Written with intrinsics: with the stores to out in the loop the compiler
// keeps the lanes in memory or the products scalar. Lane l of the
// accumulators is LaneSum's lane l.
template <bool kOfBase>
MURMUR_TARGET_AVX2 float AxpyNormAvx2(float* out, const float* base, const float* v, std::size_t n, float w) {
  const __m256 wv = _mm256_set1_ps(w);
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 a = _mm256_loadu_ps(v + i), b = _mm256_loadu_ps(v + i + 8);
    const __m256 c = _mm256_loadu_ps(base + i), d = _mm256_loadu_ps(base + i + 8);
    _mm256_storeu_ps(out + i, _mm256_add_ps(c, _mm256_mul_ps(wv, a)));
    _mm256_storeu_ps(out + i + 8, _mm256_add_ps(d, _mm256_mul_ps(wv, b)));
    lo = kOfBase ? _mm256_fmadd_ps(c, c, lo) : _mm256_fmadd_ps(a, a, lo);
    hi = kOfBase ? _mm256_fmadd_ps(d, d, hi) : _mm256_fmadd_ps(b, b, hi);
  }
  float lane[kLanes];
  _mm256_storeu_ps(lane, lo);
  _mm256_storeu_ps(lane + 8, hi);
  return AxpyNormTail<kOfBase>(out, base, v, i, n, w, lane);
}
template <bool kOfBase>
MURMUR_TARGET_AVX512 float AxpyNormAvx512(float* out, const float* base, const float* v, std::size_t n,
                                          float w) {
  const __m512 wv = _mm512_set1_ps(w);
  __m512 acc = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 a = _mm512_loadu_ps(v + i), c = _mm512_loadu_ps(base + i);
    _mm512_storeu_ps(out + i, _mm512_add_ps(c, _mm512_mul_ps(wv, a)));
    acc = kOfBase ? _mm512_fmadd_ps(c, c, acc) : _mm512_fmadd_ps(a, a, acc);
  }
  float lane[kLanes];
  _mm512_storeu_ps(lane, acc);
  return AxpyNormTail<kOfBase>(out, base, v, i, n, w, lane);
}
#endif

template <bool kOfBase>
float AxpyNorm(float* out, const float* base, const float* v, std::size_t n, float w) {
  switch (ActiveSimd()) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: return AxpyNormAvx512<kOfBase>(out, base, v, n, w);
    case SimdLevel::kAvx2: return AxpyNormAvx2<kOfBase>(out, base, v, n, w);
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  return AxpyNormGeneric<kOfBase>(out, base, v, n, w);
}

}  // namespace

float FixedAxpySquaredNorm(std::span<float> out, std::span<const float> v, float w) {
  MURMUR_CHECK(out.size() == v.size());
  return AxpyNorm<false>(out.data(), out.data(), v.data(), v.size(), w);
}

float FixedSquaredNormPlusScaled(std::span<const float> a, std::span<const float> v, float w,
                                 std::span<float> out) {
  MURMUR_CHECK(a.size() == v.size() && out.size() == v.size());
  return AxpyNorm<true>(out.data(), a.data(), v.data(), v.size(), w);
}

double SquaredNormOrDouble(std::span<const float> x) {
  const float s = FixedSquaredNorm(x);
  if (std::isfinite(s)) return s;
  double sum = 0;
  for (const float v : x) sum += static_cast<double>(v) * v;
  return sum;
}

double FixedSquaredNorm(std::span<const double> x) {
  // Products rounded, then added: the same two roundings at every width
  // (contraction is off in every build), so no dispatch is needed.
  return LaneSum<double>(x.size(), [&](std::size_t i, double acc) { return acc + x[i] * x[i]; });
}

void ColumnSums(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, float* out) {
  for (std::int64_t j = 0; j < cols; ++j) out[j] = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < cols; ++j) out[j] += x[r * ld + j];
}

double IntPow(double x, long long n) {
  MURMUR_CHECK(n >= 0);
  double result = 1.0;
  while (n > 0) {
    if (n & 1) result *= x;
    x *= x;
    n >>= 1;
  }
  return result;
}

}  // namespace murmur
