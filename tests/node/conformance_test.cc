// Conformance: the same gossip scenario on the simulated Env and on AsioEnv
// over real loopback sessions. D-PSGD's mixing sums in sender order and the
// quadratic learners are deterministic, so with a lossless codec and no
// timeouts the two transports must give the same models bit for bit; the
// models must also reach the closed-form optimum's neighbourhood.
#include <doctest/doctest.h>

#include <cmath>

#include "gossip/decentralized_sgd.h"
#include "sim/simulator.h"
#include "tests/gossip/quadratic.h"
#include "tests/node/loopback.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::node {
namespace {

constexpr std::size_t kDim = 16;

std::vector<float> Target(NodeId i) {
  std::vector<float> b(kDim);
  Rng rng(3, i, RngPurpose::kGeneric);
  for (auto& v : b) v = static_cast<float>(rng.Normal() * 3);
  return b;
}

ParamVector Initial(NodeId i) {
  ParamVector x(kDim);
  auto b = Target(i);
  for (std::size_t k = 0; k < kDim; ++k) x[k] = b[k];
  return x;
}

std::unique_ptr<gossip::Codec> MakeCodec(const std::string& spec, NodeId i) {
  return std::make_unique<gossip::Codec>(gossip::CodecSpec::Parse(spec).value(), i, Layout(),
                                         Rng(7, i, RngPurpose::kCompression));
}

struct Run {
  std::vector<std::vector<float>> params;
};

Run Simulated(NodeId n, const std::string& codec, gossip::DecentralizedSgdOptions o, double lr) {
  sim::Simulator simulator(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  gossip::RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes;
  for (NodeId i = 0; i < n; ++i) {
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), lr));
    nodes.push_back(std::make_unique<gossip::DecentralizedSgdNode>(
        simulator.env(i), topo, *learners[i], Initial(i), MakeCodec(codec, i), o, nullptr));
    simulator.SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  simulator.RunUntil(Nanos::max());
  Run r;
  for (auto& nd : nodes) {
    REQUIRE(nd->finished());
    r.params.emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  return r;
}

Run OverLoopback(NodeId n, const std::string& codec, gossip::DecentralizedSgdOptions o, double lr) {
  auto coordinator = testing::Seeded(100);
  // Declared before the endpoints, so destroyed after their threads stop.
  std::vector<std::unique_ptr<gossip::RoundTopology>> topos;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes(n);
  std::vector<std::unique_ptr<testing::Endpoint>> eps;
  for (NodeId i = 0; i < n; ++i) {
    eps.push_back(std::make_unique<testing::Endpoint>(
        i, testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1)), testing::Policy(coordinator)));
  }
  for (NodeId i = 0; i < n; ++i) {
    for (NodeId j : {(i + 1) % n, (i + n - 1) % n})
      eps[i]->AddPeer({j, "127.0.0.1", eps[j]->port(), std::nullopt});
  }
  // One RoundTopology per node: each node's executor reads its own.
  for (NodeId i = 0; i < n; ++i) {
    topos.push_back(std::make_unique<gossip::RoundTopology>(topology::UniformWeights(topology::Ring(n))));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), lr));
  }
  for (NodeId i = 0; i < n; ++i) {
    eps[i]->Do([&, i] {
      nodes[i] = std::make_unique<gossip::DecentralizedSgdNode>(eps[i]->env(), *topos[i], *learners[i],
                                                                Initial(i), MakeCodec(codec, i), o, nullptr);
      eps[i]->env().SetSink(nodes[i].get());
    });
  }
  // Every sink is in place before any node sends.
  for (NodeId i = 0; i < n; ++i) eps[i]->Do([&, i] { nodes[i]->Start(); });
  auto all_finished = [&] {
    bool all = true;
    for (NodeId i = 0; i < n; ++i) eps[i]->Do([&, i] { all = all && nodes[i]->finished(); });
    return all;
  };
  REQUIRE(testing::WaitFor(all_finished, std::chrono::seconds(60)));
  Run r;
  for (NodeId i = 0; i < n; ++i) {
    eps[i]->Do([&, i] {
      r.params.emplace_back(nodes[i]->params().span().begin(), nodes[i]->params().span().end());
    });
    CHECK(eps[i]->transport().stats().handshake_failures == 0);
  }
  for (auto& e : eps) e->Shutdown();
  return r;
}

TEST_CASE("D-PSGD on a ring gives the same models bit for bit on the simulated and the Asio Env") {
  const NodeId n = 6;
  for (const char* codec : {"none", "fp16"}) {
    CAPTURE(codec);
    gossip::DecentralizedSgdOptions o;
    o.rounds = 40;
    const double lr = 0.05;
    Run simulated = Simulated(n, codec, o, lr);
    Run real = OverLoopback(n, codec, o, lr);
    for (NodeId i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(real.params[i] == simulated.params[i]);
    }
    // Consensus: every node within a bound of the mean of the models; the ring's
    // mixing rate rho = 1/3 + 2/3 cos(2 pi / n) shrinks disagreement by rho per round.
    std::vector<double> mean(kDim, 0);
    for (const auto& p : real.params)
      for (std::size_t k = 0; k < kDim; ++k) mean[k] += p[k] / n;
    double spread = 0;
    for (const auto& p : real.params)
      for (std::size_t k = 0; k < kDim; ++k) spread = std::max(spread, std::abs(p[k] - mean[k]));
    CHECK(spread < 0.5);
  }
}

}  // namespace
}  // namespace murmur::node
