// Gossip algorithms on closed-form problems, run in the simulator.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "gossip/decentralized_sgd.h"
#include "gossip/gossip_learning.h"
#include "gossip/gradient_tracking.h"
#include "gossip/push_sum.h"
#include "sim/net/churn.h"
#include "sim/net/simulator.h"
#include "tests/gossip/fixture.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using testing::QuadraticLearner;

using testing::Fixture;
using testing::kDim;
using testing::MaxDistanceTo;
using testing::PushSumNodes;

TEST_CASE("D-PSGD averaging on a ring contracts consensus at the spectral rate and keeps the mean") {
  const NodeId n = 16;
  Fixture f(n, 0.0);  // lr = 0: pure gossip averaging
  RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
  std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
  DecentralizedSgdOptions o;
  o.rounds = 60;
  for (NodeId i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<DecentralizedSgdNode>(f.sim->env(i), topo, *f.learners[i], f.Initial(i),
                                                           f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  double d0 = MaxDistanceTo(nodes, f.Optimum());
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  for (auto& nd : nodes) REQUIRE(nd->finished());
  // rho of the ring with weights 1/3: 1/3 + 2/3 cos(2 pi / n).
  const double rho = 1.0 / 3 + 2.0 / 3 * std::cos(2 * M_PI / n);
  double d = MaxDistanceTo(nodes, f.Optimum());
  CHECK(d <= std::sqrt(n) * std::pow(rho, 60) * d0 * 1.01 + 1e-5);
  CHECK(d < 0.05 * d0);
}

// Forwards to a node and keeps every message it receives, with a copy of its
// values on arrival, for the rest of the run.
class KeepingSink final : public MessageSink {
 public:
  explicit KeepingSink(MessageSink* node) : node_(node) {}
  void OnMessage(NodeId from, MessagePtr msg) override {
    const auto& u = static_cast<const GossipMessage&>(*msg).update();
    kept_.emplace_back(msg, u.ToDense());
    node_->OnMessage(from, std::move(msg));
  }
  // True when every kept message still holds the values it arrived with.
  bool Unchanged() const {
    for (const auto& [msg, values] : kept_) {
      if (static_cast<const GossipMessage&>(*msg).update().ToDense() != values) return false;
    }
    return !kept_.empty();
  }

 private:
  MessageSink* node_;
  std::vector<std::pair<MessagePtr, std::vector<float>>> kept_;
};

TEST_CASE(
    "D-PSGD sending its model buffer itself follows the closed-form recursion, and sent models never "
    "change") {
  // Node i's x^{t+1}: ATC sum_j W_ij (x_j - lr (x_j - b_j)); CTA
  // sum_j W_ij x_j - lr (x_i - b_i), computed here in double. Device speeds
  // differ by 8x, and every received message is kept to the end, so no
  // buffer a node sent may be reused: the node must take fresh ones.
  const NodeId n = 8;
  const double lr = 0.1;
  const int rounds = 30;
  for (MixOrder order : {MixOrder::kAdaptThenCombine, MixOrder::kCombineThenAdapt}) {
    CAPTURE(static_cast<int>(order));
    Fixture f(n, lr);
    std::vector<sim::DeviceProfile> devices(n);
    for (NodeId i = 0; i < n; ++i) devices[i].flops_per_s = 1e9 * (1 + i);
    f.sim = std::make_unique<sim::Simulator>(sim::SimulatorOptions{}, devices);
    RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
    DecentralizedSgdOptions o;
    o.order = order;
    o.rounds = rounds;
    std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
    std::vector<std::unique_ptr<KeepingSink>> sinks;
    for (NodeId i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<DecentralizedSgdNode>(
          f.sim->env(i), topo, *f.learners[i], f.Initial(i), f.MakeCodec("none", i), o, nullptr));
      REQUIRE_FALSE(nodes.back()->choco());
      sinks.push_back(std::make_unique<KeepingSink>(nodes.back().get()));
      f.sim->SetSink(i, sinks.back().get());
    }
    std::vector<std::vector<double>> x(n, std::vector<double>(kDim));
    for (NodeId i = 0; i < n; ++i)
      for (std::size_t k = 0; k < kDim; ++k) x[i][k] = f.targets[i][k];
    for (int t = 0; t < rounds; ++t) {
      std::vector<std::vector<double>> next(n, std::vector<double>(kDim));
      for (NodeId i = 0; i < n; ++i) {
        for (std::size_t k = 0; k < kDim; ++k) {
          auto step = [&](NodeId j) { return lr * (x[j][k] - f.targets[j][k]); };
          double mixed = 0;
          for (NodeId j : {(i + n - 1) % n, i, (i + 1) % n})
            mixed += (x[j][k] - (order == MixOrder::kAdaptThenCombine ? step(j) : 0.0)) / 3;
          next[i][k] = mixed - (order == MixOrder::kCombineThenAdapt ? step(i) : 0.0);
        }
      }
      x = std::move(next);
    }
    for (auto& nd : nodes) nd->Start();
    f.sim->RunUntil(Nanos::max());
    double worst = 0;
    for (NodeId i = 0; i < n; ++i) {
      REQUIRE(nodes[i]->finished());
      for (std::size_t k = 0; k < kDim; ++k)
        worst = std::max(worst, std::abs(nodes[i]->params()[k] - x[i][k]));
    }
    CHECK(worst < 1e-4);
    for (const auto& s : sinks) CHECK(s->Unchanged());
  }
}

TEST_CASE("CHOCO gossip with top-25% converges to the exact average, without error feedback it does not") {
  const NodeId n = 8;
  for (const char* spec : {"topk:0.25", "topk:0.25,no-ef"}) {
    CAPTURE(spec);
    Fixture f(n, 0.0);
    RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
    std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
    DecentralizedSgdOptions o;
    o.rounds = 400;
    o.gamma = 0.4;
    for (NodeId i = 0; i < n; ++i) {
      nodes.push_back(std::make_unique<DecentralizedSgdNode>(f.sim->env(i), topo, *f.learners[i],
                                                             f.Initial(i), f.MakeCodec(spec, i), o, nullptr));
      REQUIRE(nodes.back()->choco());
      f.sim->SetSink(i, nodes.back().get());
    }
    for (auto& nd : nodes) nd->Start();
    f.sim->RunUntil(Nanos::max());
    double d = MaxDistanceTo(nodes, f.Optimum());
    if (std::string(spec) == "topk:0.25") {
      CHECK(d < 1e-3);
    } else {
      CHECK(d > 1e-2);
    }
  }
}

TEST_CASE("Gradient tracking reaches the exact optimum of heterogeneous objectives, D-PSGD keeps a bias") {
  const NodeId n = 8;
  const double lr = 0.2;
  RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
  Fixture ft(n, lr);
  std::vector<std::unique_ptr<GradientTrackingNode>> gt;
  GradientTrackingOptions go;
  go.rounds = 400;
  for (NodeId i = 0; i < n; ++i) {
    // All start at zero, away from every b_i.
    gt.push_back(std::make_unique<GradientTrackingNode>(
        ft.sim->env(i), topo, *ft.learners[i], ParamVector(kDim), ft.MakeCodec("none", i), go, nullptr));
    ft.sim->SetSink(i, gt.back().get());
  }
  for (auto& nd : gt) nd->Start();
  ft.sim->RunUntil(Nanos::max());
  CHECK(MaxDistanceTo(gt, ft.Optimum()) < 1e-4);

  Fixture fd(n, lr);
  std::vector<std::unique_ptr<DecentralizedSgdNode>> dp;
  DecentralizedSgdOptions dox;
  dox.rounds = 400;
  for (NodeId i = 0; i < n; ++i) {
    dp.push_back(std::make_unique<DecentralizedSgdNode>(
        fd.sim->env(i), topo, *fd.learners[i], ParamVector(kDim), fd.MakeCodec("none", i), dox, nullptr));
    fd.sim->SetSink(i, dp.back().get());
  }
  for (auto& nd : dp) nd->Start();
  fd.sim->RunUntil(Nanos::max());
  // With a constant step, D-PSGD's fixed point differs from the optimum by
  // O(lr * heterogeneity) (Yuan, Ling and Yin 2016); here that is ~0.1 or more.
  CHECK(MaxDistanceTo(dp, fd.Optimum()) > 0.05);
}

TEST_CASE("How far an in-neighbour can be ahead: 1 on undirected graphs, the path back on directed ones") {
  // Undirected: every in-neighbour is an out-neighbour.
  for (NodeId n : {2u, 5u, 8u}) {
    RoundTopology ring(topology::UniformWeights(topology::Ring(n)));
    for (NodeId i = 0; i < n; ++i) CHECK(ring.InNeighbourLead(i) == 1);
  }
  // Exponential on 4 nodes: i sends to i+1 and i+2, hears from i-1 and i-2;
  // i -> i+2 -> i+3 = i-1 is 2 hops (the failure mode: node 0 two rounds ahead of node 1).
  RoundTopology exp4(topology::PushSumWeights(topology::Exponential(4)));
  for (NodeId i = 0; i < 4; ++i) CHECK(exp4.InNeighbourLead(i) == 2);
  // Exponential on 16 (hops 1, 2, 4, 8): i -> i-1 = i+15 is 4 hops (8 + 4 + 2 + 1).
  RoundTopology exp16(topology::PushSumWeights(topology::Exponential(16)));
  for (NodeId i = 0; i < 16; ++i) CHECK(exp16.InNeighbourLead(i) == 4);
  // A directed cycle 0 -> 1 -> ... -> n-1 -> 0: n - 1 hops back to the predecessor.
  std::vector<topology::Triplet> cycle;
  for (NodeId i = 0; i < 6; ++i) {
    cycle.push_back({i, i, 0.5});
    cycle.push_back({(i + 1) % 6, i, 0.5});  // W_{i+1, i}: i+1 hears from i
  }
  auto w = topology::MixingMatrix::FromEntries(6, cycle);
  REQUIRE(w.ok());
  RoundTopology directed(*w);
  for (NodeId i = 0; i < 6; ++i) CHECK(directed.InNeighbourLead(i) == 5);
}

TEST_CASE("Under the same 10% loss, D-PSGD averaging loses the exact average that push-sum keeps") {
  // D-PSGD mixes what arrives and leaves a lost neighbour's weight on itself:
  // every row still sums to one, but the columns no longer do, so the network
  // average drifts. Push-sum's running sums deliver the lost mass later.
  const NodeId n = 16;
  Fixture f(n, 0.0, 0.10, 4);
  RoundTopology topo(topology::UniformWeights(topology::Exponential(n)));
  std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
  DecentralizedSgdOptions o;
  o.rounds = 80;
  o.round_timeout = std::chrono::milliseconds(200);
  for (NodeId i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<DecentralizedSgdNode>(f.sim->env(i), topo, *f.learners[i], f.Initial(i),
                                                           f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  CHECK(f.sim->TotalTraffic().messages_lost > 50);
  // Consensus is reached, but not on the average.
  double spread = 0;
  for (const auto& nd : nodes)
    for (std::size_t k = 0; k < kDim; ++k)
      spread = std::max<double>(spread, std::abs(nd->params()[k] - nodes[0]->params()[k]));
  CHECK(spread < 1e-3);
  CHECK(MaxDistanceTo(nodes, f.Optimum()) > 1e-2);
}

TEST_CASE("Gossip learning merges models towards consensus and trains towards the optimum") {
  const NodeId n = 32;
  Fixture f(n, 0.05);
  std::vector<std::unique_ptr<GossipLearningNode>> nodes;
  GossipLearningOptions o;
  o.period = std::chrono::milliseconds(100);
  o.horizon = std::chrono::seconds(60);
  o.uniform_peers = true;
  for (NodeId i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<GossipLearningNode>(
        f.sim->env(i), nullptr, n, *f.learners[i], ParamVector(kDim), f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  for (auto& nd : nodes) CHECK(nd->wakeups() > 300);
  // Training alone would leave node i at its own b_i; merging pulls every
  // model towards the others, so all end near the optimum of the average
  // objective, far closer than the b_i are.
  const auto opt = f.Optimum();
  double local_only = 0, merged = 0;
  for (NodeId i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < kDim; ++k) {
      local_only += std::abs(f.targets[i][k] - opt[k]);
      merged += std::abs(nodes[i]->params()[k] - opt[k]);
    }
  }
  CHECK(merged < 0.25 * local_only);
}

// DSGT on quadratics (exact gradients) on a ring under message loss, with
// catch_up on or off; returns the nodes' largest distance to the optimum and
// sets `tracking` to ||sum_i y_i - sum_i g_i(x_i)||_inf.
double GradientTrackingUnderLoss(bool catch_up, double loss, std::uint64_t seed, double& tracking,
                                 std::vector<std::vector<float>>* params = nullptr) {
  const NodeId n = 8;
  Fixture f(n, 0.2, loss, seed);
  RoundTopology topo(topology::UniformWeights(topology::Ring(n)));
  std::vector<std::unique_ptr<GradientTrackingNode>> nodes;
  GradientTrackingOptions o;
  o.rounds = 400;
  o.round_timeout = std::chrono::milliseconds(200);
  o.catch_up = catch_up;
  for (NodeId i = 0; i < n; ++i) {
    nodes.push_back(std::make_unique<GradientTrackingNode>(
        f.sim->env(i), topo, *f.learners[i], ParamVector(kDim), f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  if (loss > 0) CHECK(f.sim->TotalTraffic().messages_lost > 100);
  tracking = 0;
  for (std::size_t k = 0; k < kDim; ++k) {
    double e = 0;  // the gradient of f_i at x_i is x_i - b_i
    for (NodeId i = 0; i < n; ++i) e += nodes[i]->tracker()[k] - (nodes[i]->params()[k] - f.targets[i][k]);
    tracking = std::max(tracking, std::abs(e));
  }
  if (params != nullptr) {
    for (const auto& nd : nodes) params->emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  return MaxDistanceTo(nodes, f.Optimum());
}

TEST_CASE(
    "DSGT under 10% loss: acknowledged mixes keep sum y = sum g and the exact optimum, without them a bias") {
  // A lost tracker message makes a round's exchange one-sided and shifts
  // sum_i y_i for good; the models then settle where the average gradient
  // is that shift / n instead of 0. With catch_up each tracker message says
  // which rounds of the receiver's its sender mixed, and one-sided mixes are
  // taken out again (gossip/gradient_tracking.h).
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    double with_acks = 0, without = 0;
    const double d_with = GradientTrackingUnderLoss(true, 0.10, seed, with_acks);
    const double d_without = GradientTrackingUnderLoss(false, 0.10, seed, without);
    MESSAGE("seed " << seed << ": |sum y - sum g| " << with_acks << " vs " << without
                    << ", distance to optimum " << d_with << " vs " << d_without);
    CHECK(with_acks < 1e-4);
    CHECK(d_with < 1e-3);
    CHECK(without > 1e-2);
    CHECK(d_without > 1e-2);
  }
}

TEST_CASE("Catch-up is off by default, and on without faults changes no push-sum or DSGT result") {
  // The simulator builds nodes with the default options: catch_up off, so
  // every simulator result stays what it was. A fault-free run with it on
  // must give the same bits (no neighbour is ever two rounds ahead, every
  // DSGT mix is matched).
  CHECK_FALSE(PushSumOptions{}.catch_up);
  CHECK_FALSE(GradientTrackingOptions{}.catch_up);
  double t_on = 0, t_off = 0;
  std::vector<std::vector<float>> on, off;
  GradientTrackingUnderLoss(true, 0.0, 5, t_on, &on);
  GradientTrackingUnderLoss(false, 0.0, 5, t_off, &off);
  CHECK(on == off);
  for (bool catch_up : {false, true}) {
    const NodeId n = 8;
    Fixture f(n, 0.1, 0.0, 6);
    RoundTopology topo(topology::PushSumWeights(topology::Ring(n)));
    PushSumOptions o;
    o.rounds = 100;
    o.catch_up = catch_up;
    auto nodes = PushSumNodes(f, topo, o);
    for (auto& nd : nodes) nd->Start();
    f.sim->RunUntil(Nanos::max());
    std::vector<std::vector<float>> got;
    for (const auto& nd : nodes) got.emplace_back(nd->params().span().begin(), nd->params().span().end());
    (catch_up ? on : off) = got;
  }
  CHECK(on == off);
}

TEST_CASE("A DSGT state with a damaged acknowledgement record is refused naming the entry") {
  Fixture f(4, 0.1);
  RoundTopology topo(topology::UniformWeights(topology::Ring(4)));
  GradientTrackingOptions o;
  o.catch_up = true;
  o.first_round = 10;
  auto make = [&] {
    return std::make_unique<GradientTrackingNode>(f.sim->env(0), topo, *f.learners[0], ParamVector(kDim),
                                                  f.MakeCodec("none", 0), o, nullptr);
  };
  auto exported = make()->ExportState();
  REQUIRE(exported.ok());
  const NodeState good = *exported;
  auto import = [&](const NodeState& st) { return make()->ImportState(st); };
  Status ok = import(good);
  CHECK_MESSAGE(ok.ok(), ok.ToString());
  NodeState half = good;
  half.scalars["mixed/1"] = 0.5;  // a mask is an integer below 2^52
  Status st = import(half);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("'mixed/1' is not a round mask") != std::string::npos);
  NodeState stranger = good;
  stranger.Put("unmatched/9/3", ParamVector(kDim));  // no node 9 in a ring of 4
  st = import(stranger);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("'unmatched/9/3'") != std::string::npos);
  NodeState future = good;
  future.Put("unmatched/1/10", ParamVector(kDim));  // round 10 is not before the state's
  CHECK(import(future).code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace murmur::gossip
