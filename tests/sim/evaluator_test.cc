// The evaluator's averaged model x_bar is the exact mean of the models to
// within the bound sim/run/evaluator.cc states, the same bit for bit in any order
// of the models and however they are spread over ranks.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <thread>

#include "core/rng.h"
#include "sim/ranks/thread_ranks.h"
#include "sim/run/evaluator.h"

namespace murmur::sim {
namespace {

constexpr std::size_t kDim = 600;
__extension__ typedef __int128 Int128;  // GCC and Clang; __extension__ keeps -pedantic quiet

// A test set of one sample (only its size matters here).
ml::Dataset OneSample() {
  ml::Dataset d;
  d.name = "one";
  d.num_samples = 1;
  d.dim = 1;
  d.num_classes = 2;
  d.features.push_back(0);
  d.labels.push_back(0);
  return d;
}

// Models whose coordinates span 2^-40 .. 2^12 in magnitude, of both signs;
// coordinate 0 is zero in every model, coordinate 1 holds subnormals.
std::vector<ParamVector> Models(std::size_t n) {
  Rng rng(11, 0, RngPurpose::kGeneric);
  std::vector<ParamVector> models;
  for (std::size_t i = 0; i < n; ++i) {
    ParamVector x(kDim);
    for (std::size_t k = 2; k < kDim; ++k) {
      const int e = static_cast<int>(rng.NextU32() % 53) - 40;
      const float sign = rng.NextU32() % 2 == 0 ? 1.0f : -1.0f;
      x[k] = sign * std::ldexp(1.0f + rng.UniformFloat(), e);
    }
    x[1] = std::ldexp(static_cast<float>(i + 1), -149);  // (i + 1) x the least subnormal
    models.push_back(std::move(x));
  }
  return models;
}

// The x_bar the evaluator measures, caught from rank 0's last call of the
// measure (x_bar's, after the evaluated nodes'); the models on `ranks`
// thread ranks, model j on rank owner(j).
template <typename Owner>
ParamVector XBarOnRanks(const std::vector<ParamVector>& models, int ranks, Owner owner) {
  const ml::Dataset test = OneSample();
  auto group = MakeThreadRanks(ranks);
  ParamVector xbar;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      ThreadPool pool(1);
      Evaluator::Measure measure = [&](const ParamVector& x, std::span<const ml::SampleIndex>, ThreadPool*) {
        if (r == 0) xbar = x.Clone();
        return ml::Evaluation{};
      };
      Layout layout;
      layout.Add("flat", {static_cast<std::int64_t>(kDim)});
      Evaluator ev(measure, layout, false, test, /*eval_nodes=*/1, /*eval_samples=*/1, 1, pool);
      std::vector<const ParamVector*> mine;
      std::vector<std::size_t> positions;
      for (std::size_t j = 0; j < models.size(); ++j) {
        if (owner(j) != r) continue;
        mine.push_back(&models[j]);
        positions.push_back(j);
      }
      ev.Evaluate(mine, {}, *group[r], positions, models.size());
    });
  }
  for (auto& t : threads) t.join();
  return xbar;
}

TEST_CASE("x_bar is the exact mean within 2^(e + 1 + L - 62) plus a float rounding, in any order and split") {
  const std::size_t n = 37;
  const std::vector<ParamVector> models = Models(n);
  const ParamVector x = XBarOnRanks(models, 1, [](std::size_t) { return 0; });
  REQUIRE(x.size() == kDim);
  // Outside truth: the exact sum in 128-bit fixed point (every float here is
  // a multiple of 2^-149 below 2^13 in magnitude: 162 bits would be needed in
  // general, so coordinates 2.. are summed on the 2^-64 grid, exact for
  // |x| >= 2^-40, and coordinate 1 on the 2^-149 grid).
  CHECK(x[0] == 0.0f);
  CHECK(x[1] == std::ldexp(static_cast<float>((n + 1) / 2), -149));  // the mean of 1..37 is 19
  const int L = std::bit_width(n);
  for (std::size_t k = 2; k < kDim; ++k) {
    CAPTURE(k);
    Int128 sum = 0;
    float largest = 0;
    for (const ParamVector& m : models) {
      sum += static_cast<Int128>(std::ldexp(static_cast<double>(m[k]), 64));
      largest = std::max(largest, std::fabs(m[k]));
    }
    const long double exact = static_cast<long double>(sum) / std::ldexp(1.0L, 64) / n;
    const long double bound = std::ldexp(1.0L, std::ilogb(largest) + 1 + L - 62) +
                              std::ldexp(1.0L, std::ilogb(static_cast<float>(exact)) - 23);
    CHECK(std::fabs(static_cast<long double>(x[k]) - exact) <= bound);
  }
  // The same bits in reverse order and spread over ranks in any way.
  std::vector<ParamVector> reversed;
  for (std::size_t j = n; j-- > 0;) reversed.push_back(models[j].Clone());
  CHECK(std::ranges::equal(XBarOnRanks(reversed, 1, [](std::size_t) { return 0; }).span(), x.span()));
  CHECK(std::ranges::equal(
      XBarOnRanks(models, 3, [](std::size_t j) { return static_cast<int>((j * 7) % 3); }).span(), x.span()));
  CHECK(std::ranges::equal(XBarOnRanks(models, 2, [](std::size_t j) { return j < 30 ? 1 : 0; }).span(),
                           x.span()));
}

TEST_CASE("A coordinate where some model is not finite averages to NaN, the others stay exact") {
  std::vector<ParamVector> models = Models(4);
  models[2][5] = std::numeric_limits<float>::infinity();
  models[1][7] = std::numeric_limits<float>::quiet_NaN();
  const ParamVector x = XBarOnRanks(models, 2, [](std::size_t j) { return static_cast<int>(j % 2); });
  CHECK(std::isnan(x[5]));
  CHECK(std::isnan(x[7]));
  CHECK(std::isfinite(x[6]));
}

}  // namespace
}  // namespace murmur::sim
