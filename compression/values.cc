#include "compression/values.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/bytes.h"
#include "core/check.h"
#include "core/simd.h"

namespace murmur::compression {

namespace {
// Reads the b-bit field i (LSB first) of a payload; b <= 16.
inline std::uint32_t GetField(const std::uint8_t* p, std::size_t i, int b) {
  std::size_t bit = i * static_cast<std::size_t>(b);
  std::uint32_t w = 0;
  std::size_t byte = bit / 8, nbytes = (bit % 8 + b + 7) / 8;
  for (std::size_t k = 0; k < nbytes; ++k) w |= static_cast<std::uint32_t>(p[byte + k]) << (8 * k);
  return (w >> (bit % 8)) & ((1u << b) - 1);
}
inline void OrField(std::uint8_t* p, std::size_t i, int b, std::uint32_t v) {
  std::size_t bit = i * static_cast<std::size_t>(b);
  std::uint32_t w = v << (bit % 8);
  std::size_t byte = bit / 8, nbytes = (bit % 8 + b + 7) / 8;
  for (std::size_t k = 0; k < nbytes; ++k) p[byte + k] |= static_cast<std::uint8_t>(w >> (8 * k));
}

float AbsMax(const float* a, std::size_t n) {
  float m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i]));
  return m;
}
}  // namespace

std::string ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kF32: return "fp32";
    case ValueType::kF16: return "fp16";
    case ValueType::kBF16: return "bf16";
    case ValueType::kInt8: return "int8";
    case ValueType::kSign: return "sign";
    case ValueType::kTernary: return "ternary";
    case ValueType::kQsgd: return "qsgd";
  }
  return "unknown";
}

int ValueCoding::BitsPerValue() const {
  switch (type) {
    case ValueType::kF32: return 32;
    case ValueType::kF16:
    case ValueType::kBF16: return 16;
    case ValueType::kInt8: return 8;
    case ValueType::kSign: return 1;
    case ValueType::kTernary: return 2;
    case ValueType::kQsgd: return 1 + std::bit_width(levels);
  }
  return 32;
}

std::size_t ValueCoding::NumScales(std::size_t count) const {
  switch (type) {
    case ValueType::kInt8: return (count + block - 1) / block;
    case ValueType::kSign:
    case ValueType::kTernary:
    case ValueType::kQsgd: return 1;
    default: return 0;
  }
}

std::size_t ValueCoding::PayloadBytes(std::size_t count) const {
  return (count * static_cast<std::size_t>(BitsPerValue()) + 7) / 8;
}

// float -> binary16 with round to nearest even (F. Giesen, "float_to_half_fast3_rtne").
float PackedValues::Get(std::size_t i) const {
  const std::uint8_t* p = payload.data();
  switch (coding.type) {
    case ValueType::kF32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ValueType::kF16: return HalfToFloat(ReadLittleEndian<std::uint16_t>(p + 2 * i));
    case ValueType::kBF16: return Bf16ToFloat(ReadLittleEndian<std::uint16_t>(p + 2 * i));
    case ValueType::kInt8:
      return static_cast<float>(static_cast<std::int8_t>(p[i])) * scales[i / coding.block];
    case ValueType::kSign: return (p[i / 8] >> (i % 8)) & 1 ? -scales[0] : scales[0];
    case ValueType::kTernary: {
      std::uint32_t c = GetField(p, i, 2);
      return c == 0 ? 0.0f : (c == 1 ? scales[0] : -scales[0]);
    }
    case ValueType::kQsgd: {
      std::uint32_t c = GetField(p, i, coding.BitsPerValue());
      float v = scales[0] * static_cast<float>(c >> 1) / static_cast<float>(coding.levels);
      return (c & 1) ? -v : v;
    }
  }
  return 0;
}

void PackedValues::AddTo(std::span<float> out, float scale) const {
  MURMUR_CHECK(out.size() == count);
  float* o = out.data();
  const std::uint8_t* p = payload.data();
  switch (coding.type) {
    case ValueType::kF32:
      for (std::size_t i = 0; i < count; ++i) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        o[i] += scale * v;
      }
      return;
    case ValueType::kInt8:
      for (std::size_t b = 0; b * coding.block < count; ++b) {
        std::size_t lo = b * coding.block, hi = std::min(count, lo + coding.block);
        float s = scale * scales[b];
        for (std::size_t i = lo; i < hi; ++i) o[i] += s * static_cast<float>(static_cast<std::int8_t>(p[i]));
      }
      return;
    case ValueType::kSign: {
      float s = scale * scales[0];
      for (std::size_t i = 0; i < count; ++i) o[i] += (p[i / 8] >> (i % 8)) & 1 ? -s : s;
      return;
    }
    default:
      for (std::size_t i = 0; i < count; ++i) o[i] += scale * Get(i);
      return;
  }
}

void PackedValues::DecodeTo(std::span<float> out) const {
  MURMUR_CHECK(out.size() == count);
  float* o = out.data();
  switch (coding.type) {
    case ValueType::kF32:
      if (count > 0) std::memcpy(o, payload.data(), 4 * count);
      return;
    case ValueType::kInt8:
      for (std::size_t b = 0; b * coding.block < count; ++b) {
        std::size_t lo = b * coding.block, hi = std::min(count, lo + coding.block);
        // 1 * s, then s * v: AddTo's products, each added to 0.
        const float s = 1.0f * scales[b];
        for (std::size_t i = lo; i < hi; ++i)
          o[i] = s * static_cast<float>(static_cast<std::int8_t>(payload[i]));
      }
      return;
    case ValueType::kF16: {
      // HalfToFloat without branches, so that the loop vectorizes: every
      // half's float is exact, so this gives Get's bits.
      const std::uint8_t* p = payload.data();
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t h = ReadLittleEndian<std::uint16_t>(p + 2 * i);
        const std::uint32_t sign = (h & 0x8000u) << 16, em = h & 0x7FFFu;
        const std::uint32_t normal = (em << 13) + (112u << 23);
        const std::uint32_t special = 0x7F800000u | ((em & 0x3FFu) << 13);
        const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(static_cast<float>(em) * 0x1p-24f);
        const std::uint32_t bits = em >= 0x7C00u ? special : (em < 0x400u ? subnormal : normal);
        o[i] = std::bit_cast<float>(sign | bits);
      }
      return;
    }
    case ValueType::kBF16: {
      const std::uint8_t* p = payload.data();
      for (std::size_t i = 0; i < count; ++i)
        o[i] = std::bit_cast<float>(static_cast<std::uint32_t>(ReadLittleEndian<std::uint16_t>(p + 2 * i))
                                    << 16);
      return;
    }
    default:
      for (std::size_t i = 0; i < count; ++i) o[i] = Get(i);
      return;
  }
}

void PackedValues::ScatterAddTo(std::span<const std::uint32_t> indices, std::span<float> out,
                                float scale) const {
  MURMUR_CHECK(indices.size() == count);
  if (coding.type == ValueType::kF32) {
    for (std::size_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, payload.data() + 4 * i, 4);
      out[indices[i]] += scale * v;
    }
    return;
  }
  for (std::size_t i = 0; i < count; ++i) out[indices[i]] += scale * Get(i);
}

namespace {

#if defined(__x86_64__)
// fp16 of x (+ r) eight at a time; returns how many it packed (a multiple of 8).
template <bool kEF>
MURMUR_TARGET_AVX2 std::size_t PackHalfAvx2(const float* x, float* r, std::size_t n, std::uint8_t* out) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(x + i);
    if constexpr (kEF) a = _mm256_add_ps(a, _mm256_loadu_ps(r + i));
    __m128i h = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
    if constexpr (kEF) _mm256_storeu_ps(r + i, _mm256_sub_ps(a, _mm256_cvtph_ps(h)));
  }
  return i;
}
#endif

template <bool kEF>
void PackHalfLike(const float* x, float* r, std::size_t n, bool bf16, std::uint8_t* out) {
  std::size_t i = 0;
#if defined(__x86_64__)
  if (!bf16 && ActiveSimd() >= SimdLevel::kAvx2) i = PackHalfAvx2<kEF>(x, r, n, out);
#endif
  for (; i < n; ++i) {
    float a = kEF ? x[i] + r[i] : x[i];
    std::uint16_t h = bf16 ? FloatToBf16(a) : FloatToHalf(a);
    out[2 * i] = static_cast<std::uint8_t>(h);
    out[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
    if constexpr (kEF) r[i] = a - (bf16 ? Bf16ToFloat(h) : HalfToFloat(h));
  }
}

#if defined(__x86_64__)
// UniformAt's "lowbias32" mix on 16 lanes.
MURMUR_TARGET_AVX512 inline __m512i Mix16(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(0x7feb352d));
  x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
  x = _mm512_mullo_epi32(x, _mm512_set1_epi32(static_cast<int>(0x846ca68bU)));
  return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}

// UniformAt for 16 consecutive indices starting at i (same hash, vectorized).
MURMUR_TARGET_AVX512 inline __m512 UniformAt16(std::uint64_t key, std::uint32_t i) {
  __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i)),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  __m512i h =
      Mix16(_mm512_xor_si512(idx, _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key)))));
  h = Mix16(_mm512_add_epi32(h, _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(key >> 32)))));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(h, 8)), _mm512_set1_ps(0x1p-24f));
}

// max |a_j| over the first multiple of 16 of m values into *amax; returns that multiple.
MURMUR_TARGET_AVX512 std::size_t AbsMaxAvx512(const float* a, std::size_t m, float* amax) {
  std::size_t j = 0;
  __m512 vmax = _mm512_setzero_ps();
  // max_ps returns its second operand when either is NaN: a NaN is ignored,
  // as std::max(m, NaN) in the scalar loop ignores it.
  for (; j + 16 <= m; j += 16) vmax = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(a + j)), vmax);
  *amax = _mm512_reduce_max_ps(vmax);
  return j;
}

// PackInt8's rounding of acc[0, m) (block values from index lo) 16 at a time;
// returns how many it rounded.
template <bool kEF>
MURMUR_TARGET_AVX512 std::size_t QuantizeInt8Avx512(const float* acc, std::size_t m, std::size_t lo,
                                                    float inv, float scale, std::uint64_t key,
                                                    std::uint8_t* out, float* r) {
  const __m512 vinv = _mm512_set1_ps(inv), vscale = _mm512_set1_ps(scale);
  const __m512 lo_q = _mm512_set1_ps(-127.0f), hi_q = _mm512_set1_ps(127.0f);
  std::size_t j = 0;
  for (; j + 16 <= m; j += 16) {
    __m512 a = _mm512_loadu_ps(acc + j);
    __m512 u = UniformAt16(key, static_cast<std::uint32_t>(lo + j));
    __m512 q = _mm512_roundscale_ps(_mm512_add_ps(_mm512_mul_ps(a, vinv), u), _MM_FROUND_TO_NEG_INF);
    q = _mm512_min_ps(_mm512_max_ps(q, lo_q), hi_q);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + lo + j), _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(q)));
    if constexpr (kEF) _mm512_storeu_ps(r + lo + j, _mm512_sub_ps(a, _mm512_mul_ps(q, vscale)));
  }
  return j;
}
#endif

// int8 with one scale per block (max |a| / 127) and unbiased stochastic
// rounding: q = floor(a / scale + u), u ~ U[0, 1), so E[q * scale] = a.
template <bool kEF>
void PackInt8(const float* x, float* r, std::size_t n, std::uint32_t block, std::uint64_t key,
              std::uint8_t* out, float* scales) {
  std::vector<float> acc(std::min<std::size_t>(block, n));
#if defined(__x86_64__)
  const bool avx512 = ActiveSimd() >= SimdLevel::kAvx512;
#endif
  for (std::size_t lo = 0, b = 0; lo < n; lo += block, ++b) {
    std::size_t m = std::min<std::size_t>(block, n - lo);
    for (std::size_t j = 0; j < m; ++j) acc[j] = kEF ? x[lo + j] + r[lo + j] : x[lo + j];
    std::size_t j = 0;
    float amax = 0;
#if defined(__x86_64__)
    if (avx512) j = AbsMaxAvx512(acc.data(), m, &amax);
#endif
    for (; j < m; ++j) amax = std::max(amax, std::fabs(acc[j]));
    const float scale = amax / 127.0f;
    scales[b] = scale;
    const float inv = amax > 0 ? 127.0f / amax : 0.0f;
    j = 0;
#if defined(__x86_64__)
    if (avx512) j = QuantizeInt8Avx512<kEF>(acc.data(), m, lo, inv, scale, key, out, r);
#endif
    for (; j < m; ++j) {
      float u = UniformAt(key, static_cast<std::uint32_t>(lo + j));
      float q = std::floor(acc[j] * inv + u);
      // max then min in the order of the AVX-512 path (and the GPU kernel):
      // a NaN becomes -127, as _mm512_max_ps(q, -127) makes it.
      q = q > -127.0f ? q : -127.0f;
      q = q < 127.0f ? q : 127.0f;
      out[lo + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
      if constexpr (kEF) r[lo + j] = acc[j] - q * scale;
    }
  }
}

#if defined(__x86_64__)
// PackSign eight at a time; returns how many it packed.
template <bool kEF>
MURMUR_TARGET_AVX2 std::size_t PackSignAvx2(const float* acc, float* r, std::size_t n, float scale,
                                            std::uint8_t* out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f), vs = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(acc + i);
    out[i / 8] = static_cast<std::uint8_t>(_mm256_movemask_ps(a));
    if constexpr (kEF)
      _mm256_storeu_ps(r + i, _mm256_sub_ps(a, _mm256_or_ps(_mm256_and_ps(a, sign_mask), vs)));
  }
  return i;
}
#endif

// Sign bits (1 = negative) with scale ||a||_1 / d (Karimireddy et al. 2019, Alg. 1).
template <bool kEF>
void PackSign(const float* acc, float* r, std::size_t n, float scale, std::uint8_t* out) {
  std::size_t i = 0;
#if defined(__x86_64__)
  if (ActiveSimd() >= SimdLevel::kAvx2) i = PackSignAvx2<kEF>(acc, r, n, scale, out);
#endif
  // Whole bytes from the sign bits, with no read-modify-write of the output
  // (the portable path, and NEON's through auto-vectorization).
  for (; i + 8 <= n; i += 8) {
    std::uint32_t byte = 0;
    for (std::size_t l = 0; l < 8; ++l) byte |= (std::bit_cast<std::uint32_t>(acc[i + l]) >> 31) << l;
    out[i / 8] = static_cast<std::uint8_t>(byte);
    if constexpr (kEF)
      for (std::size_t l = 0; l < 8; ++l) r[i + l] = acc[i + l] - (std::signbit(acc[i + l]) ? -scale : scale);
  }
  for (; i < n; ++i) {
    bool neg = std::signbit(acc[i]);
    if (neg) out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    if constexpr (kEF) r[i] = acc[i] - (neg ? -scale : scale);
  }
}

}  // namespace

PackedValues PackValues(std::span<const float> xs, std::span<float> residual, const ValueCoding& coding,
                        std::uint64_t key) {
  const bool ef = !residual.empty();
  MURMUR_CHECK(!ef || residual.size() == xs.size());
  const std::size_t n = xs.size();
  const float* x = xs.data();
  float* r = residual.data();
  PackedValues pv;
  pv.coding = coding;
  pv.count = n;
  pv.scales.assign(coding.NumScales(n), 0.0f);
  if (coding.type == ValueType::kF32 && !ef) {
    // A plain copy: no zero fill first (whole models travel this way every round).
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(x);
    pv.payload.assign(bytes, bytes + 4 * n);
    return pv;
  }
  pv.payload.assign(coding.PayloadBytes(n), 0);
  std::uint8_t* out = pv.payload.data();

  switch (coding.type) {
    case ValueType::kF32:
      if (ef) {
        for (std::size_t i = 0; i < n; ++i) {
          float a = x[i] + r[i];
          std::memcpy(out + 4 * i, &a, 4);
          r[i] = 0;
        }
      } else if (n > 0) {
        std::memcpy(out, x, 4 * n);
      }
      return pv;
    case ValueType::kF16:
    case ValueType::kBF16:
      if (ef)
        PackHalfLike<true>(x, r, n, coding.type == ValueType::kBF16, out);
      else
        PackHalfLike<false>(x, r, n, coding.type == ValueType::kBF16, out);
      return pv;
    case ValueType::kInt8:
      if (ef)
        PackInt8<true>(x, r, n, coding.block, key, out, pv.scales.data());
      else
        PackInt8<false>(x, r, n, coding.block, key, out, pv.scales.data());
      return pv;
    default: break;
  }

  // The codings with one global scale need it before quantizing: two passes.
  const float* acc = x;
  if (ef) {
    for (std::size_t i = 0; i < n; ++i) r[i] += x[i];
    acc = r;
  }
  if (coding.type == ValueType::kSign) {
    float scale = n ? static_cast<float>(AbsSum({acc, n}) / static_cast<double>(n)) : 0.0f;
    pv.scales[0] = scale;
    if (ef)
      PackSign<true>(acc, r, n, scale, out);
    else
      PackSign<false>(acc, r, n, scale, out);
    return pv;
  }
  if (coding.type == ValueType::kTernary) {
    // TernGrad (Wen et al. 2017, eq. 2): s = max|a|, send s * sign(a_i) * b_i
    // with b_i ~ Bernoulli(|a_i| / s): unbiased.
    float s = AbsMax(acc, n);
    pv.scales[0] = s;
    for (std::size_t i = 0; i < n; ++i) {
      float a = acc[i];
      bool keep = s > 0 && UniformAt(key, static_cast<std::uint32_t>(i)) * s < std::fabs(a);
      std::uint32_t c = keep ? (a < 0 ? 2u : 1u) : 0u;
      OrField(out, i, 2, c);
      if (ef) r[i] = a - (c == 0 ? 0.0f : (c == 1 ? s : -s));
    }
    return pv;
  }
  // QSGD (Alistarh et al. 2017, Sec. 3.1): level l = floor(|a| / ||a||_2 * s + u),
  // value ||a||_2 * sign(a) * l / s; E = a.
  MURMUR_CHECK(coding.type == ValueType::kQsgd && coding.levels >= 1);
  float norm = static_cast<float>(std::sqrt(SquareSum({acc, n})));
  pv.scales[0] = norm;
  const int bits = coding.BitsPerValue();
  const float s = static_cast<float>(coding.levels);
  const float inv = norm > 0 ? s / norm : 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    float a = acc[i];
    float l = std::floor(std::fabs(a) * inv + UniformAt(key, static_cast<std::uint32_t>(i)));
    l = std::min(l, s);
    std::uint32_t c = (static_cast<std::uint32_t>(l) << 1) | (std::signbit(a) ? 1u : 0u);
    OrField(out, i, bits, c);
    if (ef) {
      float v = norm * l / s;
      r[i] = a - ((c & 1) ? -v : v);
    }
  }
  return pv;
}

}  // namespace murmur::compression
