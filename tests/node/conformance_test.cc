// Conformance: the same gossip scenario on the simulated Env and on AsioEnv
// over real loopback sessions. D-PSGD's mixing sums in sender order and the
// quadratic learners are deterministic, so with a lossless codec and no
// timeouts the two transports must give the same models bit for bit; the
// models must also reach the closed-form optimum's neighbourhood. Push-sum,
// DSGT and CHOCO-SGD (top-k with error feedback) are built by the one builder
// both hosts use (engine/gossip_builder.h) and must agree bit for bit as well.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/gossip_builder.h"
#include "engine/topology.h"
#include "gossip/decentralized_sgd.h"
#include "node/job/checkpoint.h"
#include "proto/node.pb.h"
#include "sim/net/simulator.h"
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

// Starts every node on its endpoint's thread (every sink is in place before
// any node sends), waits until `done` holds for each, and collects the models.
template <class Node, class Done>
Run StartAndCollect(std::vector<std::unique_ptr<testing::Endpoint>>& eps,
                    std::vector<std::unique_ptr<Node>>& nodes, Done done) {
  const NodeId n = static_cast<NodeId>(nodes.size());
  for (NodeId i = 0; i < n; ++i) eps[i]->Do([&, i] { nodes[i]->Start(); });
  auto all_finished = [&] {
    bool all = true;
    for (NodeId i = 0; i < n; ++i) eps[i]->Do([&, i] { all = all && done(*nodes[i]); });
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

Run OverLoopback(NodeId n, const std::string& codec, gossip::DecentralizedSgdOptions o, double lr) {
  auto coordinator = testing::Seeded(100);
  // Declared before the endpoints, so destroyed after their threads stop.
  std::vector<std::unique_ptr<gossip::RoundTopology>> topos;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes(n);
  std::vector<std::unique_ptr<testing::Endpoint>> eps;
  for (NodeId i = 0; i < n; ++i) {
    eps.push_back(std::make_unique<testing::Endpoint>(
        i, testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1), "fleet", 3600, crypto::kRoleNode, i),
        testing::Policy(coordinator)));
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
  return StartAndCollect(eps, nodes, [&](const auto& node) { return node.finished(); });
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

// The job murmurd would run, on the quadratic learners: every node starts at
// x0 = 0 (CHOCO's public copies assume a common start).
struct AlgorithmCase {
  std::string algorithm;
  std::string compression;
  double gamma;
  std::string outer = "";  // diloco: the outer optimizer (empty: the spec's default, nesterov)
};

proto::JobConfig QuadraticJob(const AlgorithmCase& c, NodeId n, std::uint64_t rounds) {
  proto::JobConfig job;
  job.mutable_spec()->set_algorithm(c.algorithm);
  job.mutable_spec()->set_compression(c.compression);
  job.mutable_spec()->set_gamma(c.gamma);
  if (!c.outer.empty()) job.mutable_spec()->set_outer_optimizer(c.outer);
  job.mutable_spec()->set_nodes(n);
  job.mutable_spec()->set_topology("ring");
  job.mutable_spec()->set_rounds(rounds);
  job.mutable_spec()->set_seed(7);
  return job;
}

// Built as both hosts build it (engine/gossip_builder.h), with a daemon's catch-up.
std::unique_ptr<gossip::Node> MakeQuadraticNode(const proto::JobConfig& job, Env& env,
                                                gossip::RoundTopology& topo, LocalLearner& learner,
                                                std::uint64_t first_round = 0) {
  engine::GossipHost host;
  host.env = &env;
  host.topology = &topo;
  host.learner = &learner;
  host.nodes = job.spec().nodes();
  host.first_round = first_round;
  host.catch_up = true;
  auto plan = engine::PlanJob(job.spec(), engine::Host::kDaemon);
  REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
  auto made = engine::MakeGossipNode(*plan, ParamVector(kDim), host);
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  return std::move(made).value();
}

engine::GraphTopology TopologyOf(const proto::JobConfig& job) {
  auto t = engine::MakeGraphTopology(job.spec(), job.spec().nodes());
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  return std::move(t).value();
}

// With `from`, every node resumes from its checkpoint; with `to`, every
// node's final state is checkpointed (through the file encoding).
Run SimulatedJob(const proto::JobConfig& job, double lr, const std::vector<Checkpoint>* from = nullptr,
                 std::vector<Checkpoint>* to = nullptr) {
  const NodeId n = job.spec().nodes();
  sim::Simulator simulator(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  std::vector<engine::GraphTopology> topos;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::Node>> nodes;
  for (NodeId i = 0; i < n; ++i) {
    topos.push_back(TopologyOf(job));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), lr));
    nodes.push_back(MakeQuadraticNode(job, simulator.env(i), *topos[i].rounds, *learners[i],
                                      from != nullptr ? (*from)[i].round : 0));
    if (from != nullptr) {
      gossip::NodeState state{(*from)[i].vectors, (*from)[i].scalars, (*from)[i].wide};
      REQUIRE(nodes.back()->ImportState(state).ok());
    }
    simulator.SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  simulator.RunUntil(Nanos::max());
  Run r;
  for (auto& nd : nodes) {
    REQUIRE(nd->round() == job.spec().rounds());
    r.params.emplace_back(nd->params().span().begin(), nd->params().span().end());
    if (to != nullptr) {
      Checkpoint c;
      c.round = nd->round();
      c.params = r.params.back();
      auto exported = nd->ExportState();
      REQUIRE(exported.ok());
      gossip::NodeState state = std::move(exported).value();
      c.vectors = std::move(state.vectors);
      c.scalars = std::move(state.scalars);
      c.wide = std::move(state.wide);
      auto back = DecodeCheckpoint(EncodeCheckpoint(c), kDim);
      REQUIRE(back.ok());
      to->push_back(std::move(back).value());
    }
  }
  return r;
}

Run JobOverLoopback(const proto::JobConfig& job, double lr) {
  const NodeId n = job.spec().nodes();
  auto coordinator = testing::Seeded(100);
  std::vector<engine::GraphTopology> topos;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::Node>> nodes(n);
  std::vector<std::unique_ptr<testing::Endpoint>> eps;
  for (NodeId i = 0; i < n; ++i) {
    eps.push_back(std::make_unique<testing::Endpoint>(
        i, testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1), "fleet", 3600, crypto::kRoleNode, i),
        testing::Policy(coordinator)));
  }
  for (NodeId i = 0; i < n; ++i) {
    topos.push_back(TopologyOf(job));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), lr));
  }
  for (NodeId i = 0; i < n; ++i) {
    for (NodeId j : engine::NeighboursOf(*topos[i].schedule, i))
      eps[i]->AddPeer({j, "127.0.0.1", eps[j]->port(), std::nullopt});
  }
  for (NodeId i = 0; i < n; ++i) {
    eps[i]->Do([&, i] {
      nodes[i] = MakeQuadraticNode(job, eps[i]->env(), *topos[i].rounds, *learners[i]);
      eps[i]->env().SetSink(nodes[i].get());
    });
  }
  return StartAndCollect(eps, nodes, [&](const auto& node) { return node.round() == job.spec().rounds(); });
}

TEST_CASE(
    "Push-sum, DSGT and CHOCO top-k with error feedback give the same models bit for bit on both Envs") {
  const NodeId n = 6;
  const double lr = 0.2;
  // The network optimum of (1/n) sum_i 0.5 ||x - b_i||^2: the mean of the b_i.
  std::vector<double> optimum(kDim, 0);
  for (NodeId i = 0; i < n; ++i) {
    auto b = Target(i);
    for (std::size_t k = 0; k < kDim; ++k) optimum[k] += b[k] / n;
  }
  // Tolerances on |mean of the models - optimum|: D-PSGD-like updates move the
  // mean of the x_i by exactly -lr (mean - optimum) per round when every
  // message arrives (doubly stochastic W; for CHOCO sum_i (s_i - x^_i) = 0; for
  // DSGT the mean tracker is the mean gradient), so after 80 rounds at lr 0.2
  // only (0.8)^80 ~ 2e-8 of the start and float rounding remain. Push-sum's
  // z_i = x_i / w_i average to the optimum only at consensus.
  const AlgorithmCase cases[] = {
      {"push-sum", "none", 0},
      {"dsgt", "none", 0},
      {"dpsgd", "topk:0.25", 0.2},
  };
  for (const AlgorithmCase& c : cases) {
    CAPTURE(c.algorithm);
    CAPTURE(c.compression);
    auto job = QuadraticJob(c, n, 80);
    Run simulated = SimulatedJob(job, lr);
    Run real = JobOverLoopback(job, lr);
    for (NodeId i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(real.params[i] == simulated.params[i]);
    }
    double err = 0;
    for (std::size_t k = 0; k < kDim; ++k) {
      double mean = 0;
      for (const auto& p : real.params) mean += p[k] / n;
      err = std::max(err, std::abs(mean - optimum[k]));
    }
    MESSAGE(c.algorithm << " " << c.compression << ": |mean - optimum| = " << err);
    CHECK(err < 1e-4);
  }
}

TEST_CASE(
    "Every gossip algorithm stopped after round 30 and resumed from its checkpoints ends as a run never "
    "stopped") {
  const NodeId n = 6;
  const double lr = 0.2;
  const AlgorithmCase cases[] = {
      {"dpsgd", "none", 0},
      {"dpsgd-cta", "fp16", 0},
      {"push-sum", "none", 0},
      {"dsgt", "none", 0},
      {"dpsgd", "topk:0.25", 0.2},
      {"dpsgd", "topk:0.25,no-ef", 0.2},
      {"diloco", "none", 0},
      {"diloco", "topk:0.25", 0.2, "adam"},
      {"allreduce", "none", 0},
      {"diloco-allreduce", "fp16", 0},
      {"diloco-allreduce", "powersgd:1", 0},
  };
  for (const AlgorithmCase& c : cases) {
    CAPTURE(c.algorithm);
    CAPTURE(c.compression);
    Run whole = SimulatedJob(QuadraticJob(c, n, 60), lr);
    std::vector<Checkpoint> saved;
    Run first = SimulatedJob(QuadraticJob(c, n, 30), lr, nullptr, &saved);
    Run resumed = SimulatedJob(QuadraticJob(c, n, 60), lr, &saved);
    for (NodeId i = 0; i < n; ++i) {
      CAPTURE(i);
      CHECK(saved[i].round == 30);
      CHECK(first.params[i] != whole.params[i]);  // the second half changed the models
      CHECK(resumed.params[i] == whole.params[i]);
    }
  }
}

TEST_CASE("A resumed node refuses a state that lacks a vector or has the wrong size, naming it") {
  proto::JobConfig job = QuadraticJob({"dsgt", "none", 0}, 4, 10);
  sim::Simulator simulator(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(4));
  engine::GraphTopology topo = TopologyOf(job);
  gossip::testing::QuadraticLearner learner(Target(0), 0.1);
  auto node = MakeQuadraticNode(job, simulator.env(0), *topo.rounds, learner, 5);
  gossip::NodeState state;
  state.vectors["x"].assign(kDim, 0.0f);
  state.vectors["y"].assign(kDim, 0.0f);
  Status missing = node->ImportState(state);
  CHECK(missing.code() == StatusCode::kNotFound);
  CHECK(missing.message().find("'g'") != std::string::npos);
  state.vectors["g"].assign(kDim + 1, 0.0f);
  Status size = node->ImportState(state);
  CHECK(size.code() == StatusCode::kInvalidArgument);
  CHECK(size.message().find("'g' has 17 elements, the model has 16") != std::string::npos);

  proto::JobConfig ps = QuadraticJob({"push-sum", "none", 0}, 4, 10);
  engine::GraphTopology ps_topo = TopologyOf(ps);
  auto ps_node = MakeQuadraticNode(ps, simulator.env(0), *ps_topo.rounds, learner, 5);
  gossip::NodeState ps_state = ps_node->ExportState().value();  // a valid state ...
  ps_state.vectors["sent/9"].assign(kDim, 0.0f);                // node 9 is not in a job of 4
  CHECK(ps_node->ImportState(ps_state).message().find("'sent/9' names no node") != std::string::npos);
}

}  // namespace
}  // namespace murmur::node
