// The ring all-reduce (gossip/ring_allreduce.h) on closed-form problems:
// exact sums and counted bytes, link-aware ring orders, the hierarchical
// schedule against its recursion in double, and members that stay silent
// (the overlapped schedule: ring_allreduce_overlap_test.cc).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/manual_env.h"
#include "sim/net/simulator.h"
#include "tests/gossip/allreduce_harness.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using testing::Expected;
using testing::Groups;
using testing::kDim;
using testing::QuadraticLearner;
using testing::RingRun;
using testing::RunExactSum;
using testing::RunRing;
using testing::RunRingNodes;

TEST_CASE(
    "Ring all-reduce: the exact sum for 1 to 17 nodes, segments that do not divide the length, and "
    "2 (n - 1) / n of the model sent by each node") {
  for (NodeId n = 1; n <= 17; ++n) {
    for (std::size_t len : {std::size_t{37}, std::size_t{3} * n, std::size_t{1}}) {
      CAPTURE(n);
      CAPTURE(len);
      const auto [run, sum] = RunExactSum(n, len, Collective::kRing);
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        for (std::size_t k = 0; k < len; ++k)
          CHECK(run.models[i][k] == static_cast<float>(sum[k]) / static_cast<float>(n));
        // Node i sends every segment but i + 1 and i + 2; node i + 1 receives them.
        const NodeId from = (i + n - 1) % n;
        auto size = [&](NodeId k) {
          const auto [b, e] = RingSegment(len, n, k % n);
          return e - b;
        };
        const std::size_t want = n == 1 ? 0 : 2 * len - size(from + 1) - size(from + 2);
        CHECK(run.received[i] == want);
        if (len % n == 0) CHECK(run.received[i] * n == 2 * (n - 1) * len);
      }
    }
  }
}

TEST_CASE("Ring all-reduce over a ring in any order (a link-aware ring): the exact sum, by position") {
  for (NodeId n = 1; n <= 17; ++n) {
    const std::size_t len = 37;
    std::vector<NodeId> ring(n);
    std::iota(ring.begin(), ring.end(), 0);
    Rng rng(n, 0, RngPurpose::kGeneric);
    rng.Shuffle(std::span<NodeId>(ring));
    CAPTURE(n);
    std::vector<std::vector<float>> x0s(n, std::vector<float>(len)), targets = x0s;
    std::vector<double> sum(len, 0);
    for (NodeId i = 0; i < n; ++i)
      for (std::size_t k = 0; k < len; ++k) {
        x0s[i][k] = static_cast<float>((i * 5 + k * 7) % 13) - 6.0f;
        sum[k] += x0s[i][k];
      }
    RingAllReduceOptions o;
    o.rounds = 1;
    o.ring = ring;
    const RingRun run = RunRing(n, o, 0.0, x0s, targets);  // every node finishes (checked in RunRing)
    for (NodeId p = 0; p < n; ++p) {
      const NodeId i = ring[p];
      CAPTURE(i);
      for (std::size_t k = 0; k < len; ++k)
        CHECK(run.models[i][k] == static_cast<float>(sum[k]) / static_cast<float>(n));
      // Position p receives from position p - 1 every segment but that one's + 1 and + 2.
      const NodeId from = (p + n - 1) % n;
      auto size = [&](NodeId k) {
        const auto [b, e] = RingSegment(len, n, k % n);
        return e - b;
      };
      CHECK(run.received[i] == (n == 1 ? 0 : 2 * len - size(from + 1) - size(from + 2)));
    }
  }
}

TEST_CASE("Hierarchical all-reduce: group means mixed by W between the halves, checked in double") {
  const std::size_t len = 29;
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling}) {
    const std::string name = CollectiveName(collective);
    CAPTURE(name);
    struct Case {
      NodeId g, m;
      topology::Graph graph;
      topology::WeightRule rule;
    };
    const Case cases[] = {
        {4, 3, topology::Complete(4), topology::WeightRule::kUniform},             // the exact mean
        {4, 4, topology::Ring(4), topology::WeightRule::kMetropolisHastings},      // 1/3 each
        {5, 2, topology::Ring(5), topology::WeightRule::kMetropolisHastings},      //
        {6, 1, topology::Ring(6), topology::WeightRule::kMetropolisHastings},      // m = 1: one D-PSGD mix
        {3, 5, topology::Complete(3), topology::WeightRule::kMetropolisHastings},  // segments of 5 and 6
    };
    for (const Case& c : cases) {
      CAPTURE(c.g);
      CAPTURE(c.m);
      const NodeId n = c.g * c.m;
      const topology::MixingMatrix w = topology::MakeWeights(c.graph, {c.rule, false}).value();
      std::vector<std::vector<float>> x0s(n, std::vector<float>(len)), targets = x0s;
      for (NodeId i = 0; i < n; ++i) {
        Rng rng(5, i, RngPurpose::kGeneric);
        for (std::size_t k = 0; k < len; ++k) x0s[i][k] = static_cast<float>(rng.Normal());
      }
      auto options = Groups(c.g, c.m, w);
      for (auto& o : options) o.collective = collective;
      const RingRun run = RunRingNodes(options, 0.0, x0s, targets);
      // Expected: x_g = sum_h W_gh mean(group h), in double.
      std::vector<std::vector<double>> mean(c.g, std::vector<double>(len, 0));
      for (NodeId i = 0; i < n; ++i)
        for (std::size_t k = 0; k < len; ++k) mean[i / c.m][k] += x0s[i][k] / c.m;
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        const NodeId g = i / c.m;
        for (std::size_t k = 0; k < len; ++k) {
          double want = 0;
          for (const topology::MixingEntry& e : w.Row(g)) want += e.weight * mean[e.col][k];
          CHECK(run.models[i][k] == doctest::Approx(want).epsilon(1e-5));
        }
        CHECK(run.models[i] == run.models[g * c.m]);  // one group, one model, bit for bit
        CHECK(run.failed[i] == 0);
        if (collective != Collective::kRing) continue;  // halving-doubling's counts: collective_test.cc
        // Received: the in-group ring's segments, then one owned segment from each neighbouring group.
        const NodeId p = i % c.m, from = (p + c.m - 1) % c.m;
        auto size = [&](NodeId k) {
          const auto [b, e] = RingSegment(len, c.m, k % c.m);
          return e - b;
        };
        const std::size_t ring = c.m == 1 ? 0 : 2 * len - size(from + 1) - size(from + 2);
        const std::size_t cross = (w.Row(g).size() - 1) * size(p + 1);
        CHECK(run.received[i] == ring + cross);
      }
    }
  }
}

TEST_CASE("Hierarchical all-reduce with a silent member: the others time out, keep their models and finish") {
  const NodeId g = 3, m = 2, n = g * m;
  const topology::MixingMatrix w =
      topology::MakeWeights(topology::Complete(g), {topology::WeightRule::kUniform, false}).value();
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim, 1.0f)),
      targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i) x0s[i][0] = static_cast<float>(i);
  auto options = Groups(g, m, w);
  for (auto& o : options) {
    o.rounds = 3;
    o.round_timeout = std::chrono::seconds(5);
  }
  const RingRun run = RunRingNodes(options, 0.0, x0s, targets, {5});  // node 5 (group 2) never starts
  // Group 2's ring stalls, so node 4 never sends its segment across, and
  // node 5 never sends its: every other node waits on one of them, times
  // out each round and keeps its own model. No node hangs.
  for (NodeId i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(run.failed[i] == 3);
    CHECK(run.models[i][0] == static_cast<float>(i));
  }
}

TEST_CASE(
    "Ring all-reduce re-formed from a membership view: a dead member is left out and the rest average") {
  const NodeId n = 6, dead = 3;
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling})
    for (bool with_view : {true, false}) {
      const std::string name = CollectiveName(collective);
      CAPTURE(name);
      CAPTURE(with_view);
      sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
      // Node 3 goes offline at 0.5 s; membership declares it dead 0.3 s later.
      bool declared = false;
      sim.At(Nanos(500'000'000), [&] { sim.SetOnline(dead, false); });
      sim.At(Nanos(800'000'000), [&] { declared = true; });
      std::vector<std::unique_ptr<QuadraticLearner>> learners;
      std::vector<std::unique_ptr<RingAllReduceNode>> nodes;
      auto none = CodecSpec::Parse("none").value();
      double mean = 0;
      for (NodeId i = 0; i < n; ++i) {
        std::vector<float> x0(kDim, static_cast<float>(i * 3 % 7));
        mean += x0[0] / n;
        learners.push_back(std::make_unique<QuadraticLearner>(x0, 0.0));
        ParamVector x(kDim);
        for (std::size_t k = 0; k < kDim; ++k) x[k] = x0[k];
        RingAllReduceOptions o;
        o.rounds = 20;
        o.round_timeout = std::chrono::seconds(1);
        o.collective = collective;
        if (with_view) o.peer_alive = [&declared](NodeId id) { return id != dead || !declared; };
        nodes.push_back(std::make_unique<RingAllReduceNode>(
            sim.env(i), n, *learners.back(), std::move(x),
            std::make_unique<Codec>(none, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, nullptr));
        sim.SetSink(i, nodes.back().get());
      }
      for (auto& node : nodes) node->Start();
      sim.RunUntil(Nanos::max());
      const std::vector<float> first(nodes[0]->params().span().begin(), nodes[0]->params().span().end());
      for (NodeId i = 0; i < n; ++i) {
        if (i == dead) continue;
        CAPTURE(i);
        CHECK(nodes[i]->finished());
        if (with_view) {
          // Only the rounds between the crash and the view's change time out.
          CHECK(nodes[i]->failed_rounds() <= 4);
          CHECK(std::vector<float>(nodes[i]->params().span().begin(), nodes[i]->params().span().end()) ==
                first);
          CHECK(nodes[i]->params()[0] == doctest::Approx(mean).epsilon(1e-6));  // the 6 averaged before it
        } else {
          // Without a view every round after the crash stalls: at most 0.5 s of
          // rounds of `steps` 10 ms latencies each came before it.
          const double steps = CollectiveSchedule(collective, n, 0, kDim).steps();
          CHECK(nodes[i]->failed_rounds() >= 20 - std::ceil(0.5 / (steps * 0.010)));
        }
      }
    }
}

TEST_CASE(
    "Ring all-reduce, catch_up: half the ring a round behind the other half joins it at once, not a timeout "
    "per round for good") {
  // Nodes 2 to 5 are in round 3 and the others in round 4 (as after a
  // member's restart): each half waits on a sender of the other. Timed out
  // together, the halves would stay a round apart every round; a node whose
  // sender is seen in a later round gives its round up at once instead.
  const NodeId n = 8;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i)
    for (std::size_t k = 0; k < kDim; ++k) {
      x0s[i][k] = static_cast<float>(i + k);
      targets[i][k] = static_cast<float>(i % 3);
    }
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling})
    for (bool overlap : {false, true}) {
      const std::string name = CollectiveName(collective);
      CAPTURE(name);
      CAPTURE(overlap);
      std::vector<RingAllReduceOptions> options(n);
      for (NodeId i = 0; i < n; ++i) {
        options[i].overlap = overlap;
        options[i].rounds = 12;
        options[i].local_steps = 2;
        options[i].collective = collective;
        options[i].catch_up = true;
        options[i].round_timeout = std::chrono::seconds(10);
        options[i].first_round = i >= 2 && i <= 5 ? 3 : 4;
      }
      const RingRun run = RunRingNodes(options, 0.25, x0s, targets);
      CHECK(run.seconds < 10.0);  // no round waited for its timeout
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(run.failed[i] == (i >= 2 && i <= 5 ? 1u : 0u));  // round 3, given up
        CHECK(run.models[i] == run.models[0]);                 // the last round averaged
      }
    }
}

TEST_CASE("allreduce and diloco-allreduce follow local SGD with exact averaging, and DiLoCo's outer steps") {
  const NodeId n = 5;
  const topology::Graph complete = topology::Complete(n);
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i) {
    Rng rng(3, i, RngPurpose::kGeneric);
    for (std::size_t k = 0; k < kDim; ++k) {
      x0s[i][k] = static_cast<float>(k) - 2.5f;
      targets[i][k] = static_cast<float>(rng.Normal() * 2);
    }
  }
  for (OuterKind kind : {OuterKind::kNone, OuterKind::kNesterov, OuterKind::kAdam}) {
    CAPTURE(static_cast<int>(kind));
    RingAllReduceOptions o;
    o.rounds = 30;
    o.local_steps = 5;
    o.outer.kind = kind;
    o.outer.lr = kind == OuterKind::kAdam ? 0.05 : 0.7;
    DecentralizedSgdOptions same;  // the recursion of Expected: exact averaging is the complete graph's mix
    same.rounds = o.rounds;
    same.local_steps = o.local_steps;
    same.outer = o.outer;
    if (kind == OuterKind::kNone) {
      same.outer.kind = OuterKind::kSgd;
      same.outer.lr = 1;
    }
    const RingRun run = RunRing(n, o, 0.05, x0s, targets);
    const auto want = Expected(complete, same, 0.05, targets);
    double worst = 0;
    for (NodeId i = 0; i < n; ++i) {
      CHECK(run.models[i] == run.models[0]);  // one sum, copied: the same model bit for bit
      for (std::size_t k = 0; k < kDim; ++k) worst = std::max(worst, std::abs(run.models[i][k] - want[i][k]));
    }
    CHECK(worst < 1e-4);
  }
}

TEST_CASE(
    "Ring all-reduce with a silent member: every other node times out each round, keeps its own model "
    "and finishes") {
  const NodeId n = 4;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim, 1.0f)),
      targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i)
    for (std::size_t k = 0; k < kDim; ++k) targets[i][k] = static_cast<float>(i);
  RingAllReduceOptions o;
  o.rounds = 3;
  o.local_steps = 2;
  o.round_timeout = std::chrono::seconds(5);
  const RingRun run = RunRing(n, o, 0.5, x0s, targets, /*silent=*/{2});
  for (NodeId i : {0u, 1u, 3u}) {
    CAPTURE(i);
    CHECK(run.failed[i] == 3);
    // Its own local steps only: x <- x - 0.5 (x - b_i), 6 times from 1.
    const double want = i + (1.0 - i) * std::pow(0.5, 6);
    for (float v : run.models[i]) CHECK(v == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE(
    "Ring all-reduce holds at most three rounds of its predecessor's messages, and only its predecessor's") {
  const NodeId n = 3;
  ManualEnv env(1);  // node 1 of 3: its predecessor is node 0
  QuadraticLearner learner(std::vector<float>(kDim, 0.0f), 0.1);
  auto none = CodecSpec::Parse("none").value();
  RingAllReduceNode node(env, n, learner, ParamVector(kDim),
                         std::make_unique<Codec>(none, 1, Layout(), Rng(7, 1, RngPurpose::kCompression)),
                         RingAllReduceOptions{}, nullptr);
  auto segment = [&](std::uint64_t round, double step, std::size_t len) {
    return std::make_shared<const GossipMessage>(Channel::kRingSegment, round, step,
                                                 compression::DenseF32Update(std::vector<float>(len, 1.0f)));
  };
  // Segments of 6 values over 3 nodes: 2 each. Round 0 is not started (the node trains first).
  for (std::uint64_t r = 0; r < 100; ++r)
    for (double s = 0; s < 4; ++s) node.OnMessage(0, segment(r, s, 2));
  CHECK(node.held_messages() == 3 * 4);   // rounds 0, 1 and 2, steps 0 to 3
  node.OnMessage(2, segment(0, 0, 2));    // not the predecessor
  node.OnMessage(0, segment(0, 4, 2));    // no step 4 in a ring of 3
  node.OnMessage(0, segment(0, 1.5, 2));  // not a step
  node.OnMessage(0, segment(1, 0, 3));    // wrong length
  CHECK(node.held_messages() == 12);
}

}  // namespace
}  // namespace murmur::gossip
