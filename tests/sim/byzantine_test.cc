// Byzantine gossip nodes: the crafted models against hand-computed values,
// and a small attacked ring where plain gossip is driven off the honest
// optimum while ClippedGossip stays near it.
#include "sim/adversary/byzantine.h"
#include "sim/adversary/tap_env.h"

#include <doctest/doctest.h>

#include <algorithm>

#include <cmath>
#include <utility>

#include "gossip/decentralized_sgd.h"
#include "sim/adversary/byzantine_placement.h"
#include "sim/adversary/gossip_attack.h"
#include "sim/net/simulator.h"
#include "sim/run/scenario.h"
#include "sim/runner.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::sim {
namespace {

TEST_CASE("Crafted models match the attack formulas worked by hand") {
  const std::vector<float> target = {0, 0}, k1 = {1, 0}, k2 = {0, 2};
  AttackView v;
  v.target = target;
  v.good = {k1, k2};
  v.good_weights = {1.0 / 3, 1.0 / 3};
  v.byzantine_weight = 1.0 / 3;
  std::vector<float> out(2);
  SUBCASE("dissensus") {
    // pull = (1/3)(1, 0) + (1/3)(0, 2) = (1/3, 2/3); out = x_i - 1.5 pull / (1/3) = (-1.5, -3):
    // the attacker's share W_ib (out - x_i) = -1.5 pull cancels 1.5 times the honest step.
    CraftAttack({GossipAttack::kDissensus, 1.5, 0}, v, out);
    CHECK(out[0] == doctest::Approx(-1.5));
    CHECK(out[1] == doctest::Approx(-3.0));
  }
  SUBCASE("ipm") {
    // -eps mean of {(0, 0), (1, 0), (0, 2)} = -0.5 (1/3, 2/3).
    CraftAttack({GossipAttack::kIpm, 0.5, 0}, v, out);
    CHECK(out[0] == doctest::Approx(-1.0 / 6));
    CHECK(out[1] == doctest::Approx(-1.0 / 3));
  }
  SUBCASE("alie") {
    // Coordinate 0: {0, 1, 0}, mean 1/3, population sd sqrt(2/9); coordinate 1: {0, 0, 2}, mean 2/3, sd
    // sqrt(8/9).
    CraftAttack({GossipAttack::kAlie, 1, 2.0}, v, out);
    CHECK(out[0] == doctest::Approx(1.0 / 3 - 2 * std::sqrt(2.0 / 9)));
    CHECK(out[1] == doctest::Approx(2.0 / 3 - 2 * std::sqrt(8.0 / 9)));
  }
  SUBCASE("sign-flip") {
    // -s times the mean of the models the attacker hears.
    CraftAttack({GossipAttack::kSignFlip, 2, 0}, v, out);
    CHECK(out[0] == doctest::Approx(-1.0));
    CHECK(out[1] == doctest::Approx(-2.0));
  }
}

TEST_CASE("Byzantine nodes are llround(fraction n) of them, chosen by the seed") {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    auto a = ChooseByzantine(16, 0.125, seed);
    CHECK(std::count(a.begin(), a.end(), true) == 2);
    CHECK(a == ChooseByzantine(16, 0.125, seed));
    const auto b = ChooseByzantine(10, 0.15, seed);  // llround(1.5) = 2
    CHECK(std::count(b.begin(), b.end(), true) == 2);
  }
  CHECK(ChooseByzantine(16, 0.25, 1) != ChooseByzantine(16, 0.25, 2));
  // The plan reads the attack (engine/plan.h); a federated attack is not a gossip one.
  proto::Scenario s;
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_attack("dissensus");
  s.mutable_spec()->set_attack_fraction(0.25);
  CHECK(PlanScenario(s).value().job().gossip().attack == GossipAttack::kDissensus);
  s.mutable_spec()->set_attack("gaussian");
  const Status gaussian = PlanScenario(s).status();
  CHECK(gaussian.message().find("spec field 'attack'") != std::string::npos);
  CHECK(gaussian.message().find("'gaussian'") != std::string::npos);
}

TEST_CASE("Attached Byzantine nodes on a ring: one edge each, Metropolis-Hastings weights by hand") {
  // Ring of 8 and f = 2 extra nodes 8 and 9, joined to the seed's first two
  // nodes (the nodes members placement would make Byzantine).
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    const AttachedGraph a = AttachByzantine(topology::Ring(8), 2, false, seed);
    REQUIRE(a.targets.size() == 2);
    CHECK(a.targets[0] != a.targets[1]);
    const auto members = ChooseByzantine(8, 0.25, seed);
    CHECK(members[a.targets[0]]);
    CHECK(members[a.targets[1]]);
    CHECK(a.graph.num_nodes() == 10);
    CHECK(a.graph.num_edges() == 10);
    for (NodeId k = 0; k < 2; ++k) {
      CHECK(a.graph.Degree(8 + k) == 1);
      CHECK(a.graph.HasEdge(8 + k, a.targets[k]));
    }
    const topology::MixingMatrix w = topology::MakeWeights(a.graph, AttachedWeights(false)).value();
    const NodeId t = a.targets[0];
    // W_ij = 1/(1 + max(d_i, d_j)): the target has degree 3, its ring neighbours 2 (or 3 if also a target).
    CHECK(w.At(t, 8) == doctest::Approx(0.25));
    CHECK(w.At(8, t) == doctest::Approx(0.25));
    CHECK(w.At(8, 8) == doctest::Approx(0.75));
    CHECK(w.At(t, (t + 1) % 8) == doctest::Approx(0.25));
    CHECK(w.At(t, (t + 7) % 8) == doctest::Approx(0.25));
    CHECK(w.At(t, t) == doctest::Approx(0.25));
    // A node with no attacker and no target neighbour keeps the ring's 1/3.
    for (NodeId i = 0; i < 8; ++i) {
      const bool near = members[i] || members[(i + 1) % 8] || members[(i + 7) % 8];
      if (!near) CHECK(w.At(i, (i + 1) % 8) == doctest::Approx(1.0 / 3));
    }
  }
  proto::Scenario s;
  s.mutable_spec()->set_compression("none");
  for (auto [name, placement] :
       {std::pair{"attached", AttackPlacement::kAttached}, std::pair{"members", AttackPlacement::kMembers}}) {
    s.mutable_spec()->set_attack_placement(name);
    CHECK(PlanScenario(s).value().job().gossip().placement == placement);
  }
  s.mutable_spec()->set_attack_placement("inside");
  CHECK(PlanScenario(s).status().message().find("'inside'") != std::string::npos);
}

TEST_CASE(
    "Attached Byzantine nodes on a dumbbell sit on the bridge ends with the paper's weights 1/(q + qb + 1)") {
  // Dumbbell of 16: cliques 0-7 and 8-15, bridge (7, 8). He et al.'s Dumbbell(q = 8, qb = 1): one
  // attacker on each bridge end, every edge weight 1/(q + qb + 1) = 1/10.
  const AttachedGraph a = AttachByzantine(topology::Dumbbell(16), 2, true, 1);
  CHECK(a.targets == std::vector<NodeId>{7, 8});
  CHECK(a.graph.num_nodes() == 18);
  CHECK(a.graph.num_edges() == 2 * 28 + 1 + 2);
  CHECK(a.graph.HasEdge(7, 16));
  CHECK(a.graph.HasEdge(8, 17));
  const topology::MixingMatrix w = topology::MakeWeights(a.graph, AttachedWeights(true)).value();
  CHECK(w.At(7, 16) == doctest::Approx(0.1));
  CHECK(w.At(8, 17) == doctest::Approx(0.1));
  CHECK(w.At(7, 8) == doctest::Approx(0.1));
  CHECK(w.At(0, 1) == doctest::Approx(0.1));
  CHECK(w.At(7, 7) == doctest::Approx(0.1));  // 1 - 9/10: 7 clique mates, the bridge, the attacker
  CHECK(w.At(0, 0) == doctest::Approx(0.3));  // 1 - 7/10
  CHECK(w.At(16, 16) == doctest::Approx(0.9));
  // Three attackers: two on node 7, one on node 8.
  CHECK(AttachByzantine(topology::Dumbbell(16), 3, true, 1).targets == std::vector<NodeId>{7, 8, 7});
}

TEST_CASE("A scenario with attached attackers keeps every scenario node honest and adds the attackers") {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("softmax");
  s.mutable_spec()->set_nodes(8);
  s.mutable_spec()->set_rounds(4);
  s.mutable_spec()->set_eval_every(4);
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_topology("ring");
  s.mutable_spec()->set_gossip_aggregation("clipped");
  s.mutable_spec()->set_attack("dissensus");
  s.mutable_spec()->set_attack_fraction(0.25);
  s.mutable_spec()->set_attack_placement("attached");
  auto r = RunScenario(s);
  REQUIRE(r.ok());
  CHECK(r.value().learning_nodes == 8);
  CHECK(r.value().description.find("10 nodes") != std::string::npos);
  CHECK(r.value().description.find("2 Byzantine nodes (dissensus): 8, 9") != std::string::npos);
  s.mutable_spec()->set_attack_placement("inside");
  CHECK(RunScenario(s).status().message().find("'attack_placement'") != std::string::npos);
  s.mutable_spec()->set_attack_placement("attached");
  s.mutable_spec()->set_topology("random-matching");  // attackers need a static topology
  CHECK(RunScenario(s).status().message().find("'attack'") != std::string::npos);
}

// Ring of 12 quadratics f_i(x) = 0.5 ||x - b_i||^2, b_i = c + N(0, 1) with
// ||c|| = 10; under attack nodes 3 and 9 are Byzantine. Returns the honest
// nodes' mean distance to the honest optimum (the mean of their b_i) after 150 rounds.
struct AttackedRing {
  static constexpr NodeId kNodes = 12;
  static constexpr std::size_t kDim = 4;

  double Run(GossipAttack attack, double scale, gossip::MixingRule rule, double plausibility = 10) {
    Simulator sim(SimulatorOptions{}, std::vector<DeviceProfile>(kNodes));
    gossip::RoundTopology topo(topology::UniformWeights(topology::Ring(kNodes)));
    std::vector<bool> byzantine(kNodes, false);
    byzantine[3] = byzantine[9] = true;
    std::unique_ptr<ByzantineCoalition> coalition;
    if (attack != GossipAttack::kNone) {
      coalition =
          std::make_unique<ByzantineCoalition>(sim, topo.In(0), byzantine, AttackParams{attack, scale, 1.0});
    }
    std::vector<std::unique_ptr<gossip::testing::QuadraticLearner>> learners;
    std::vector<std::unique_ptr<TapEnv>> taps;
    std::vector<std::unique_ptr<gossip::DecentralizedSgdNode>> nodes;
    std::vector<double> optimum(kDim, 0.0);
    gossip::DecentralizedSgdOptions o;
    o.rounds = 150;
    o.mixing.rule = rule;
    o.plausibility = plausibility;
    for (NodeId i = 0; i < kNodes; ++i) {
      std::vector<float> b(kDim);
      Rng rng(11, i, RngPurpose::kGeneric);
      for (auto& x : b) x = static_cast<float>(5 + rng.Normal());
      if (coalition != nullptr && byzantine[i]) {
        sim.SetSink(i, coalition.get());
        continue;
      }
      for (std::size_t k = 0; k < kDim; ++k) optimum[k] += b[k];
      learners.push_back(std::make_unique<gossip::testing::QuadraticLearner>(b, 0.05));
      ParamVector x0(kDim);
      for (std::size_t k = 0; k < kDim; ++k) x0[k] = b[k];
      Env* env = &sim.env(i);
      if (coalition != nullptr) {
        taps.push_back(std::make_unique<TapEnv>(&sim.env(i), *coalition));
        env = taps.back().get();
      }
      auto spec = gossip::CodecSpec::Parse("none").value();
      nodes.push_back(std::make_unique<gossip::DecentralizedSgdNode>(
          *env, topo, *learners.back(), std::move(x0),
          std::make_unique<gossip::Codec>(spec, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o,
          nullptr));
      sim.SetSink(i, nodes.back().get());
    }
    for (double& v : optimum) v /= static_cast<double>(nodes.size());
    for (auto& nd : nodes) nd->Start();
    sim.RunUntil(Nanos::max());
    if (coalition != nullptr) crafted = coalition->models_crafted();
    refused = sim.TotalTraffic().refused[static_cast<std::size_t>(Refusal::kImplausible)];
    double dist = 0;
    for (auto& nd : nodes) {
      REQUIRE(nd->finished());
      double d2 = 0;
      for (std::size_t k = 0; k < kDim; ++k)
        d2 += (nd->params()[k] - optimum[k]) * (nd->params()[k] - optimum[k]);
      dist += std::sqrt(d2) / static_cast<double>(nodes.size());
    }
    return dist;
  }
  std::uint64_t crafted = 0;
  std::uint64_t refused = 0;  // crafted models refused as implausible
};

TEST_CASE("On an attacked ring plain gossip leaves the honest optimum, ClippedGossip stays near it") {
  using gossip::MixingRule;
  AttackedRing ring;
  // Reference: the same ring with every node honest learns to within its own
  // heterogeneity (D-PSGD's bias; the b_i are spread by 1 per coordinate).
  const double honest = ring.Run(GossipAttack::kNone, 1, MixingRule::kMean);
  MESSAGE("attack-free plain gossip: mean distance ", honest);
  CHECK(honest < 1.0);
  struct Case {
    GossipAttack attack;
    double scale;
  };
  for (Case c : {Case{GossipAttack::kSignFlip, 1}, Case{GossipAttack::kSignFlip, 100},
                 Case{GossipAttack::kIpm, 1}, Case{GossipAttack::kDissensus, 1.5}}) {
    CAPTURE(static_cast<int>(c.attack));
    CAPTURE(c.scale);
    // The plausibility bound (rho = 10) off: the attack alone against the mixing rule.
    const double plain = ring.Run(c.attack, c.scale, MixingRule::kMean, 0);
    // Every honest node that borders an attacker gets one crafted model per round.
    CHECK(ring.crafted == (c.attack == GossipAttack::kSignFlip ? 2u : 4u) * 150u);
    const double clipped = ring.Run(c.attack, c.scale, MixingRule::kClipped, 0);
    MESSAGE("plain ", plain, ", clipped ", clipped);
    // ||c|| = 10: plain gossip is pulled at least halfway to the attackers' target...
    CHECK((std::isnan(plain) || plain > 5.0));  // sign flip with s = 100 overflows to NaN
    // ...while clipping bounds each attacker's pull by the honest distances,
    // whatever its size: within 1.5 of the optimum (the attack-free run's 0.23
    // plus a bias of the order of the b_i's spread), the same for s = 1 and s = 100.
    CHECK(clipped < 1.5);
    // With the bound, plain gossip refuses what lies more than 10 ||x_i||
    // away: -100 x_b, which would move an honest model by 100 times its
    // size, and none of the crafted models of the attacks that stay near
    // the honest models, which are then the ruin they were without it.
    const double bounded = ring.Run(c.attack, c.scale, MixingRule::kMean);
    MESSAGE("plain with the plausibility bound ", bounded, ": ", ring.refused, " of ", ring.crafted,
            " crafted models refused");
    if (c.scale == 100) {
      // Each attacker's one sign-flipped model a round goes to both its ring neighbours.
      CHECK(ring.refused == 2 * ring.crafted);
      CHECK(bounded < 1.5);
    } else if (c.attack != GossipAttack::kDissensus) {
      CHECK(ring.refused == 0);
      CHECK(bounded == plain);
    } else {
      CHECK(bounded > 5.0);  // dissensus pulls by the honest step's size: the bound is no defence
    }
  }
}

TEST_CASE("Scenarios that robust gossip cannot run are refused, naming the field") {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("softmax");
  s.mutable_spec()->set_nodes(8);
  s.mutable_spec()->set_rounds(4);
  s.mutable_spec()->set_eval_every(4);
  struct Case {
    const char* algorithm;
    const char* compression;
    const char* topology;
    const char* aggregation;
    const char* attack;
    const char* expect;
  };
  for (Case c : {Case{"push-sum", "none", "ring", "clipped", "none", "'gossip_aggregation'"},
                 Case{"dpsgd", "topk:0.1", "ring", "clipped", "none", "'gossip_aggregation'"},
                 Case{"dpsgd", "none", "ring", "krum", "none", "'gossip_aggregation'"},
                 Case{"dpsgd", "none", "ring", "mean", "gaussian", "'attack'"},
                 Case{"dsgt", "none", "ring", "mean", "ipm", "'attack'"},
                 Case{"dpsgd", "topk:0.1", "ring", "mean", "ipm", "'attack'"},
                 Case{"dpsgd", "none", "random-matching", "mean", "ipm", "'attack'"}}) {
    CAPTURE(c.expect);
    CAPTURE(c.algorithm);
    CAPTURE(c.compression);
    s.mutable_spec()->set_algorithm(c.algorithm);
    s.mutable_spec()->set_compression(c.compression);
    s.mutable_spec()->set_topology(c.topology);
    s.mutable_spec()->set_gossip_aggregation(c.aggregation);
    s.mutable_spec()->set_attack(c.attack);
    s.mutable_spec()->set_attack_fraction(0.25);
    auto r = RunScenario(s);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(c.expect) != std::string::npos);
  }
  s.mutable_spec()->set_algorithm("dpsgd");
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_topology("ring");
  s.mutable_spec()->set_gossip_aggregation("clipped");
  s.mutable_spec()->set_attack("dissensus");
  s.mutable_spec()->set_attack_fraction(1.0);
  CHECK(RunScenario(s).status().message().find("'attack_fraction'") != std::string::npos);
  s.mutable_spec()->set_attack_fraction(0.25);
  auto ok = RunScenario(s);
  REQUIRE(ok.ok());
  CHECK(ok.value().learning_nodes == 6);
}

}  // namespace
}  // namespace murmur::sim
