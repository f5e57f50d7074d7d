#include "federated/aggregation.h"

#include <doctest/doctest.h>

#include <vector>

#include "federated/attack.h"

namespace murmur::federated {
namespace {

std::vector<double> Run(const RobustOptions& o, const std::vector<std::vector<float>>& u,
                        std::vector<double> center = {}) {
  std::vector<std::span<const float>> view;
  for (const auto& v : u) view.emplace_back(v);
  std::vector<double> out(u[0].size());
  REQUIRE(Aggregate(o, view, {}, center, out).ok());
  return out;
}

TEST_CASE("Coordinate median and trimmed mean on small vectors") {
  RobustOptions med;
  med.rule = AggregationRule::kMedian;
  auto odd = Run(med, {{1, 10}, {5, -1}, {3, 4}});
  CHECK(odd[0] == 3);
  CHECK(odd[1] == 4);
  auto even = Run(med, {{1}, {2}, {3}, {10}});
  CHECK(even[0] == 2.5);

  auto tm = ParseRobustRule("trimmed-mean:0.25").value();
  auto t = Run(tm, {{1, -100}, {2, 0}, {3, 1}, {100, 2}});
  CHECK(t[0] == 2.5);  // drop 1 and 100
  CHECK(t[1] == 0.5);  // drop -100 and 2
}

TEST_CASE("Krum selects the point with the tightest neighbourhood") {
  // 1-D points 0, 0.1, 0.25, 0.3, 10 with f = 1: each score sums the squared
  // distances to the K - f - 2 = 2 nearest others:
  //   0: 0.01 + 0.0625, 0.1: 0.01 + 0.0225, 0.25: 0.0025 + 0.0225, 0.3: 0.0025 + 0.04, 10: large.
  std::vector<std::vector<float>> u{{0}, {0.1f}, {0.25f}, {0.3f}, {10}};
  std::vector<std::span<const float>> view(u.begin(), u.end());
  auto scores = KrumScores(view, 1);
  CHECK(scores[2] == doctest::Approx(0.025));
  CHECK(scores[1] == doctest::Approx(0.0325));
  RobustOptions krum;
  krum.rule = AggregationRule::kKrum;
  CHECK(Run(krum, u)[0] == doctest::Approx(0.25));
  auto mk = ParseRobustRule("multi-krum:2").value();
  CHECK(Run(mk, u)[0] == doctest::Approx(0.175));  // mean of 0.25 and 0.1
  krum.krum_f = 3;                                 // needs K >= f + 3 = 6
  std::vector<double> out(1);
  CHECK(!Aggregate(krum, view, {}, {}, out).ok());
}

TEST_CASE("Centered clipping clips each update's pull on the center to tau") {
  auto cc = ParseRobustRule("centered-clipping:1").value();
  // From center 0: (3, 0) is pulled in to (1, 0); (0, 0.5) is inside the ball.
  auto v = Run(cc, {{3, 0}, {0, 0.5f}});
  CHECK(v[0] == doctest::Approx(0.5));
  CHECK(v[1] == doctest::Approx(0.25));
  // From center (1, 0), (3, 0) is at distance 2: pulled to (2, 0); (0, 0.5) at sqrt(1.25).
  auto w = Run(cc, {{3, 0}, {0, 0.5f}}, {1.0, 0.0});
  const double n = std::sqrt(1.25);
  CHECK(w[0] == doctest::Approx(1 + (1 + (-1) / n) / 2));
  CHECK(w[1] == doctest::Approx((0.5 / n) / 2));
  // Two iterations from 0 (Karimireddy et al. 2021, Eq. 2 repeated): v1 = (0.5, 0.25); then
  // (3, 0) - v1 = (2.5, -0.25) is clipped to norm 1, (0, 0.5) - v1 = (-0.5, 0.25) is inside.
  cc.clip_iters = 2;
  auto u = Run(cc, {{3, 0}, {0, 0.5f}});
  const double m = std::hypot(2.5, -0.25);
  CHECK(u[0] == doctest::Approx(0.5 + (2.5 / m - 0.5) / 2));
  CHECK(u[1] == doctest::Approx(0.25 + (-0.25 / m + 0.25) / 2));
}

TEST_CASE("Robust rule specs parse and bad ones are named") {
  CHECK(ParseRobustRule("median").value().rule == AggregationRule::kMedian);
  CHECK(ParseRobustRule("trimmed-mean").value().trim_beta == 0.1);
  CHECK(!ParseRobustRule("trimmed-mean:0.5").ok());
  CHECK(ParseRobustRule("bulyan").status().message().find("'bulyan'") != std::string::npos);
  CHECK(!ParseRobustRule("krum:x").ok());
  auto cc = ParseRobustRule("centered-clipping:0.3:3").value();
  CHECK(cc.clip_tau == 0.3);
  CHECK(cc.clip_iters == 3);
  CHECK(ParseRobustRule("centered-clipping:2").value().clip_iters == 1);
  CHECK(ParseRobustRule("centered-clipping:1:0").status().message().find("iterations") != std::string::npos);
}

TEST_CASE("ALIE's z and the attacks' effect on a round") {
  // Baruch et al. 2019: K = 50, f = 12 gives s = 14, z = Phi^-1(36/50) ~ 0.583.
  CHECK(AlieZ(50, 12) == doctest::Approx(0.5828).epsilon(1e-3));
  CHECK(NormalQuantile(0.975) == doctest::Approx(1.959964).epsilon(1e-6));
  std::vector<std::vector<float>> u{{1, 2}, {3, 2}, {5, 2}, {7, 2}};
  std::vector<std::span<float>> view(u.begin(), u.end());
  std::vector<bool> bad{false, false, false, true};
  Rng rng(1);
  auto flip = u;
  std::vector<std::span<float>> fv(flip.begin(), flip.end());
  ApplyAttack(AttackKind::kSignFlip, 1.0, fv, bad, rng);
  CHECK(flip[3][0] == -7);
  CHECK(flip[0][0] == 1);
  auto ipm = u;
  std::vector<std::span<float>> iv(ipm.begin(), ipm.end());
  ApplyAttack(AttackKind::kIpm, 0.5, iv, bad, rng);
  CHECK(ipm[3][0] == -2);  // -0.5 * mean 4
  // ALIE with K = 4, f = 1: s = 2, z = Phi^-1(0.5) = 0: the attacker sends the mean.
  ApplyAttack(AttackKind::kAlie, 1.0, view, bad, rng);
  CHECK(u[3][0] == doctest::Approx(4));
  CHECK(u[3][1] == doctest::Approx(2));
}

}  // namespace
}  // namespace murmur::federated
