// The gossip tests' closed-form world: n quadratic learners (node i
// minimizes 0.5 ||x - b_i||^2, b_i ~ N(0, 9) per coordinate) on a simulator,
// the optimum (the mean of the b_i), and push-sum nodes over them.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gossip/push_sum.h"
#include "sim/net/simulator.h"
#include "tests/gossip/quadratic.h"

namespace murmur::gossip::testing {

inline constexpr std::size_t kDim = 8;

struct Fixture {
  explicit Fixture(NodeId n, double lr, double loss = 0.0, std::uint64_t seed = 1) {
    sim::SimulatorOptions o;
    o.seed = seed;
    o.network.message_loss = loss;
    sim = std::make_unique<sim::Simulator>(o, std::vector<sim::DeviceProfile>(n));
    for (NodeId i = 0; i < n; ++i) {
      std::vector<float> b(kDim);
      Rng rng(seed, i, RngPurpose::kGeneric);
      for (auto& v : b) v = static_cast<float>(rng.Normal() * 3);
      targets.push_back(b);
      learners.push_back(std::make_unique<QuadraticLearner>(b, lr));
    }
  }
  // The mean of the b_i: the minimizer of the average objective.
  std::vector<double> Optimum() const {
    std::vector<double> m(kDim, 0);
    for (const auto& b : targets)
      for (std::size_t k = 0; k < kDim; ++k) m[k] += b[k] / static_cast<double>(targets.size());
    return m;
  }
  // x0 of node i: its own b_i (so averaging alone must reach the mean).
  ParamVector Initial(NodeId i) const {
    ParamVector x(kDim);
    for (std::size_t k = 0; k < kDim; ++k) x[k] = targets[i][k];
    return x;
  }
  std::unique_ptr<Codec> MakeCodec(const std::string& spec, NodeId i) {
    auto cs = CodecSpec::Parse(spec).value();
    return std::make_unique<Codec>(cs, i, Layout(), Rng(7, i, RngPurpose::kCompression));
  }
  std::unique_ptr<sim::Simulator> sim;
  std::vector<std::vector<float>> targets;
  std::vector<std::unique_ptr<QuadraticLearner>> learners;
};

// Infinite when a model is not finite (a diverged run must not pass as close).
template <typename Node>
double MaxDistanceTo(const std::vector<std::unique_ptr<Node>>& nodes, const std::vector<double>& point) {
  double worst = 0;
  for (const auto& n : nodes) {
    for (std::size_t k = 0; k < kDim; ++k) {
      const double d = std::abs(n->params()[k] - point[k]);
      if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
      worst = std::max(worst, d);
    }
  }
  return worst;
}

// One push-sum node per learner of `f`, with the lossless codec, receiving
// through the simulator.
inline std::vector<std::unique_ptr<PushSumNode>> PushSumNodes(Fixture& f, RoundTopology& topo,
                                                              const PushSumOptions& o) {
  std::vector<std::unique_ptr<PushSumNode>> nodes;
  for (NodeId i = 0; i < f.learners.size(); ++i) {
    nodes.push_back(std::make_unique<PushSumNode>(f.sim->env(i), topo, *f.learners[i], f.Initial(i),
                                                  f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  return nodes;
}

}  // namespace murmur::gossip::testing
