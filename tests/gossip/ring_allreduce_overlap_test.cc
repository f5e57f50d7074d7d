// The overlapped ring all-reduce (gossip/ring_allreduce.h, options.overlap;
// docs/algorithms.md, "Overlapped rounds") against its recursion in double,
// and resumed from checkpointed states: bit for bit the run that never
// stopped, and a node from another run that catches up.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "sim/net/simulator.h"
#include "tests/gossip/allreduce_harness.h"
#include "tests/gossip/quadratic.h"

namespace murmur::gossip {
namespace {

using testing::kDim;
using testing::QuadraticLearner;
using testing::RingRun;
using testing::RunRing;

TEST_CASE(
    "Overlapped all-reduce: the one-step-delayed outer update against its recursion in double, from one "
    "anchor and from anchors that differ") {
  const NodeId n = 5;
  const double lr = 0.05;
  const int h = 4;
  for (bool one_anchor : {true, false}) {
    CAPTURE(one_anchor);
    std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
    for (NodeId i = 0; i < n; ++i) {
      Rng rng(9, i, RngPurpose::kGeneric);
      for (std::size_t k = 0; k < kDim; ++k) {
        targets[i][k] = static_cast<float>(rng.Normal() * 2);
        x0s[i][k] = static_cast<float>(k) - 2.5f + (one_anchor ? 0.0f : static_cast<float>(rng.Normal()));
      }
    }
    for (OuterKind kind : {OuterKind::kNone, OuterKind::kSgd, OuterKind::kNesterov}) {
      CAPTURE(static_cast<int>(kind));
      RingAllReduceOptions o;
      o.rounds = 12;
      o.local_steps = h;
      o.overlap = true;
      o.outer.kind = kind;
      o.outer.lr = kind == OuterKind::kSgd ? 0.8 : 0.7;
      const RingRun run = RunRing(n, o, lr, x0s, targets);
      // Round p all-reduces y_i = theta_i - d_i (phase 0: its x_after); one
      // phase later each anchor steps on g_i = theta_i - mean(y), and
      // x_i <- theta_i - (phase progress of i); after the last round x_i = theta_i.
      std::vector<std::vector<double>> theta(n), m(n, std::vector<double>(kDim, 0.0)), x(n),
          d(n, std::vector<double>(kDim)), y(n);
      for (NodeId i = 0; i < n; ++i) x[i] = theta[i] = std::vector<double>(x0s[i].begin(), x0s[i].end());
      auto phase = [&] {
        for (NodeId i = 0; i < n; ++i) {
          const std::vector<double> start = x[i];
          for (int s = 0; s < h; ++s)
            for (std::size_t k = 0; k < kDim; ++k) x[i][k] -= lr * (x[i][k] - targets[i][k]);
          for (std::size_t k = 0; k < kDim; ++k) d[i][k] = start[k] - x[i][k];
        }
      };
      auto outer = [&](const std::vector<std::vector<double>>& ys) {
        for (std::size_t k = 0; k < kDim; ++k) {
          double ybar = 0;
          for (NodeId i = 0; i < n; ++i) ybar += ys[i][k] / n;
          for (NodeId i = 0; i < n; ++i) {
            const double g = theta[i][k] - ybar;
            double step = g;
            if (kind == OuterKind::kNesterov) {
              m[i][k] = o.outer.momentum * m[i][k] + g;
              step = g + o.outer.momentum * m[i][k];
            }
            theta[i][k] = kind == OuterKind::kNone ? ybar : theta[i][k] - o.outer.lr * step;
          }
        }
      };
      phase();
      y = x;
      for (std::uint64_t p = 1; p < o.rounds; ++p) {
        const auto before = y;
        phase();
        outer(before);
        for (NodeId i = 0; i < n; ++i)
          for (std::size_t k = 0; k < kDim; ++k) x[i][k] = theta[i][k] - d[i][k];
        y = x;
      }
      outer(y);
      double worst = 0, spread = 0;
      for (NodeId i = 0; i < n; ++i) {
        CHECK(run.failed[i] == 0);
        for (std::size_t k = 0; k < kDim; ++k) {
          worst = std::max(worst, std::abs(run.models[i][k] - theta[i][k]));
          spread = std::max(spread, static_cast<double>(std::abs(run.models[i][k] - run.models[0][k])));
        }
      }
      CHECK(worst < 1e-4);
      if (one_anchor || kind == OuterKind::kNone) {
        // One anchor stays one; without an outer optimizer anchors that
        // differ are one after the first averaged round.
        CHECK(spread == 0);
      } else {
        // Pulled together: the start's spread of about 4 shrinks by (1 - 0.8)^12
        // (SGD) or about 0.52^12 (Nesterov 0.7, 0.9).
        CHECK(spread < 0.05);
      }
      // Not the same as waiting for each round's mean.
      o.overlap = false;
      const RingRun waited = RunRing(n, o, lr, x0s, targets);
      CHECK(waited.models[0] != run.models[0]);
    }
  }
}

// 4 overlapped all-reduce nodes on quadratics, each running rounds
// [first[i], rounds) (resumed from states[i] when first[i] > 0), with outer
// optimizer `kind` and catch-up; returns each node's final model and failed
// rounds, and fills `taken` with each node's state at the rebase that ends
// round `take` - 1 (a daemon's checkpoint after round `take`). With
// `lowrank` > 0 the model is a 2 x 3 matrix, all-reduced by PowerSGD at
// that rank.
struct OverlappedRun {
  std::vector<std::vector<float>> models;
  std::vector<std::uint64_t> failed;
};
OverlappedRun RunOverlapped(const std::vector<std::uint64_t>& first, std::uint64_t rounds, OuterKind kind,
                            const std::vector<NodeState>* states, std::uint64_t take,
                            std::vector<NodeState>* taken, std::uint32_t lowrank = 0) {
  Layout layout;
  layout.Add("w", {2, 3});
  const auto n = static_cast<NodeId>(first.size());
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  std::vector<std::unique_ptr<QuadraticLearner>> learners;
  std::vector<std::unique_ptr<RingAllReduceNode>> nodes;
  struct Taker final : RoundObserver {
    std::vector<std::unique_ptr<RingAllReduceNode>>* nodes;
    std::uint64_t take;
    std::vector<NodeState>* taken;
    void OnRoundDone(NodeId node, std::uint64_t round, double) override {
      if (round + 1 == take && taken != nullptr) (*taken)[node] = (*nodes)[node]->ExportState().value();
    }
  } taker;
  taker.nodes = &nodes;
  taker.take = take;
  taker.taken = taken;
  if (taken != nullptr) taken->assign(n, NodeState{});
  auto none = CodecSpec::Parse("none").value();
  for (NodeId i = 0; i < n; ++i) {
    std::vector<float> b(kDim);
    Rng rng(5, i, RngPurpose::kGeneric);
    for (float& v : b) v = static_cast<float>(rng.Normal() * 2);
    learners.push_back(std::make_unique<QuadraticLearner>(b, 0.05));
    RingAllReduceOptions o;
    o.rounds = rounds;
    o.first_round = first[i];
    o.local_steps = 3;
    o.overlap = true;
    o.catch_up = true;
    o.round_timeout = std::chrono::seconds(1);
    o.outer.kind = kind;
    o.outer.lr = 0.7;
    o.lowrank = lowrank;
    if (lowrank > 0) o.lowrank_layout = layout;
    ParamVector x0(layout);
    for (std::size_t k = 0; k < kDim; ++k) x0[k] = static_cast<float>(k);
    nodes.push_back(std::make_unique<RingAllReduceNode>(
        sim.env(i), n, *learners.back(), std::move(x0),
        std::make_unique<Codec>(none, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, &taker));
    if (first[i] > 0) REQUIRE(nodes.back()->ImportState((*states)[i]).ok());
    sim.SetSink(i, nodes.back().get());
  }
  for (auto& node : nodes) node->Start();
  sim.RunUntil(Nanos::max());
  OverlappedRun out;
  for (auto& node : nodes) {
    CHECK(node->finished());
    out.models.emplace_back(node->params().span().begin(), node->params().span().end());
    out.failed.push_back(node->failed_rounds());
  }
  return out;
}

TEST_CASE(
    "An overlapped all-reduce resumed from the states taken after round 4 (model, anchor, outer momentum, "
    "with PowerSGD inside, its residual and warm start) ends as a run never stopped") {
  std::vector<NodeState> taken;
  const std::vector<std::uint64_t> fresh(4, 0), resumed_at(4, 4);
  for (std::uint32_t lowrank : {0u, 1u}) {
    CAPTURE(lowrank);
    const OverlappedRun whole = RunOverlapped(fresh, 10, OuterKind::kNesterov, nullptr, 4, &taken, lowrank);
    REQUIRE(taken.size() == 4);
    for (const NodeState& s : taken) {
      REQUIRE(s.vectors.count("theta") == 1);
      REQUIRE(s.vectors.count("outer/m") == 1);
      CHECK(s.vectors.count("lowrank/residual") == (lowrank > 0 ? 1 : 0));
      CHECK(s.vectors.at("theta") != s.vectors.at("x"));  // x is the anchor moved by the phase in flight
    }
    const OverlappedRun resumed =
        RunOverlapped(resumed_at, 10, OuterKind::kNesterov, &taken, 0, nullptr, lowrank);
    for (std::size_t i = 0; i < whole.models.size(); ++i) {
      CAPTURE(i);
      CHECK(whole.failed[i] == 0);
      CHECK(resumed.failed[i] == 0);
      CHECK(resumed.models[i] == whole.models[i]);
      CHECK(whole.models[i] == whole.models[0]);
    }
  }
  // A state without the anchor is refused by name.
  NodeState partial = taken[0];
  partial.vectors.erase("theta");
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(1));
  QuadraticLearner learner(std::vector<float>(kDim, 0.0f), 0.1);
  RingAllReduceOptions o;
  o.overlap = true;
  RingAllReduceNode node(sim.env(0), 1, learner, ParamVector(kDim),
                         std::make_unique<Codec>(CodecSpec::Parse("none").value(), 0, Layout(),
                                                 Rng(7, 0, RngPurpose::kCompression)),
                         o, nullptr);
  CHECK(node.ImportState(partial).message().find("'theta'") != std::string::npos);
}

TEST_CASE(
    "An overlapped all-reduce with one node resumed from another run's round 3: the ring catches up to it "
    "and the anchors become one") {
  // Node 3 resumes from the state a run of its own took after round 3; the
  // others start afresh. Node 0, whose predecessor is three rounds ahead,
  // gives up its rounds and jumps to node 3's, and so on round the ring;
  // then every round averages, and without an outer optimizer the first
  // averaged round leaves one anchor.
  std::vector<NodeState> taken;
  const std::vector<std::uint64_t> fresh(4, 0);
  RunOverlapped(fresh, 10, OuterKind::kNone, nullptr, 3, &taken);
  const OverlappedRun alone = RunOverlapped(fresh, 10, OuterKind::kNone, nullptr, 0, nullptr);
  const OverlappedRun run = RunOverlapped({0, 0, 0, 3}, 10, OuterKind::kNone, &taken, 0, nullptr);
  std::uint64_t failed = 0;
  for (std::size_t i = 0; i < run.models.size(); ++i) {
    CAPTURE(i);
    CHECK(run.models[i] == run.models[0]);
    failed += run.failed[i];
  }
  CHECK(failed > 0);                        // rounds were given up to catch up
  CHECK(run.models[0] != alone.models[0]);  // not the run that never stopped
  CHECK(alone.models[0] == alone.models[3]);
}

}  // namespace
}  // namespace murmur::gossip
