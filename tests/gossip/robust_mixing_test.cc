// Robust gossip mixing: ClippedGossip's clipping and adaptive radius against
// hand-computed values, the neighbourhood rules, and bit-exact agreement with
// plain D-PSGD when nothing is clipped.
#include "gossip/robust_mixing.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "gossip/decentralized_sgd.h"
#include "sim/net/simulator.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

TEST_CASE("Clipping scales each neighbour's weight by min(1, tau / distance)") {
  std::vector<double> d = {1, 2, 4, 0};
  std::vector<float> w = {0.25f, 0.25f, 0.25f, 0.125f};
  ClipWeights(d, 2.0, w);
  CHECK(w[0] == 0.25f);   // inside the radius
  CHECK(w[1] == 0.25f);   // on it
  CHECK(w[2] == 0.125f);  // 4 clipped to 2: half the pull
  CHECK(w[3] == 0.125f);  // a copy of the node's own model
  ClipWeights(d, 0.0, w);
  CHECK(w[0] == 0.0f);
  CHECK(w[3] == 0.125f);
}

TEST_CASE("One ClippedGossip step equals x_i + sum_j W_ij CLIP(x_j - x_i, tau) worked by hand") {
  // x_i = (0, 0); x_1 = (3, 4) at distance 5, x_2 = (0, 1) at distance 1; W_ij = 1/3; tau = 2.
  // CLIP(x_1 - x_i, 2) = (3, 4) 2/5 = (1.2, 1.6); x_i' = (1.2, 1.6)/3 + (0, 1)/3 = (0.4, 0.8667).
  std::vector<double> d = {5, 1};
  std::vector<float> w = {1.0f / 3, 1.0f / 3};
  ClipWeights(d, 2.0, w);
  const float own = 1.0f - w[0] - w[1];
  const float x1[2] = {3, 4}, x2[2] = {0, 1};
  for (int c = 0; c < 2; ++c) {
    CAPTURE(c);
    const float xi = own * 0.0f + w[0] * x1[c] + w[1] * x2[c];
    CHECK(xi == doctest::Approx(c == 0 ? 0.4 : 2.6 / 3).epsilon(1e-6));
  }
}

TEST_CASE("The adaptive radius is the (b+1)-th largest neighbour distance") {
  // d = (1, 2, 10, 4): farthest first 10, 4, 2, 1.
  const std::vector<double> d = {1, 2, 10, 4};
  CHECK(OrderClipRadius(d, 1) == 4.0);
  CHECK(OrderClipRadius(d, 2) == 2.0);
  CHECK(OrderClipRadius(d, 3) == 1.0);
  CHECK(OrderClipRadius(d, 0) == std::numeric_limits<double>::infinity());
  // Every neighbour suspected: the smallest distance (reference code: one neighbour mixes unclipped).
  CHECK(OrderClipRadius(d, 4) == 1.0);
  CHECK(OrderClipRadius(d, 9) == 1.0);
  CHECK(OrderClipRadius(std::vector<double>{3.5}, 1) == 3.5);
  CHECK(OrderClipRadius(std::vector<double>{}, 1) == std::numeric_limits<double>::infinity());
  // In a clique of k equally weighted neighbours the suspect's pull is W tau with tau an honest
  // neighbour's distance, while the analysis radius would be sqrt(sum of the k - 1 others' d^2).
  const std::vector<double> clique = {1, 1, 1, 1, 1, 1, 1, 9};
  const std::vector<float> w(8, 0.1f);
  CHECK(OrderClipRadius(clique, 1) == 1.0);
  CHECK(WeightedClipRadius(clique, w, 1) == doctest::Approx(std::sqrt(7.0)).epsilon(1e-6));
  MixingOptions o;
  o.rule = MixingRule::kClipped;
  CHECK(ClipRadius(o, clique, w) == 1.0);
  o.radius = RadiusRule::kWeighted;
  CHECK(ClipRadius(o, clique, w) == doctest::Approx(std::sqrt(7.0)).epsilon(1e-6));
  o.clip_radius = 0.5;
  CHECK(ClipRadius(o, clique, w) == 0.5);
}

TEST_CASE("With an honest majority a node suspects at most floor((k - 1) / 2) of its k neighbours") {
  MixingOptions o;
  o.rule = MixingRule::kClipped;
  o.suspects = 2;
  o.honest_majority = true;
  const std::vector<float> w(9, 0.1f);
  // k = 2 (a ring node): nobody suspected, the radius is infinite and nothing is clipped.
  CHECK(ClipRadius(o, std::vector<double>{1, 5}, {w.data(), 2}) == std::numeric_limits<double>::infinity());
  // k = 3 (a ring node with an attached attacker): one suspect, the second-largest distance.
  CHECK(ClipRadius(o, std::vector<double>{1, 5, 2}, {w.data(), 3}) == 2.0);
  // k = 5: both suspects, the third-largest distance; a NaN model does not count towards k.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(ClipRadius(o, std::vector<double>{1, 5, 2, 4, 3}, {w.data(), 5}) == 3.0);
  CHECK(ClipRadius(o, std::vector<double>{1, 5, nan, 4}, {w.data(), 4}) == 4.0);
  o.honest_majority = false;
  CHECK(ClipRadius(o, std::vector<double>{1, 5}, {w.data(), 2}) == 1.0);
}

TEST_CASE("The weighted radius is sqrt(sum over the unsuspected of W d^2 / the suspected weight)") {
  // d = (1, 2, 10), W = (0.2, 0.3, 0.25).
  const std::vector<double> d = {1, 2, 10};
  const std::vector<float> w = {0.2f, 0.3f, 0.25f};
  // One suspect, the farthest (W 0.25): tau^2 = (0.2 * 1 + 0.3 * 4) / 0.25 = 5.6.
  CHECK(WeightedClipRadius(d, w, 1) == doctest::Approx(std::sqrt(5.6)).epsilon(1e-6));
  // Two suspects (W 0.25 + 0.3): tau^2 = 0.2 / 0.55.
  CHECK(WeightedClipRadius(d, w, 2) == doctest::Approx(std::sqrt(0.2 / 0.55)).epsilon(1e-6));
  CHECK(WeightedClipRadius(d, w, 0) == std::numeric_limits<double>::infinity());
  CHECK(WeightedClipRadius(d, w, 3) == 0.0);
  CHECK(WeightedClipRadius(d, w, 9) == 0.0);
  // The suspected neighbour then moves x_i by W_ib tau = sqrt(delta sum_good W d^2), whatever it sent.
  std::vector<float> clipped = w;
  const double tau = WeightedClipRadius(d, w, 1);
  ClipWeights(d, tau, clipped);
  CHECK(clipped[2] * d[2] == doctest::Approx(std::sqrt(0.25 * 1.4)).epsilon(1e-6));
  CHECK(clipped[0] == w[0]);
  CHECK(clipped[1] == w[1]);
}

TEST_CASE("On a ring with one suspect both radii are the second-largest distance") {
  // The rule of the authors' reference code (SelfCenteredClipping: tau = sorted(distances)[-2]).
  const std::vector<float> w = {1.0f / 3, 1.0f / 3};
  for (double near : {0.1, 1.0, 3.0}) {
    for (double far : {3.0, 7.5}) {
      CAPTURE(near);
      CAPTURE(far);
      for (const auto& d : {std::vector<double>{near, far}, std::vector<double>{far, near}}) {
        CHECK(OrderClipRadius(d, 1) == near);
        CHECK(WeightedClipRadius(d, w, 1) == doctest::Approx(near).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("Neighbourhood median and trimmed mean, coordinate by coordinate") {
  const std::vector<float> self = {0, 10};
  const std::vector<float> a = {1, -5}, b = {100, 7}, c = {2, 8}, e = {-50, 9};
  std::vector<const float*> three = {a.data(), b.data()};
  std::vector<float> out(2);
  MixingOptions median;
  median.rule = MixingRule::kMedian;
  MixNeighbourhood(median, self, three, out);
  CHECK(out[0] == 1.0f);  // median of {0, 1, 100}
  CHECK(out[1] == 7.0f);  // median of {10, -5, 7}
  std::vector<const float*> five = {a.data(), b.data(), c.data(), e.data()};
  MixingOptions trimmed;
  trimmed.rule = MixingRule::kTrimmedMean;
  trimmed.trim = 1;
  MixNeighbourhood(trimmed, self, five, out);
  CHECK(out[0] == doctest::Approx(1.0));  // {-50, 0, 1, 2, 100} -> mean of {0, 1, 2}
  CHECK(out[1] == doctest::Approx(8.0));  // {-5, 7, 8, 9, 10} -> mean of {7, 8, 9}
  trimmed.trim = 5;                       // capped at (5 - 1) / 2 = 2: the median
  MixNeighbourhood(trimmed, self, five, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 8.0f);
}

TEST_CASE("A neighbour's model with NaN or infinity is left out by every robust rule") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // Distances of such models are not finite: zero weight, and no part in the adaptive radius.
  std::vector<double> d = {1, static_cast<double>(inf), static_cast<double>(nan), 2};
  std::vector<float> w = {0.2f, 0.2f, 0.2f, 0.2f};
  const double tau = OrderClipRadius(d, 1);
  CHECK(tau == 1.0);  // the farthest finite one (2) suspected, the other (1) good
  CHECK(WeightedClipRadius(d, w, 1) == doctest::Approx(1.0));
  ClipWeights(d, tau, w);
  CHECK(w == std::vector<float>{0.2f, 0.0f, 0.0f, 0.1f});
  const std::vector<float> self = {0}, a = {1}, b = {nan}, c = {inf}, e = {3};
  std::vector<const float*> n = {a.data(), b.data(), c.data(), e.data()};
  std::vector<float> out(1);
  MixingOptions median;
  median.rule = MixingRule::kMedian;
  MixNeighbourhood(median, self, n, out);
  CHECK(out[0] == 1.0f);  // median of {0, 1, 3}
}

TEST_CASE("Mixing rules parse, bad specs are named") {
  CHECK(ParseMixingRule("mean").value().rule == MixingRule::kMean);
  auto adaptive = ParseMixingRule("clipped", 2).value();
  CHECK(adaptive.rule == MixingRule::kClipped);
  CHECK(adaptive.clip_radius == 0);
  CHECK(adaptive.suspects == 2);
  CHECK(adaptive.radius == RadiusRule::kOrder);
  auto weighted = ParseMixingRule("clipped-weighted", 3).value();
  CHECK(weighted.rule == MixingRule::kClipped);
  CHECK(weighted.radius == RadiusRule::kWeighted);
  CHECK(weighted.suspects == 3);
  CHECK(ParseMixingRule("clipped:0.5").value().clip_radius == 0.5);
  CHECK(ParseMixingRule("median").value().rule == MixingRule::kMedian);
  CHECK(ParseMixingRule("trimmed-mean").value().trim == 1);
  CHECK(ParseMixingRule("trimmed-mean:2").value().trim == 2);
  for (const char* bad : {"clipped:0", "clipped:-1", "clipped:x", "clipped:", "trimmed-mean:0.5", "median:1",
                          "krum", "mean:2", "clipped-weighted:1"}) {
    CAPTURE(bad);
    auto r = ParseMixingRule(bad);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(std::string("'") + bad + "'") != std::string::npos);
  }
}

// D-PSGD on a ring of quadratics; returns every node's final model.
std::vector<std::vector<float>> RunRing(const MixingOptions& mixing, const char* codec) {
  constexpr NodeId kNodes = 8;
  constexpr std::size_t kDim = 6;
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(kNodes));
  RoundTopology topo(topology::UniformWeights(topology::Ring(kNodes)));
  std::vector<std::unique_ptr<testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
  DecentralizedSgdOptions o;
  o.rounds = 40;
  o.mixing = mixing;
  for (NodeId i = 0; i < kNodes; ++i) {
    std::vector<float> b(kDim);
    Rng rng(3, i, RngPurpose::kGeneric);
    for (auto& v : b) v = static_cast<float>(rng.Normal() * 3);
    learners.push_back(std::make_unique<testing::QuadraticLearner>(b, 0.1));
    ParamVector x0(kDim);
    for (std::size_t k = 0; k < kDim; ++k) x0[k] = b[k];
    auto spec = CodecSpec::Parse(codec).value();
    nodes.push_back(std::make_unique<DecentralizedSgdNode>(
        sim.env(i), topo, *learners[i], std::move(x0),
        std::make_unique<Codec>(spec, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, nullptr));
    sim.SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  sim.RunUntil(Nanos::max());
  std::vector<std::vector<float>> out;
  for (auto& nd : nodes) {
    REQUIRE(nd->finished());
    out.emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  return out;
}

TEST_CASE("Without attackers and with a radius nothing reaches, ClippedGossip is plain gossip bit for bit") {
  const auto plain = RunRing(MixingOptions{}, "none");
  MixingOptions huge;
  huge.rule = MixingRule::kClipped;
  huge.clip_radius = 1e30;
  MixingOptions nobody_suspected;
  nobody_suspected.rule = MixingRule::kClipped;
  nobody_suspected.suspects = 0;  // adaptive radius +infinity
  for (const MixingOptions& o : {huge, nobody_suspected}) {
    const auto clipped = RunRing(o, "none");
    for (std::size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(plain[i].data(), clipped[i].data(), plain[i].size() * sizeof(float)) == 0);
    }
  }
  // And a radius that does bite changes the run (the test above is not vacuous).
  MixingOptions tight;
  tight.rule = MixingRule::kClipped;
  tight.clip_radius = 1e-3;
  const auto changed = RunRing(tight, "none");
  CHECK(std::memcmp(plain[0].data(), changed[0].data(), plain[0].size() * sizeof(float)) != 0);
}

}  // namespace
}  // namespace murmur::gossip
