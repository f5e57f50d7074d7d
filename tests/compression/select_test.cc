#include "compression/select.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace murmur::compression {
namespace {

// The reference: a full sort by (|x| descending, index ascending), first k, by index.
std::vector<std::uint32_t> ReferenceTopK(const std::vector<float>& x, std::size_t k) {
  std::vector<std::uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(std::min(k, x.size()));
  std::sort(order.begin(), order.end());
  return order;
}

std::vector<float> Draw(int dist, std::size_t n, Rng& rng) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (dist) {
      case 0: x[i] = static_cast<float>(rng.Normal()); break;
      case 1:
        x[i] = static_cast<float>(rng.Exponential(1.0) * (rng.Bernoulli(0.5) ? 1 : -1));
        break;                                                                                   // Laplace
      case 2: x[i] = static_cast<float>(rng.Normal() / std::sqrt(rng.Gamma(1.5) / 1.5)); break;  // Student t3
      case 3: x[i] = static_cast<float>(static_cast<int>(rng.UniformInt(7)) - 3); break;         // many ties
      case 4:
        x[i] = static_cast<float>(rng.Normal() * std::pow(10.0, static_cast<double>(i / 1000 % 4) - 2));
        break;
      default: x[i] = static_cast<float>(rng.Uniform(-1, 1)); break;
    }
  }
  return x;
}

TEST_CASE("Exact top-k returns exactly the k largest |x| with ties to the lowest index") {
  Rng rng(1);
  for (int dist = 0; dist < 6; ++dist) {
    for (std::size_t n : {1u, 17u, 1000u, 40000u}) {
      for (std::size_t k : {0ul, 1ul, 3ul, n / 100, n / 2, n - 1, n, n + 5}) {
        CAPTURE(dist);
        CAPTURE(n);
        CAPTURE(k);
        std::vector<float> x = Draw(dist, n, rng);
        std::vector<std::uint32_t> got;
        TopKExact(x, k, got);
        REQUIRE(got == ReferenceTopK(x, k));
      }
    }
  }
  // nth_element agrees on the k-th largest |x|.
  std::vector<float> x = Draw(2, 100000, rng);
  std::vector<std::uint32_t> got;
  TopKExact(x, 100, got);
  std::vector<float> mags(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) mags[i] = std::fabs(x[i]);
  std::nth_element(mags.begin(), mags.begin() + 99, mags.end(), std::greater<float>());
  float kth = mags[99], smallest = INFINITY;
  for (std::uint32_t i : got) smallest = std::min(smallest, std::fabs(x[i]));
  CHECK(smallest == kth);
}

TEST_CASE("Fused accumulation selects on r + x and leaves r = r + x") {
  Rng rng(2);
  std::vector<float> x = Draw(0, 5000, rng), r = Draw(1, 5000, rng), sum(5000);
  for (std::size_t i = 0; i < x.size(); ++i) sum[i] = r[i] + x[i];
  std::vector<std::uint32_t> got;
  TopKExactAccumulate(r, x, 50, got);
  CHECK(r == sum);
  CHECK(got == ReferenceTopK(sum, 50));
}

TEST_CASE(
    "Approximate top-k of short vectors (under one sample chunk, or sampling most of it) is the exact "
    "top-k") {
  // A vector shorter than 16 values once made an empty sample and read past it.
  for (std::size_t n = 1; n <= 40; ++n) {
    Rng data_rng(n);
    std::vector<float> x(n);
    for (float& v : x) v = static_cast<float>(data_rng.Normal());
    for (std::size_t k = 0; k <= n; ++k) {
      CAPTURE(n);
      CAPTURE(k);
      Rng rng(n * 100 + k);
      std::vector<std::uint32_t> got, exact;
      TopKApprox(x, k, rng, got);
      TopKExact(x, k, exact);
      CHECK(got == exact);
    }
  }
}

TEST_CASE("Approximate top-k lands within [0.8k, 1.3k] and keeps the largest") {
  for (int dist = 0; dist < 6; ++dist) {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
      for (std::size_t k : {200ul, 2000ul}) {
        CAPTURE(dist);
        CAPTURE(seed);
        CAPTURE(k);
        Rng data_rng(100 + seed);
        std::vector<float> x = Draw(dist, 200000, data_rng);
        Rng rng(seed, 0, RngPurpose::kCompression);
        std::vector<std::uint32_t> got;
        TopKApprox(x, k, rng, got);
        REQUIRE(got.size() >= (8 * k + 9) / 10);
        REQUIRE(got.size() <= 13 * k / 10);
        // What is kept is a top set: as large as any element left out.
        float kept_min = INFINITY, left_max = 0;
        std::vector<bool> in(x.size());
        for (std::uint32_t i : got) in[i] = true, kept_min = std::min(kept_min, std::fabs(x[i]));
        for (std::size_t i = 0; i < x.size(); ++i)
          if (!in[i]) left_max = std::max(left_max, std::fabs(x[i]));
        REQUIRE(kept_min >= left_max);
      }
    }
  }
}

TEST_CASE("Threshold keeps exactly |x| >= tau") {
  std::vector<float> x = {0.5f, -1.0f, 0.999f, 1.0f, -3.0f, 0.0f};
  std::vector<std::uint32_t> got;
  ThresholdSelect(x, 1.0f, got);
  CHECK(got == std::vector<std::uint32_t>{1, 3, 4});
}

}  // namespace
}  // namespace murmur::compression
