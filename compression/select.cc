#include "compression/select.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/check.h"
#include "core/simd.h"

namespace murmur::compression {

std::uint32_t AbsKey(float f) { return std::bit_cast<std::uint32_t>(f) & 0x7FFFFFFFu; }

namespace {

constexpr int kBucketShift = 20;  // 11 bits: 8 of exponent, 3 of mantissa
constexpr std::size_t kBuckets = 1u << (31 - kBucketShift);

// Histogram of key >> 20 with four sub-histograms so that repeated buckets do
// not serialize on one counter. With kAcc, r += x in the same pass and the
// histogram is of r.
template <bool kAcc>
void Histogram(float* r, const float* x, std::size_t n, std::vector<std::uint32_t>& hist) {
  std::vector<std::uint32_t> sub(4 * kBuckets, 0);
  std::uint32_t* h = sub.data();
  auto key = [&](std::size_t i) {
    float a = x[i];
    if constexpr (kAcc) {
      a += r[i];
      r[i] = a;
    }
    return AbsKey(a) >> kBucketShift;
  };
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    std::uint32_t k0 = key(i), k1 = key(i + 1), k2 = key(i + 2), k3 = key(i + 3);
    ++h[k0];
    ++h[kBuckets + k1];
    ++h[2 * kBuckets + k2];
    ++h[3 * kBuckets + k3];
  }
  for (; i < n; ++i) ++h[key(i)];
  hist.assign(kBuckets, 0);
  for (std::size_t b = 0; b < kBuckets; ++b)
    hist[b] = h[b] + h[kBuckets + b] + h[2 * kBuckets + b] + h[3 * kBuckets + b];
}

#if defined(__x86_64__)
// Collect 16 at a time; returns how many values it looked at.
template <bool kAcc>
MURMUR_TARGET_AVX512 std::size_t CollectAvx512(float* r, const float* x, std::size_t n, std::uint32_t min_key,
                                               std::vector<std::uint32_t>& out) {
  std::size_t i = 0;
  const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF), lo = _mm512_set1_epi32(static_cast<int>(min_key));
  for (; i + 16 <= n; i += 16) {
    __m512 a = _mm512_loadu_ps(x + i);
    if constexpr (kAcc) {
      a = _mm512_add_ps(a, _mm512_loadu_ps(r + i));
      _mm512_storeu_ps(r + i, a);
    }
    __mmask16 m = _mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(a), abs_mask), lo);
    for (unsigned bits = m; bits; bits &= bits - 1)
      out.push_back(static_cast<std::uint32_t>(i + static_cast<std::size_t>(std::countr_zero(bits))));
  }
  return i;
}

// Collect 8 at a time; returns how many values it looked at.
template <bool kAcc>
MURMUR_TARGET_AVX2 std::size_t CollectAvx2(float* r, const float* x, std::size_t n, std::uint32_t min_key,
                                           std::vector<std::uint32_t>& out) {
  std::size_t i = 0;
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i lo = _mm256_set1_epi32(static_cast<int>(min_key) - 1);  // keys <= 2^31 - 1: signed compare
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(x + i);
    if constexpr (kAcc) {
      a = _mm256_add_ps(a, _mm256_loadu_ps(r + i));
      _mm256_storeu_ps(r + i, a);
    }
    __m256i gt = _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_castps_si256(a), abs_mask), lo);
    for (unsigned bits = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(gt))); bits;
         bits &= bits - 1)
      out.push_back(static_cast<std::uint32_t>(i + static_cast<std::size_t>(std::countr_zero(bits))));
  }
  return i;
}
#endif

// Appends every i with AbsKey(a_i) >= min_key to out, in increasing order.
// With kAcc, a = r + x is stored back to r in the same pass.
template <bool kAcc>
void Collect(float* r, const float* x, std::size_t n, std::uint32_t min_key,
             std::vector<std::uint32_t>& out) {
  std::size_t i = 0;
#if defined(__x86_64__)
  const SimdLevel level = ActiveSimd();
  if (level >= SimdLevel::kAvx512)
    i = CollectAvx512<kAcc>(r, x, n, min_key, out);
  else if (level >= SimdLevel::kAvx2)
    i = CollectAvx2<kAcc>(r, x, n, min_key, out);
#endif
  for (; i < n; ++i) {
    float a = x[i];
    if constexpr (kAcc) {
      a += r[i];
      r[i] = a;
    }
    if (AbsKey(a) >= min_key) out.push_back(static_cast<std::uint32_t>(i));
  }
}

// Exactly the k largest of the candidates (given in index order) by key; ties
// go to the lowest index. REQUIRES: cand holds every index whose key could be
// among the k largest, and cand.size() >= k.
void FinishTopK(const float* a, const std::vector<std::uint32_t>& cand, std::size_t k,
                std::vector<std::uint32_t>& out) {
  out.clear();
  if (cand.size() <= k) {
    out = cand;
    return;
  }
  if (k == 0) return;
  std::vector<std::uint32_t> keys(cand.size());
  for (std::size_t i = 0; i < cand.size(); ++i) keys[i] = AbsKey(a[cand[i]]);
  std::nth_element(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k - 1), keys.end(),
                   std::greater<std::uint32_t>());
  const std::uint32_t t = keys[k - 1];
  std::size_t above = 0;
  for (std::uint32_t key : keys) above += key > t;
  std::size_t ties = k - above;
  out.reserve(k);
  for (std::uint32_t i : cand) {
    std::uint32_t key = AbsKey(a[i]);
    if (key > t || (key == t && ties > 0)) {
      if (key == t) --ties;
      out.push_back(i);
    }
  }
}

bool Trivial(std::size_t n, std::size_t k, std::vector<std::uint32_t>& out) {
  out.clear();
  if (k == 0) return true;
  if (k >= n) {
    out.resize(n);
    std::iota(out.begin(), out.end(), 0u);
    return true;
  }
  return false;
}

template <bool kAcc>
void TopKExactImpl(float* r, const float* x, std::size_t n, std::size_t k, std::vector<std::uint32_t>& out) {
  MURMUR_CHECK(n <= 0xFFFFFFFFu);
  std::vector<std::uint32_t> hist;
  Histogram<kAcc>(r, x, n, hist);
  const float* a = kAcc ? r : x;
  if (Trivial(n, k, out)) return;
  std::size_t above = 0, b = kBuckets;
  while (b > 0 && above + hist[b - 1] < k) above += hist[--b];
  // Bucket b - 1 holds the k-th largest; everything from it up is a candidate.
  std::vector<std::uint32_t> cand;
  cand.reserve(above + hist[b - 1]);
  Collect<false>(nullptr, a, n, static_cast<std::uint32_t>(b - 1) << kBucketShift, cand);
  FinishTopK(a, cand, k, out);
}

template <bool kAcc>
void TopKApproxImpl(float* r, const float* x, std::size_t n, std::size_t k, Rng& rng,
                    std::vector<std::uint32_t>& out) {
  constexpr std::size_t kChunk = 16;
  if (k == 0 || k >= n) {
    TopKExactImpl<kAcc>(r, x, n, k, out);
    return;
  }
  // About 256 sampled elements above the threshold: the kept count then has a
  // relative standard deviation near 1/sqrt(256) = 6%, well inside [0.8k, 1.3k].
  // (At least 4096, at most n: std::clamp's bounds would be in the wrong
  // order for n < 4096.) Sampling half the vector or more gains nothing
  // over the exact selection, and fewer than 16 elements give no chunk.
  const std::size_t want = std::min<std::size_t>(std::max<std::size_t>(256 * (n / k + 1), 4096), n);
  const std::size_t chunks = want / kChunk;
  if (chunks == 0 || 2 * chunks * kChunk >= n) {
    TopKExactImpl<kAcc>(r, x, n, k, out);
    return;
  }
  std::vector<std::uint32_t> sample(chunks * kChunk);
  for (std::size_t c = 0; c < chunks; ++c) {
    std::size_t pos = static_cast<std::size_t>(rng.UniformInt(n - kChunk + 1));
    for (std::size_t j = 0; j < kChunk; ++j)
      sample[c * kChunk + j] = AbsKey(kAcc ? r[pos + j] + x[pos + j] : x[pos + j]);
  }
  const std::size_t lo = (8 * k + 9) / 10, hi = (13 * k) / 10;
  std::size_t q = sample.size() * k / n;  // expected rank of the threshold in the sample
  std::vector<std::uint32_t> cand;
  const float* a = kAcc ? r : x;
  for (int attempt = 0; attempt <= kApproxRetries; ++attempt) {
    q = std::min(q, sample.size() - 1);
    std::nth_element(sample.begin(), sample.begin() + static_cast<std::ptrdiff_t>(q), sample.end(),
                     std::greater<std::uint32_t>());
    const std::uint32_t threshold = std::max<std::uint32_t>(sample[q], 1);
    cand.clear();
    if (attempt == 0)
      Collect<kAcc>(r, x, n, threshold, cand);
    else
      Collect<false>(nullptr, a, n, threshold, cand);
    if (cand.size() > hi) {
      FinishTopK(a, cand, k, out);
      return;
    }
    if (cand.size() >= lo) {
      out.swap(cand);
      return;
    }
    q = 2 * q + kChunk;  // too few kept: a lower threshold
  }
  TopKExactImpl<false>(nullptr, a, n, k, out);
}

}  // namespace

void TopKExact(std::span<const float> a, std::size_t k, std::vector<std::uint32_t>& out) {
  TopKExactImpl<false>(nullptr, a.data(), a.size(), k, out);
}

void TopKExactAccumulate(std::span<float> r, std::span<const float> x, std::size_t k,
                         std::vector<std::uint32_t>& out) {
  MURMUR_CHECK(r.size() == x.size());
  TopKExactImpl<true>(r.data(), x.data(), r.size(), k, out);
}

void TopKApprox(std::span<const float> a, std::size_t k, Rng& rng, std::vector<std::uint32_t>& out) {
  TopKApproxImpl<false>(nullptr, a.data(), a.size(), k, rng, out);
}

void TopKApproxAccumulate(std::span<float> r, std::span<const float> x, std::size_t k, Rng& rng,
                          std::vector<std::uint32_t>& out) {
  MURMUR_CHECK(r.size() == x.size());
  TopKApproxImpl<true>(r.data(), x.data(), r.size(), k, rng, out);
}

void ThresholdSelect(std::span<const float> a, float tau, std::vector<std::uint32_t>& out) {
  out.clear();
  Collect<false>(nullptr, a.data(), a.size(), AbsKey(tau), out);
}

void ThresholdSelectAccumulate(std::span<float> r, std::span<const float> x, float tau,
                               std::vector<std::uint32_t>& out) {
  MURMUR_CHECK(r.size() == x.size());
  out.clear();
  Collect<true>(r.data(), x.data(), r.size(), AbsKey(tau), out);
}

}  // namespace murmur::compression
