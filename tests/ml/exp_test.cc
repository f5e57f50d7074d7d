// ml/exp.h: murmur's float exponential against the exponential in double
// (relative error under 2^-22 over the whole finite range), its limits, and
// the softmax that uses it giving the same bits at every kernel level.
#include "ml/exp.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/simd.h"
#include "ml/softmax.h"

namespace murmur::ml {
namespace {

TEST_CASE("Exp is within 2^-22 of e^x in double over the normal range") {
  double worst = 0;
  std::uint64_t checked = 0;
  // Every 4099th float pattern: about a million values over every binade.
  for (std::uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) {
    const float x = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (!std::isfinite(x) || x > 88.72f || x < -87.3f) continue;  // results in the normal range
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(Exp(x) - want) / want);
    ++checked;
  }
  CAPTURE(worst);
  CHECK(checked > 500000);
  CHECK(worst < 0x1p-22);
  CHECK(Exp(0.0f) == 1.0f);
}

TEST_CASE("Exp's limits: overflow, underflow through the subnormals, NaN") {
  CHECK(Exp(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(Exp(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(Exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(Exp(-104.0f) == 0.0f);
  CHECK(std::isnan(Exp(std::numeric_limits<float>::quiet_NaN())));
  // Subnormal results: within one subnormal step (2^-149) of the true value.
  for (float x : {-88.0f, -95.5f, -100.0f, -103.0f}) {
    CAPTURE(x);
    CHECK(std::fabs(Exp(x) - std::exp(static_cast<double>(x))) <= 0x1p-149);
  }
}

TEST_CASE("softmax cross-entropy: the same bits at every kernel level, and the loss of its definition") {
  Dataset data;
  data.dim = 1;
  data.num_classes = 37;
  data.labels = {3, 0, 36};
  std::vector<float> logits(3 * 37);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i) * 0.7f) * 9.0f;
  const std::vector<SampleIndex> rows = {0, 1, 2};
  std::vector<float> first;
  double first_loss = 0;
  for (int l = 0; l <= static_cast<int>(SupportedSimd()); ++l) {
    CapSimd(static_cast<SimdLevel>(l));
    std::vector<float> p = logits;
    const double loss = SoftmaxCrossEntropy(MatrixMap(p.data(), 3, 37), data, rows, nullptr, nullptr);
    if (l == 0) {
      first = p;
      first_loss = loss;
      double want = 0;  // the definition in double
      for (int i = 0; i < 3; ++i) {
        double sum = 0;
        for (int j = 0; j < 37; ++j) sum += std::exp(static_cast<double>(logits[i * 37 + j]));
        want += std::log(sum) - logits[static_cast<std::size_t>(i * 37 + data.labels[i])];
      }
      CHECK(loss == doctest::Approx(want).epsilon(1e-6));
    }
    CHECK(std::memcmp(p.data(), first.data(), p.size() * 4) == 0);
    CHECK(std::bit_cast<std::uint64_t>(loss) == std::bit_cast<std::uint64_t>(first_loss));
  }
  CapSimd(SimdLevel::kAvx512);
}

}  // namespace
}  // namespace murmur::ml
