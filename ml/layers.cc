#include "ml/layers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/rng.h"

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
