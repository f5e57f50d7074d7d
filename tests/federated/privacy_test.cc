#include "federated/privacy.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "federated/accountant.h"

namespace murmur::federated {
namespace {

TEST_CASE("Every clipped update has norm at most C") {
  Rng rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    std::vector<float> v(1 + rng.UniformInt(500));
    const double scale = std::pow(10.0, rng.Uniform(-3, 3));
    for (float& x : v) x = static_cast<float>(scale * rng.Normal());
    const double c = std::pow(10.0, rng.Uniform(-2, 2));
    const double before = L2Norm(v);
    std::vector<float> orig = v;
    CHECK(ClipToNorm(v, c) == doctest::Approx(before));
    CHECK(L2Norm(v) <= c);
    if (before <= c) CHECK(v == orig);  // short updates are untouched
  }
}

TEST_CASE("Gaussian noise has the target standard deviation over 10^6 draws") {
  Rng rng(11);
  std::vector<double> v(1'000'000, 0.0);
  const double z = 1.1, c = 0.7;  // sigma = z C on the sum
  AddGaussianNoise(std::span<double>(v), z * c, rng);
  double s = 0, s2 = 0;
  for (double x : v) s += x, s2 += x * x;
  const double n = static_cast<double>(v.size());
  const double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  CHECK(std::fabs(sd / (z * c) - 1) < 0.02);
  CHECK(std::fabs(mean) < 5 * z * c / std::sqrt(n));
}

TEST_CASE("Adaptive clipping moves C geometrically toward the target quantile") {
  Rng rng(1);
  AdaptiveClip clip(1.0, {.target_quantile = 0.5, .lr = 0.2, .count_stddev = 0});
  clip.Update(10, 10, rng);  // everyone under C: shrink by exp(-0.2 * 0.5)
  CHECK(clip.clip() == doctest::Approx(std::exp(-0.1)));
  clip.Update(0, 10, rng);  // nobody under C: grow by exp(0.1)
  CHECK(clip.clip() == doctest::Approx(1.0));
}

TEST_CASE("Accountant: full-batch Gaussian mechanism is alpha / (2 sigma^2) exactly") {
  for (int a : {2, 3, 10, 64}) {
    CAPTURE(a);
    CHECK(RdpAccountant::SubsampledGaussianRdp(1.0, 1.7, a) == doctest::Approx(a / (2 * 1.7 * 1.7)));
  }
  CHECK(RdpAccountant::SubsampledGaussianRdp(0.0, 1.0, 5) == 0);
}

// Published values: Google's dp_accounting library,
// python/dp_accounting/dp_accounting/rdp/rdp_privacy_accountant_test.py,
// test_compute_rdp_poisson_sampled_gaussian: q = 0.01, noise multiplier 2.5,
// 50 steps; RDP at orders 5, 50, 100 is 2.18075656e-03, 2.38460375e-02 and
// 1.67416308e02 (asserted there with rtol 1e-4).
TEST_CASE("Accountant: subsampled Gaussian RDP matches dp_accounting's published values") {
  RdpAccountant acc({5, 50, 100});
  acc.Compose(0.01, 2.5, 50);
  CHECK(acc.rdp()[0] == doctest::Approx(2.18075656e-03).epsilon(1e-4));
  CHECK(acc.rdp()[1] == doctest::Approx(2.38460375e-02).epsilon(1e-4));
  CHECK(acc.rdp()[2] == doctest::Approx(1.67416308e02).epsilon(1e-4));
}

// Same file, test_compute_epsilon_delta_pure_dp: RDP 1.1 at orders 2..32 and
// delta 1e-5 give epsilon 1.32783806176 at order 32.
TEST_CASE("Accountant: RDP to (epsilon, delta) conversion matches dp_accounting") {
  std::vector<int> orders;
  for (int a = 2; a <= 32; ++a) orders.push_back(a);
  std::vector<double> rdp(orders.size(), 1.1);
  int best = 0;
  CHECK(RdpAccountant::EpsilonFromRdp(orders, rdp, 1e-5, &best) ==
        doctest::Approx(1.32783806176).epsilon(1e-9));
  CHECK(best == 32);
}

TEST_CASE("Accountant: epsilon grows with rounds and shrinks with noise") {
  RdpAccountant a, b, c;
  a.Compose(0.1, 1.0, 100);
  b.Compose(0.1, 1.0, 200);
  c.Compose(0.1, 2.0, 100);
  CHECK(a.Epsilon(1e-5) < b.Epsilon(1e-5));
  CHECK(c.Epsilon(1e-5) < a.Epsilon(1e-5));
  // Composition is additive: two halves equal one whole.
  RdpAccountant d;
  d.Compose(0.1, 1.0, 100);
  d.Compose(0.1, 1.0, 100);
  CHECK(d.Epsilon(1e-5) == doctest::Approx(b.Epsilon(1e-5)));
}

}  // namespace
}  // namespace murmur::federated
