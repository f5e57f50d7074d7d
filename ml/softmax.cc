#include "ml/softmax.h"

#include <cmath>

#include "core/check.h"
#include "core/reduce.h"
#include "core/simd.h"
#include "ml/exp.h"

namespace murmur::ml {
namespace {

// x_j = Exp(x_j - shift), each element on its own: the same bits at any
// width. Compiled once per kernel level so that Exp's fused multiply-adds
// are instructions, not calls, in a portable build too.
[[gnu::always_inline]] inline void ShiftedExp(float* x, std::int64_t n, float shift) {
  for (std::int64_t j = 0; j < n; ++j) x[j] = Exp(x[j] - shift);
}
void ShiftedExpGeneric(float* x, std::int64_t n, float shift) { ShiftedExp(x, n, shift); }
#if defined(__x86_64__)
MURMUR_TARGET_AVX2 void ShiftedExpAvx2(float* x, std::int64_t n, float shift) { ShiftedExp(x, n, shift); }
MURMUR_TARGET_AVX512 void ShiftedExpAvx512(float* x, std::int64_t n, float shift) { ShiftedExp(x, n, shift); }
#endif

void ShiftedExpAt(SimdLevel level, float* x, std::int64_t n, float shift) {
  switch (level) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: ShiftedExpAvx512(x, n, shift); return;
    case SimdLevel::kAvx2: ShiftedExpAvx2(x, n, shift); return;
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  ShiftedExpGeneric(x, n, shift);
}

}  // namespace

double SoftmaxCrossEntropy(MatrixMap p, const Dataset& data, std::span<const SampleIndex> rows,
                           std::int64_t* correct, std::int32_t* pred) {
  const std::int64_t m = p.rows(), c = p.cols();
  const SimdLevel level = ActiveSimd();
  double loss = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    float* z = p.data() + i * c;
    const int y = data.labels[rows[static_cast<std::size_t>(i)]];
    MURMUR_CHECK(y >= 0 && y < c);
    // The first maximum (a NaN logit never wins, so a row of NaNs predicts class 0).
    std::int64_t arg = 0;
    for (std::int64_t j = 1; j < c; ++j)
      if (z[j] > z[arg]) arg = j;
    const float max = z[arg];
    if (correct != nullptr && arg == y) ++*correct;
    if (pred != nullptr) pred[i] = static_cast<std::int32_t>(arg);
    loss -= static_cast<double>(z[y] - max);  // z_y - max, before exponentiation
    ShiftedExpAt(level, z, c, max);
    const float sum = FixedSum({z, static_cast<std::size_t>(c)});
    loss += std::log(static_cast<double>(sum));
    for (std::int64_t j = 0; j < c; ++j) z[j] /= sum;
  }
  return loss;
}

void SoftmaxGradient(MatrixMap p, const Dataset& data, std::span<const SampleIndex> rows, std::size_t batch) {
  for (Eigen::Index i = 0; i < p.rows(); ++i) p(i, data.labels[rows[static_cast<std::size_t>(i)]]) -= 1.0f;
  p *= 1.0f / static_cast<float>(batch);
}

}  // namespace murmur::ml
