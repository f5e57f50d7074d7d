// FaultyEnv around the real transport: nodes on loopback, each AsioEnv
// wrapped in a FaultyEnv, running D-PSGD under injected faults.
//
// Without a timeout firing, D-PSGD does not depend on timing (it mixes in
// sender order and ignores duplicates), so under duplicate + reorder + delay
// the loopback run must give the simulator's models bit for bit. Drops and
// a partition make rounds end on timeouts, which real time decides; there the
// test asserts that the job finishes and that, once the faults stop, the
// models return to the fault-free fixed point within a bound.
#include <doctest/doctest.h>

#include <cmath>

#include "core/faulty_env.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/messages.h"
#include "sim/net/simulator.h"
#include "tests/gossip/quadratic.h"
#include "tests/node/loopback.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::node {
namespace {

constexpr std::size_t kDim = 16;
constexpr NodeId kNodes = 6;
constexpr double kLr = 0.05;

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

std::unique_ptr<gossip::Codec> NoCodec(NodeId i) {
  return std::make_unique<gossip::Codec>(gossip::CodecSpec::Parse("none").value(), i, Layout(),
                                         Rng(7, i, RngPurpose::kCompression));
}

using Models = std::vector<std::vector<float>>;

// The fault plan of a test, built the same way for both transports.
using PlanFn = std::function<void(FaultPlan&)>;

Models Simulated(const PlanFn& make_plan, gossip::DecentralizedSgdOptions o) {
  sim::Simulator simulator(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(kNodes));
  gossip::RoundTopology topo(topology::UniformWeights(topology::Ring(kNodes)));
  FaultPlan plan;
  make_plan(plan);
  std::vector<std::unique_ptr<FaultyEnv>> envs;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes;
  for (NodeId i = 0; i < kNodes; ++i) {
    envs.push_back(std::make_unique<FaultyEnv>(&simulator.env(i), &plan));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), kLr));
    nodes.push_back(std::make_unique<gossip::DecentralizedSgdNode>(*envs[i], topo, *learners[i], Initial(i),
                                                                   NoCodec(i), o, nullptr));
    simulator.SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  simulator.RunUntil(Nanos::max());
  Models out;
  for (auto& nd : nodes) {
    REQUIRE(nd->finished());
    out.emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  return out;
}

struct LoopbackRun {
  Models models;
  FaultStats faults;
  std::uint64_t undecodable = 0;
};

LoopbackRun OverLoopback(const PlanFn& make_plan, gossip::DecentralizedSgdOptions o) {
  auto coordinator = testing::Seeded(100);
  FaultPlan plan;
  make_plan(plan);
  // Declared before the endpoints, so destroyed after their threads stop.
  std::vector<std::unique_ptr<gossip::RoundTopology>> topos;
  std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
  std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes(kNodes);
  std::vector<std::unique_ptr<FaultyEnv>> envs(kNodes);
  std::vector<std::unique_ptr<testing::Endpoint>> eps;
  for (NodeId i = 0; i < kNodes; ++i) {
    eps.push_back(std::make_unique<testing::Endpoint>(
        i, testing::Creds(coordinator, static_cast<std::uint8_t>(i + 1), "fleet", 3600, crypto::kRoleNode, i),
        testing::Policy(coordinator)));
    REQUIRE(eps.back()->start_status().ok());
  }
  for (NodeId i = 0; i < kNodes; ++i) {
    for (NodeId j : {(i + 1) % kNodes, (i + kNodes - 1) % kNodes})
      eps[i]->AddPeer({j, "127.0.0.1", eps[j]->port(), std::nullopt});
    topos.push_back(
        std::make_unique<gossip::RoundTopology>(topology::UniformWeights(topology::Ring(kNodes))));
    learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(Target(i), kLr));
  }
  for (NodeId i = 0; i < kNodes; ++i) {
    eps[i]->Do([&, i] {
      envs[i] = std::make_unique<FaultyEnv>(&eps[i]->env(), &plan);
      nodes[i] = std::make_unique<gossip::DecentralizedSgdNode>(*envs[i], *topos[i], *learners[i], Initial(i),
                                                                NoCodec(i), o, nullptr);
      eps[i]->env().SetSink(nodes[i].get());
    });
  }
  for (NodeId i = 0; i < kNodes; ++i) eps[i]->Do([&, i] { nodes[i]->Start(); });
  auto all_finished = [&] {
    bool all = true;
    for (NodeId i = 0; i < kNodes; ++i) eps[i]->Do([&, i] { all = all && nodes[i]->finished(); });
    return all;
  };
  REQUIRE(testing::WaitFor(all_finished, std::chrono::seconds(60)));
  LoopbackRun r;
  for (NodeId i = 0; i < kNodes; ++i) {
    eps[i]->Do([&, i] {
      r.models.emplace_back(nodes[i]->params().span().begin(), nodes[i]->params().span().end());
      r.faults += envs[i]->stats();
      r.undecodable += eps[i]->env().undecodable();
      // A finished node sends nothing more; cut it off before its env goes,
      // on its own executor (the FaultyEnv cancels its timers there).
      eps[i]->env().SetSink(nullptr);
      envs[i].reset();
    });
    CHECK(eps[i]->transport().stats().handshake_failures == 0);
  }
  for (auto& e : eps) e->Shutdown();
  return r;
}

double MaxDiff(const Models& a, const Models& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < kDim; ++k) d = std::max(d, double{std::abs(a[i][k] - b[i][k])});
  return d;
}

TEST_CASE(
    "D-PSGD under duplicate, reorder and delay gives the same models on loopback and in the simulator") {
  LinkFaults f;
  f.duplicate = 0.3;
  f.reorder = 0.3;
  f.reorder_hold = std::chrono::milliseconds(20);
  f.delay_jitter = std::chrono::milliseconds(5);
  PlanFn make_plan = [f](FaultPlan& plan) {
    plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
  };
  gossip::DecentralizedSgdOptions o;
  o.rounds = 40;
  Models simulated = Simulated(make_plan, o);
  LoopbackRun real = OverLoopback(make_plan, o);
  CHECK(real.faults.duplicated > 20);
  CHECK(real.faults.reordered > 20);
  CHECK(real.models == simulated);
  // And both equal the fault-free run: duplicates are ignored, order does not matter.
  CHECK(simulated == Simulated([](FaultPlan&) {}, o));
}

TEST_CASE(
    "D-PSGD on loopback under drops, duplicates, reordering and a partition that heals finishes and "
    "returns to the fault-free models") {
  LinkFaults f;
  f.drop = 0.05;
  f.duplicate = 0.1;
  f.reorder = 0.1;
  f.reorder_hold = std::chrono::milliseconds(20);
  // Faults for the first 1.5 s of each node's clock; nodes {0,1,2} and {3,4,5}
  // cut apart from 0.2 s to 1.2 s. Rounds that miss a neighbour end on the
  // 50 ms timeout.
  PlanFn make_plan = [f](FaultPlan& plan) {
    plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), std::chrono::milliseconds(1500), f});
    REQUIRE(plan.AddPartition(ParsePartitions("0-2|3-5@0.2s-1.2s", kNodes).value()[0]).ok());
  };
  gossip::DecentralizedSgdOptions o;
  o.rounds = 200;
  o.round_timeout = std::chrono::milliseconds(50);
  Models clean = Simulated([](FaultPlan&) {}, o);
  LoopbackRun real = OverLoopback(make_plan, o);
  CHECK(real.faults.partitioned > 0);
  CHECK(real.faults.dropped > 0);
  CHECK(real.faults.duplicated > 0);
  // D-PSGD with a constant step contracts toward its fixed point by about
  // max(1 - lr, rho) = 0.95 per round, so the faults' mark fades once they stop.
  const double diff = MaxDiff(real.models, clean);
  CAPTURE(diff);
  CHECK(diff < 0.01);
  // The same faults in the simulator (timing differs, the bound is the same).
  Models simulated = Simulated(make_plan, o);
  CHECK(MaxDiff(simulated, clean) < 0.01);
}

TEST_CASE(
    "Corrupted messages over loopback pass the AEAD, fail the gossip decoder and are counted, and a dozen "
    "graylist the sender") {
  auto coordinator = testing::Seeded(100);
  testing::Endpoint a(0, testing::Creds(coordinator, 1, "fleet", 3600, crypto::kRoleNode, 0),
                      testing::Policy(coordinator));
  testing::Endpoint b(1, testing::Creds(coordinator, 2, "fleet", 3600, crypto::kRoleNode, 1),
                      testing::Policy(coordinator));
  REQUIRE(a.start_status().ok());
  REQUIRE(b.start_status().ok());
  a.AddPeer({1, "127.0.0.1", b.port(), std::nullopt});
  FaultPlan plan;
  LinkFaults f;
  f.corrupt = 1;
  plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
  std::unique_ptr<FaultyEnv> faulty;
  a.Do([&] { faulty = std::make_unique<FaultyEnv>(&a.env(), &plan); });
  Layout layout;
  layout.Add("w", {100});
  ParamVector x(layout);
  gossip::Codec dense(gossip::CodecSpec::Parse("none").value(), 0, layout,
                      Rng(7, 0, RngPurpose::kCompression));
  auto msg = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel, 1, 0.0,
                                                           dense.Compress(x.span(), 1));
  auto undecodable = [&] {
    std::uint64_t u = 0;
    b.Do([&] { u = b.env().undecodable(); });
    return u;
  };
  // Nine: each costs the sender an invalid-update penalty (10) and the
  // graylist threshold is -100 (node/transport/peer_scoring.h), so the session stays up.
  const int below = 9;
  a.Do([&] {
    for (int i = 0; i < below; ++i) faulty->Send(1, msg);
  });
  REQUIRE(testing::WaitFor([&] { return undecodable() == static_cast<std::uint64_t>(below); }));
  CHECK(b.sink().Count() == 0);
  // The bytes were authentic: no frame failed authentication, and the same
  // session carries a clean message afterwards.
  CHECK(b.transport().stats().frames_rejected == 0);
  CHECK(b.transport().stats().graylistings == 0);
  a.Send(1, msg);
  REQUIRE(testing::WaitFor([&] { return b.sink().Count() == 1; }));
  CHECK(a.transport().stats().sessions_opened == 1);
  // Three more: the score recovers 1 point per second, so the tenth reaches
  // -100 only if it follows the first nine within no time; by the twelfth
  // node 0 is on the graylist whatever the timing of this test.
  a.Do([&] {
    for (int i = 0; i < 3; ++i) faulty->Send(1, msg);
  });
  REQUIRE(testing::WaitFor([&] { return b.transport().stats().graylistings == 1; }));
  CHECK(undecodable() >= static_cast<std::uint64_t>(below + 1));
  CHECK(undecodable() <= static_cast<std::uint64_t>(below + 3));
  a.Do([&] { faulty.reset(); });
}

}  // namespace
}  // namespace murmur::node
