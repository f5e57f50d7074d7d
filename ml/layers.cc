#include "ml/layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/rng.h"
#include "core/simd.h"

namespace murmur::ml {

Shape3 ConvGeometry::out() const {
  return {out_channels, (in.h + 2 * pad - kernel) / stride + 1, (in.w + 2 * pad - kernel) / stride + 1};
}

namespace {

// Calls fn(row of cols, output row oy, input row iy, first and last output
// columns [ox0, ox1) inside the image, input column of ox0) for every row of
// every patch row: the entries of cols outside [ox0, ox1) read the padding.
// The inner copies are contiguous for stride 1, which is what makes im2col
// run at memory speed rather than per element.
// floor(a / b) for b > 0.
std::int64_t FloorDiv(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

template <typename Fn>
void ForPatchRows(const ConvGeometry& g, Fn fn) {
  const Shape3 o = g.out();
  for (std::int64_t c = 0; c < g.in.c; ++c) {
    for (std::int64_t ki = 0; ki < g.kernel; ++ki) {
      for (std::int64_t kj = 0; kj < g.kernel; ++kj) {
        const std::int64_t row = (c * g.kernel + ki) * g.kernel + kj;
        // Output columns whose input column ox * stride - pad + kj is in [0, in.w).
        const std::int64_t lo = std::max<std::int64_t>(0, -FloorDiv(kj - g.pad, g.stride));
        const std::int64_t hi =
            std::clamp<std::int64_t>(FloorDiv(g.in.w - 1 + g.pad - kj, g.stride) + 1, lo, o.w);
        for (std::int64_t oy = 0; oy < o.h; ++oy) {
          const std::int64_t iy = oy * g.stride - g.pad + ki;
          fn(row, oy, iy >= 0 && iy < g.in.h ? (c * g.in.h + iy) * g.in.w : -1, lo, hi,
             lo * g.stride - g.pad + kj);
        }
      }
    }
  }
}

}  // namespace

namespace {

// Stride 1 through a zero-padded sample: calls fn(patch row, its first
// element in the padded sample) for every patch row; its out.h rows of
// out.w values lie (in.w + 2 pad) apart there. Written as plain loops: the
// bounds of ForPatchRows and a library copy per 14 values cost more than
// the copy itself.
template <typename Fn>
void ForPaddedPatches(const ConvGeometry& g, Fn fn) {
  const std::int64_t pw = g.in.w + 2 * g.pad, ph = g.in.h + 2 * g.pad;
  for (std::int64_t c = 0; c < g.in.c; ++c)
    for (std::int64_t ki = 0; ki < g.kernel; ++ki)
      for (std::int64_t kj = 0; kj < g.kernel; ++kj)
        fn((c * g.kernel + ki) * g.kernel + kj, (c * ph + ki) * pw + kj);
}

}  // namespace

void Im2Col(const ConvGeometry& g, const float* x, float* cols, float* padded) {
  const Shape3 o = g.out();
  const std::int64_t positions = o.h * o.w;
  if (g.stride == 1 && padded != nullptr) {
    const std::int64_t pw = g.in.w + 2 * g.pad, ph = g.in.h + 2 * g.pad;
    std::fill(padded, padded + g.padded_size(), 0.0f);
    for (std::int64_t c = 0; c < g.in.c; ++c)
      for (std::int64_t y = 0; y < g.in.h; ++y)
        std::copy_n(x + (c * g.in.h + y) * g.in.w, g.in.w, padded + (c * ph + y + g.pad) * pw + g.pad);
    ForPaddedPatches(g, [&](std::int64_t row, std::int64_t at) {
      float* d = cols + row * positions;
      const float* src = padded + at;
      for (std::int64_t oy = 0; oy < o.h; ++oy, d += o.w, src += pw)
        for (std::int64_t ox = 0; ox < o.w; ++ox) d[ox] = src[ox];
    });
    return;
  }
  ForPatchRows(g, [&](std::int64_t row, std::int64_t oy, std::int64_t in_row, std::int64_t lo,
                      std::int64_t hi, std::int64_t ix) {
    float* dst = cols + row * positions + oy * o.w;
    if (in_row < 0) {
      std::fill(dst, dst + o.w, 0.0f);
      return;
    }
    std::fill(dst, dst + lo, 0.0f);
    const float* src = x + in_row + ix;
    if (g.stride == 1) {
      std::copy(src, src + (hi - lo), dst + lo);
    } else {
      for (std::int64_t ox = lo; ox < hi; ++ox) dst[ox] = src[(ox - lo) * g.stride];
    }
    std::fill(dst + hi, dst + o.w, 0.0f);
  });
}

void Col2Im(const ConvGeometry& g, const float* dcols, float* dx, float* padded) {
  const Shape3 o = g.out();
  const std::int64_t positions = o.h * o.w;
  if (g.stride == 1 && padded != nullptr) {
    const std::int64_t pw = g.in.w + 2 * g.pad, ph = g.in.h + 2 * g.pad;
    std::fill(padded, padded + g.padded_size(), 0.0f);
    ForPaddedPatches(g, [&](std::int64_t row, std::int64_t at) {
      const float* src = dcols + row * positions;
      float* d = padded + at;
      for (std::int64_t oy = 0; oy < o.h; ++oy, src += o.w, d += pw)
        for (std::int64_t ox = 0; ox < o.w; ++ox) d[ox] += src[ox];
    });
    for (std::int64_t c = 0; c < g.in.c; ++c)
      for (std::int64_t y = 0; y < g.in.h; ++y)
        std::copy_n(padded + (c * ph + y + g.pad) * pw + g.pad, g.in.w, dx + (c * g.in.h + y) * g.in.w);
    return;
  }
  std::fill(dx, dx + g.in.size(), 0.0f);
  ForPatchRows(g, [&](std::int64_t row, std::int64_t oy, std::int64_t in_row, std::int64_t lo,
                      std::int64_t hi, std::int64_t ix) {
    if (in_row < 0) return;
    const float* src = dcols + row * positions + oy * o.w;
    float* dst = dx + in_row + ix;
    if (g.stride == 1) {
      for (std::int64_t ox = lo; ox < hi; ++ox) dst[ox - lo] += src[ox];
    } else {
      for (std::int64_t ox = lo; ox < hi; ++ox) dst[(ox - lo) * g.stride] += src[ox];
    }
  });
}

Shape3 PoolOutput(const Shape3& in, std::int64_t k) { return {in.c, in.h / k, in.w / k}; }

namespace {

// Calls fn(output index, input index of the window's top-left corner) for every output.
template <typename Fn>
void ForWindows(const Shape3& in, std::int64_t k, Fn fn) {
  const Shape3 o = PoolOutput(in, k);
  for (std::int64_t c = 0; c < o.c; ++c)
    for (std::int64_t oy = 0; oy < o.h; ++oy)
      for (std::int64_t ox = 0; ox < o.w; ++ox)
        fn((c * o.h + oy) * o.w + ox, (c * in.h + oy * k) * in.w + ox * k);
}

#if defined(__x86_64__)
// The mask of the first n of 16 lanes (none for n <= 0, all for n >= 16).
MURMUR_TARGET_AVX512 __mmask16 FirstLanes(std::int64_t n) {
  return static_cast<__mmask16>(n <= 0 ? 0 : n >= 16 ? 0xFFFF : (1u << n) - 1);
}

// Twice each lane's index: the column offset of output lane i's window.
MURMUR_TARGET_AVX512 __m512i TwiceLanes() {
  return _mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
}

// 2 x 2 max pooling of one output row, 16 outputs at a time: each input row
// pair is split into its even and odd columns, and the four candidates of a
// window are compared in the scalar order (top left, top right, bottom
// left, bottom right; a later one wins only when strictly greater, as
// _CMP_GT_OQ is false for NaN as `>` is), so y and argmax are the scalar
// loop's bit for bit. The compiler does not vectorize that loop (its
// stride-2 loads and data-dependent selects), and on cnn-fedavg it was 3%
// of a training step.
MURMUR_TARGET_AVX512 void MaxPool2RowAvx512(const float* r0, const float* r1, std::int64_t top,
                                            std::int64_t in_w, std::int64_t n, float* y,
                                            std::int32_t* argmax) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i lane2 = TwiceLanes();
  for (std::int64_t ox = 0; ox < n; ox += 16) {
    const std::int64_t count = std::min<std::int64_t>(16, n - ox), values = 2 * count;
    const __mmask16 lo = FirstLanes(values), hi = FirstLanes(values - 16);
    const std::int64_t j = 2 * ox;
    const __m512 a0 = _mm512_maskz_loadu_ps(lo, r0 + j), b0 = _mm512_maskz_loadu_ps(hi, r0 + j + 16);
    const __m512 a1 = _mm512_maskz_loadu_ps(lo, r1 + j), b1 = _mm512_maskz_loadu_ps(hi, r1 + j + 16);
    const __m512 e0 = _mm512_permutex2var_ps(a0, even, b0), o0 = _mm512_permutex2var_ps(a0, odd, b0);
    const __m512 e1 = _mm512_permutex2var_ps(a1, even, b1), o1 = _mm512_permutex2var_ps(a1, odd, b1);
    const __m512i first = _mm512_add_epi32(_mm512_set1_epi32(static_cast<std::int32_t>(top + j)), lane2);
    __m512 best = e0;
    __m512i at = first;
    __mmask16 m = _mm512_cmp_ps_mask(o0, best, _CMP_GT_OQ);
    best = _mm512_mask_mov_ps(best, m, o0);
    at = _mm512_mask_mov_epi32(at, m, _mm512_add_epi32(first, _mm512_set1_epi32(1)));
    m = _mm512_cmp_ps_mask(e1, best, _CMP_GT_OQ);
    best = _mm512_mask_mov_ps(best, m, e1);
    at = _mm512_mask_mov_epi32(at, m,
                               _mm512_add_epi32(first, _mm512_set1_epi32(static_cast<std::int32_t>(in_w))));
    m = _mm512_cmp_ps_mask(o1, best, _CMP_GT_OQ);
    best = _mm512_mask_mov_ps(best, m, o1);
    at = _mm512_mask_mov_epi32(
        at, m, _mm512_add_epi32(first, _mm512_set1_epi32(static_cast<std::int32_t>(in_w + 1))));
    const __mmask16 out = FirstLanes(count);
    _mm512_mask_storeu_ps(y + ox, out, best);
    _mm512_mask_storeu_epi32(argmax + ox, out, at);
  }
}

// The gradient of one output row of 2 x 2 windows that tile dx: dy goes to
// the window's argmax, zeros elsewhere, every dx element written once; the
// scalar loop's values.
MURMUR_TARGET_AVX512 void MaxPool2BackwardRowAvx512(const float* dy, const std::int32_t* argmax,
                                                    std::int64_t top, std::int64_t in_w, std::int64_t n,
                                                    float* r0, float* r1) {
  const __m512i lane2 = TwiceLanes();
  const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i high = _mm512_add_epi32(low, _mm512_set1_epi32(8));
  for (std::int64_t ox = 0; ox < n; ox += 16) {
    const std::int64_t count = std::min<std::int64_t>(16, n - ox), values = 2 * count;
    const __mmask16 in = FirstLanes(count);
    const __mmask16 lo = FirstLanes(values), hi = FirstLanes(values - 16);
    const std::int64_t j = 2 * ox;
    const __m512 v = _mm512_maskz_loadu_ps(in, dy + ox);
    // The argmax relative to the window's top left corner, 2 * ox apart.
    const __m512i at =
        _mm512_sub_epi32(_mm512_maskz_loadu_epi32(in, argmax + ox),
                         _mm512_add_epi32(_mm512_set1_epi32(static_cast<std::int32_t>(top + j)), lane2));
    const __m512i one = _mm512_set1_epi32(1), w = _mm512_set1_epi32(static_cast<std::int32_t>(in_w));
    const __m512 e0 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, _mm512_setzero_si512()), v);
    const __m512 o0 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, one), v);
    const __m512 e1 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, w), v);
    const __m512 o1 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(at, _mm512_add_epi32(w, one)), v);
    _mm512_mask_storeu_ps(r0 + j, lo, _mm512_permutex2var_ps(e0, low, o0));
    _mm512_mask_storeu_ps(r0 + j + 16, hi, _mm512_permutex2var_ps(e0, high, o0));
    _mm512_mask_storeu_ps(r1 + j, lo, _mm512_permutex2var_ps(e1, low, o1));
    _mm512_mask_storeu_ps(r1 + j + 16, hi, _mm512_permutex2var_ps(e1, high, o1));
  }
}
#endif

}  // namespace

void MaxPoolForward(const Shape3& in, std::int64_t k, const float* x, float* y, std::int32_t* argmax) {
  if (k == 2) {
    // The common window, two input rows at a time, without the generic
    // loops (about twice as fast on cnn-fedavg); the same comparisons in
    // the same order.
    const Shape3 o = PoolOutput(in, k);
    for (std::int64_t c = 0; c < o.c; ++c)
      for (std::int64_t oy = 0; oy < o.h; ++oy) {
        const std::int64_t top = (c * in.h + 2 * oy) * in.w, out = (c * o.h + oy) * o.w;
        const float* r0 = x + top;
        const float* r1 = r0 + in.w;
#if defined(__x86_64__)
        if (ActiveSimd() == SimdLevel::kAvx512) {
          MaxPool2RowAvx512(r0, r1, top, in.w, o.w, y + out, argmax + out);
          continue;
        }
#endif
        for (std::int64_t ox = 0; ox < o.w; ++ox) {
          const std::int64_t j = 2 * ox;
          float best = r0[j];
          std::int64_t at = top + j;
          if (r0[j + 1] > best) best = r0[j + 1], at = top + j + 1;
          if (r1[j] > best) best = r1[j], at = top + in.w + j;
          if (r1[j + 1] > best) best = r1[j + 1], at = top + in.w + j + 1;
          y[out + ox] = best;
          argmax[out + ox] = static_cast<std::int32_t>(at);
        }
      }
    return;
  }
  ForWindows(in, k, [&](std::int64_t o, std::int64_t corner) {
    std::int64_t best = corner;
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t at = corner + i * in.w + j;
        if (x[at] > x[best]) best = at;
      }
    y[o] = x[best];
    argmax[o] = static_cast<std::int32_t>(best);
  });
}

void MaxPoolBackward(const Shape3& in, std::int64_t k, const float* dy, const std::int32_t* argmax,
                     float* dx) {
  const Shape3 o = PoolOutput(in, k);
  if (k == 2 && o.h * 2 == in.h && o.w * 2 == in.w) {
    // 2 x 2 windows that tile dx: each element written once, in one pass.
    for (std::int64_t c = 0; c < o.c; ++c)
      for (std::int64_t oy = 0; oy < o.h; ++oy) {
        const std::int64_t top = (c * in.h + 2 * oy) * in.w, out = (c * o.h + oy) * o.w;
        float* r0 = dx + top;
        float* r1 = r0 + in.w;
#if defined(__x86_64__)
        if (ActiveSimd() == SimdLevel::kAvx512) {
          MaxPool2BackwardRowAvx512(dy + out, argmax + out, top, in.w, o.w, r0, r1);
          continue;
        }
#endif
        for (std::int64_t ox = 0; ox < o.w; ++ox) {
          const std::int64_t j = 2 * ox, at = argmax[out + ox] - top;
          const float v = dy[out + ox];
          r0[j] = at == j ? v : 0.0f;
          r0[j + 1] = at == j + 1 ? v : 0.0f;
          r1[j] = at == in.w + j ? v : 0.0f;
          r1[j + 1] = at == in.w + j + 1 ? v : 0.0f;
        }
      }
    return;
  }
  std::memset(dx, 0, static_cast<std::size_t>(in.size()) * sizeof(float));
  for (std::int64_t i = 0; i < o.size(); ++i) dx[argmax[i]] = dy[i];
}

void AvgPoolForward(const Shape3& in, std::int64_t k, const float* x, float* y) {
  const float inv = 1.0f / static_cast<float>(k * k);
  ForWindows(in, k, [&](std::int64_t o, std::int64_t corner) {
    float sum = 0;
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j) sum += x[corner + i * in.w + j];
    y[o] = sum * inv;
  });
}

void AvgPoolBackward(const Shape3& in, std::int64_t k, const float* dy, float* dx) {
  std::memset(dx, 0, static_cast<std::size_t>(in.size()) * sizeof(float));
  const float inv = 1.0f / static_cast<float>(k * k);
  ForWindows(in, k, [&](std::int64_t o, std::int64_t corner) {
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j) dx[corner + i * in.w + j] = dy[o] * inv;
  });
}

void GroupNormForward(const Shape3& in, std::int64_t groups, const float* x, const float* gamma,
                      const float* beta, float* xhat, float* inv_std, float* y) {
  const std::int64_t hw = in.h * in.w, per_group = in.c / groups * hw;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t first = g * per_group;
    double sum = 0, sq = 0;
    for (std::int64_t i = first; i < first + per_group; ++i) sum += x[i];
    const double mean = sum / static_cast<double>(per_group);
    for (std::int64_t i = first; i < first + per_group; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const auto inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(per_group) + kGroupNormEps));
    inv_std[g] = inv;
    for (std::int64_t i = first; i < first + per_group; ++i) {
      const std::int64_t c = i / hw;
      xhat[i] = static_cast<float>(x[i] - mean) * inv;
      y[i] = gamma[c] * xhat[i] + beta[c];
    }
  }
}

void GroupNormBackward(const Shape3& in, std::int64_t groups, const float* dy, const float* xhat,
                       const float* inv_std, const float* gamma, float* dx, float* dgamma, float* dbeta) {
  const std::int64_t hw = in.h * in.w, per_group = in.c / groups * hw;
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t first = g * per_group;
    // With d = dy * gamma: dx = inv_std / N * (N d - sum d - xhat sum(d xhat)).
    double sum_d = 0, sum_dx = 0;
    for (std::int64_t i = first; i < first + per_group; ++i) {
      const std::int64_t c = i / hw;
      const double d = static_cast<double>(dy[i]) * gamma[c];
      sum_d += d;
      sum_dx += d * xhat[i];
      dgamma[c] += dy[i] * xhat[i];
      dbeta[c] += dy[i];
    }
    const double n = static_cast<double>(per_group);
    for (std::int64_t i = first; i < first + per_group; ++i) {
      const std::int64_t c = i / hw;
      const double d = static_cast<double>(dy[i]) * gamma[c];
      dx[i] = static_cast<float>(inv_std[g] / n * (n * d - sum_d - xhat[i] * sum_dx));
    }
  }
}

void DropoutForward(std::int64_t n, double p, std::uint64_t seed, std::uint64_t stream, const float* x,
                    float* y, float* scale) {
  Rng rng(seed, stream, RngPurpose::kDropout);
  const auto keep = static_cast<float>(1.0 - p);
  const float factor = 1.0f / keep;
  for (std::int64_t i = 0; i < n; ++i) {
    scale[i] = rng.UniformFloat() < keep ? factor : 0.0f;
    y[i] = x[i] * scale[i];
  }
}

}  // namespace murmur::ml
