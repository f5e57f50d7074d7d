// DiLoCo over gossip (gossip/decentralized_sgd.h, options.outer) on
// closed-form problems: the outer optimizers against their sequences
// computed here in double, and the outer SGD at rate 1 against D-PSGD.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/manual_env.h"
#include "gossip/decentralized_sgd.h"
#include "gossip/ring_allreduce.h"
#include "sim/simulator.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using testing::QuadraticLearner;

constexpr std::size_t kDim = 6;

struct Run {
  std::vector<std::vector<float>> models;  // each node's final x
  std::vector<std::vector<float>> targets;
};

// `rounds` rounds of DecentralizedSgdNode with `o` on `graph` (uniform
// weights), node i minimizing 0.5 ||x - b_i||^2 with `steps` inner steps of
// rate `lr`, every node starting from the same x0.
Run RunNodes(const topology::Graph& graph, DecentralizedSgdOptions o, double lr, const char* codec = "none",
             const Layout* layout = nullptr) {
  const NodeId n = graph.num_nodes();
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  RoundTopology topo(topology::UniformWeights(graph));
  Run run;
  std::vector<std::unique_ptr<QuadraticLearner>> learners;
  std::vector<std::unique_ptr<DecentralizedSgdNode>> nodes;
  ParamVector x0 = layout ? ParamVector(*layout) : ParamVector(kDim);
  REQUIRE(x0.size() == kDim);
  for (std::size_t k = 0; k < kDim; ++k) x0[k] = static_cast<float>(k) - 2.5f;
  for (NodeId i = 0; i < n; ++i) {
    std::vector<float> b(kDim);
    Rng rng(3, i, RngPurpose::kGeneric);
    for (auto& v : b) v = static_cast<float>(rng.Normal() * 2);
    run.targets.push_back(b);
    learners.push_back(std::make_unique<QuadraticLearner>(b, lr));
    auto cs = CodecSpec::Parse(codec).value();
    nodes.push_back(std::make_unique<DecentralizedSgdNode>(
        sim.env(i), topo, *learners.back(), x0.Clone(),
        std::make_unique<Codec>(cs, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, nullptr));
    sim.SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  sim.RunUntil(Nanos::max());
  for (auto& nd : nodes) {
    REQUIRE(nd->finished());
    run.models.emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  return run;
}

// The same run computed here in double: inner steps x <- x - lr (x - b_i),
// the mix x_mix,i = sum_j W_ij x_end,j with W uniform over i and its
// neighbours, g = x_start - x_mix, and the outer step of the header.
std::vector<std::vector<double>> Expected(const topology::Graph& graph, const DecentralizedSgdOptions& o,
                                          double lr, const std::vector<std::vector<float>>& targets) {
  const NodeId n = graph.num_nodes();
  std::vector<std::vector<double>> x(n, std::vector<double>(kDim)), m = x, v = x;
  for (auto& xi : x)
    for (std::size_t k = 0; k < kDim; ++k) xi[k] = static_cast<double>(k) - 2.5;
  const OuterOptions& u = o.outer;
  for (std::uint64_t t = 1; t <= o.rounds; ++t) {
    std::vector<std::vector<double>> end = x, next = x;
    for (NodeId i = 0; i < n; ++i)
      for (int s = 0; s < o.local_steps; ++s)
        for (std::size_t k = 0; k < kDim; ++k) end[i][k] -= lr * (end[i][k] - targets[i][k]);
    for (NodeId i = 0; i < n; ++i) {
      std::vector<NodeId> in(graph.Neighbors(i).begin(), graph.Neighbors(i).end());
      in.push_back(i);
      for (std::size_t k = 0; k < kDim; ++k) {
        double mix = 0;
        for (NodeId j : in) mix += end[j][k] / static_cast<double>(in.size());
        const double g = x[i][k] - mix;
        double step = g;
        if (u.kind == OuterKind::kNesterov) {
          m[i][k] = u.momentum * m[i][k] + g;
          step = g + u.momentum * m[i][k];
        } else if (u.kind == OuterKind::kAdam) {
          m[i][k] = u.momentum * m[i][k] + (1 - u.momentum) * g;
          v[i][k] = u.beta2 * v[i][k] + (1 - u.beta2) * g * g;
          const double mh = m[i][k] / (1 - std::pow(u.momentum, static_cast<double>(t)));
          const double vh = v[i][k] / (1 - std::pow(u.beta2, static_cast<double>(t)));
          step = mh / (std::sqrt(vh) + 1e-8);
        }
        next[i][k] = x[i][k] - u.lr * step;
      }
    }
    x = std::move(next);
  }
  return x;
}

double WorstGap(const Run& run, const std::vector<std::vector<double>>& want) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    for (std::size_t k = 0; k < kDim; ++k) {
      const double d = std::abs(run.models[i][k] - want[i][k]);
      worst = std::isfinite(d) ? std::max(worst, d) : INFINITY;
    }
  return worst;
}

TEST_CASE("DiLoCo with H = 1 and outer SGD at rate 1 is D-PSGD bit for bit, on a complete graph and a ring") {
  for (const topology::Graph& g : {topology::Complete(6), topology::Ring(6)}) {
    for (int h : {1, 4}) {
      CAPTURE(h);
      DecentralizedSgdOptions dpsgd;
      dpsgd.rounds = 25;
      dpsgd.local_steps = h;
      DecentralizedSgdOptions diloco = dpsgd;
      diloco.outer.kind = OuterKind::kSgd;
      diloco.outer.lr = 1.0;
      const Run a = RunNodes(g, dpsgd, 0.1), b = RunNodes(g, diloco, 0.1);
      CHECK(a.models == b.models);
      CHECK(a.models[0] != a.models[1]);  // heterogeneous nodes: not one vector everywhere
    }
  }
}

TEST_CASE("DiLoCo's outer SGD, Nesterov and Adam steps follow their sequences computed in double") {
  struct Case {
    OuterKind kind;
    double lr, momentum;
  };
  for (const topology::Graph& g : {topology::Complete(5), topology::Ring(7)}) {
    CAPTURE(g.num_nodes());
    for (const Case& c : {Case{OuterKind::kSgd, 0.5, 0}, Case{OuterKind::kNesterov, 0.7, 0.9},
                          Case{OuterKind::kAdam, 0.05, 0.9}}) {
      CAPTURE(static_cast<int>(c.kind));
      DecentralizedSgdOptions o;
      o.rounds = 40;
      o.local_steps = 5;
      o.outer.kind = c.kind;
      o.outer.lr = c.lr;
      o.outer.momentum = c.momentum;
      const Run run = RunNodes(g, o, 0.05);
      const auto want = Expected(g, o, 0.05, run.targets);
      CHECK(WorstGap(run, want) < 1e-4);
      // The recursion is not trivial: the run moved away from x0 and, on the
      // ring, the nodes still disagree.
      CHECK(std::abs(want[0][0] - (-2.5)) > 0.1);
    }
  }
}

TEST_CASE("DiLoCo with exact averaging reaches the optimum of the average objective, compressed too") {
  // Quadratics with one curvature: the fixed point of local steps plus exact
  // averaging is the mean of the b_i, whatever H, and Nesterov's outer
  // momentum gets every node there, whole models in fp32 or int8 (within
  // int8's rounding of each model it sends: 1/127 of the largest value). CHOCO's
  // top-50% differences mix only part of the way each round, so the nodes
  // keep a disagreement of the order of their local drift; but their mean
  // is exact (the CHOCO terms s_i - x^_i sum to zero under a doubly
  // stochastic W, and the outer step is linear in g), so it alone must land
  // on the optimum.
  for (const std::string codec : {"none", "int8", "topk:0.5"}) {
    CAPTURE(codec);
    const bool choco = codec == "topk:0.5";
    DecentralizedSgdOptions o;
    o.rounds = 150;
    o.local_steps = 10;
    o.outer.kind = OuterKind::kNesterov;
    o.outer.lr = 0.7;
    o.outer.momentum = 0.9;
    if (choco) o.gamma = 0.5;
    const Run run = RunNodes(topology::Complete(6), o, 0.05, codec.c_str());
    for (std::size_t k = 0; k < kDim; ++k) {
      double optimum = 0, mean = 0;
      for (const auto& b : run.targets) optimum += b[k] / static_cast<double>(run.targets.size());
      for (const auto& x : run.models) mean += x[k] / static_cast<double>(run.models.size());
      // int8 rounds each model it sends (no error feedback on whole models).
      CHECK(std::abs(mean - optimum) < (codec == "int8" ? 0.02 : 1e-3));
      if (!choco)
        for (const auto& x : run.models) CHECK(std::abs(x[k] - optimum) < 0.02);
    }
  }
}

// Counts the values a node receives, then hands the message on.
class CountingSink final : public MessageSink {
 public:
  explicit CountingSink(MessageSink* node) : node_(node) {}
  void OnMessage(NodeId from, MessagePtr msg) override {
    values += static_cast<const GossipMessage&>(*msg).update().size();
    ++messages;
    node_->OnMessage(from, std::move(msg));
  }
  std::size_t values = 0, messages = 0;

 private:
  MessageSink* node_;
};

struct RingRun {
  std::vector<std::vector<float>> models;
  std::vector<std::size_t> received;  // values each node received
  std::vector<std::uint64_t> failed;  // rounds whose all-reduce timed out, per node
};

// n RingAllReduceNodes; node i starts from x0s[i] and minimizes
// 0.5 ||x - targets[i]||^2 with `lr`. Nodes in `silent` are never started
// and drop what they receive.
RingRun RunRingNodes(const std::vector<RingAllReduceOptions>& per_node, double lr,
                     const std::vector<std::vector<float>>& x0s,
                     const std::vector<std::vector<float>>& targets, std::vector<NodeId> silent = {},
                     const Layout* layout = nullptr);

RingRun RunRing(NodeId n, const RingAllReduceOptions& o, double lr,
                const std::vector<std::vector<float>>& x0s, const std::vector<std::vector<float>>& targets,
                std::vector<NodeId> silent = {}, const Layout* layout = nullptr) {
  return RunRingNodes(std::vector<RingAllReduceOptions>(n, o), lr, x0s, targets, std::move(silent), layout);
}

// As RunRing, each node with its own options (its ring may be a group).
RingRun RunRingNodes(const std::vector<RingAllReduceOptions>& per_node, double lr,
                     const std::vector<std::vector<float>>& x0s,
                     const std::vector<std::vector<float>>& targets, std::vector<NodeId> silent,
                     const Layout* layout) {
  const auto n = static_cast<NodeId>(per_node.size());
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  std::vector<std::unique_ptr<QuadraticLearner>> learners;
  std::vector<std::unique_ptr<RingAllReduceNode>> nodes;
  std::vector<std::unique_ptr<CountingSink>> sinks;
  auto none = CodecSpec::Parse("none").value();
  for (NodeId i = 0; i < n; ++i) {
    learners.push_back(std::make_unique<QuadraticLearner>(targets[i], lr));
    ParamVector x0 = layout ? ParamVector(*layout) : ParamVector(x0s[i].size());
    for (std::size_t k = 0; k < x0.size(); ++k) x0[k] = x0s[i][k];
    const RingAllReduceOptions& o = per_node[i];
    const auto ring = o.ring.empty() ? n : static_cast<NodeId>(o.ring.size());
    nodes.push_back(std::make_unique<RingAllReduceNode>(
        sim.env(i), ring, *learners.back(), std::move(x0),
        std::make_unique<Codec>(none, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, nullptr));
    sinks.push_back(std::make_unique<CountingSink>(nodes.back().get()));
    const bool mute = std::find(silent.begin(), silent.end(), i) != silent.end();
    if (!mute) sim.SetSink(i, sinks.back().get());
  }
  for (NodeId i = 0; i < n; ++i)
    if (std::find(silent.begin(), silent.end(), i) == silent.end()) nodes[i]->Start();
  sim.RunUntil(Nanos::max());
  RingRun run;
  for (NodeId i = 0; i < n; ++i) {
    run.models.emplace_back(nodes[i]->params().span().begin(), nodes[i]->params().span().end());
    run.received.push_back(sinks[i]->values);
    run.failed.push_back(nodes[i]->failed_rounds());
    if (std::find(silent.begin(), silent.end(), i) == silent.end()) CHECK(nodes[i]->finished());
  }
  return run;
}

TEST_CASE(
    "Ring all-reduce: the exact sum for 1 to 17 nodes, segments that do not divide the length, and "
    "2 (n - 1) / n of the model sent by each node") {
  for (NodeId n = 1; n <= 17; ++n) {
    for (std::size_t len : {std::size_t{37}, std::size_t{3} * n, std::size_t{1}}) {
      CAPTURE(n);
      CAPTURE(len);
      // Small integers: every partial sum is exact in float, so the mean is
      // the correctly rounded sum / n, whatever the order of the additions.
      std::vector<std::vector<float>> x0s(n, std::vector<float>(len)), targets = x0s;
      std::vector<double> sum(len, 0);
      for (NodeId i = 0; i < n; ++i)
        for (std::size_t k = 0; k < len; ++k) {
          x0s[i][k] = static_cast<float>((i * 7 + k * 3) % 11) - 5.0f;
          sum[k] += x0s[i][k];
        }
      RingAllReduceOptions o;
      o.rounds = 1;
      const RingRun run = RunRing(n, o, 0.0, x0s, targets);  // lr 0: the local steps change nothing
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

// Hierarchical: G groups of m (group g = ids g m .. g m + m - 1), mixing over `w`.
std::vector<RingAllReduceOptions> Groups(NodeId g, NodeId m, const topology::MixingMatrix& w) {
  std::vector<RingAllReduceOptions> out(g * m);
  for (NodeId i = 0; i < g * m; ++i) {
    const NodeId mine = i / m, position = i % m;
    RingAllReduceOptions& o = out[i];
    o.rounds = 1;
    for (NodeId k = 0; k < m; ++k) o.ring.push_back(mine * m + k);
    o.cross_self = 0;
    for (const topology::MixingEntry& e : w.Row(mine)) {
      if (e.col == mine) {
        o.cross_self = e.weight;
      } else {
        o.cross.emplace_back(e.col * m + position, e.weight);
      }
    }
  }
  return out;
}

TEST_CASE("Hierarchical all-reduce: group means mixed by W between the halves, checked in double") {
  const std::size_t len = 29;
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
    const RingRun run = RunRingNodes(Groups(c.g, c.m, w), 0.0, x0s, targets);
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
  for (bool with_view : {true, false}) {
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
        CHECK(nodes[i]->failed_rounds() >= 15);  // without a view every later round stalls
      }
    }
  }
}

TEST_CASE("Overlapped all-reduce: the one-step-delayed outer update against its recursion in double") {
  const NodeId n = 5;
  const double lr = 0.05;
  const int h = 4;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i) {
    Rng rng(9, i, RngPurpose::kGeneric);
    for (std::size_t k = 0; k < kDim; ++k) {
      x0s[i][k] = static_cast<float>(k) - 2.5f;  // one anchor for all
      targets[i][k] = static_cast<float>(rng.Normal() * 2);
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
    // theta <- theta - lr step(mean progress of the phase before), one phase late;
    // x_i <- theta - (phase progress of i); after the last round x_i = theta.
    std::vector<double> theta(x0s[0].begin(), x0s[0].end()), m(kDim, 0.0);
    std::vector<std::vector<double>> x(n, theta), d(n, std::vector<double>(kDim));
    auto phase = [&] {
      for (NodeId i = 0; i < n; ++i) {
        const std::vector<double> start = x[i];
        for (int s = 0; s < h; ++s)
          for (std::size_t k = 0; k < kDim; ++k) x[i][k] -= lr * (x[i][k] - targets[i][k]);
        for (std::size_t k = 0; k < kDim; ++k) d[i][k] = start[k] - x[i][k];
      }
    };
    auto outer = [&](const std::vector<std::vector<double>>& progress) {
      for (std::size_t k = 0; k < kDim; ++k) {
        double g = 0;
        for (NodeId i = 0; i < n; ++i) g += progress[i][k] / n;
        double step = g;
        if (kind == OuterKind::kNesterov) {
          m[k] = o.outer.momentum * m[k] + g;
          step = g + o.outer.momentum * m[k];
        }
        theta[k] -= kind == OuterKind::kNone ? g : o.outer.lr * step;
      }
    };
    phase();
    for (std::uint64_t p = 1; p < o.rounds; ++p) {
      const auto before = d;
      phase();
      outer(before);
      for (NodeId i = 0; i < n; ++i)
        for (std::size_t k = 0; k < kDim; ++k) x[i][k] = theta[k] - d[i][k];
    }
    outer(d);
    double worst = 0;
    for (NodeId i = 0; i < n; ++i) {
      CHECK(run.failed[i] == 0);
      CHECK(run.models[i] == run.models[0]);  // every node ends on the anchor
      for (std::size_t k = 0; k < kDim; ++k) worst = std::max(worst, std::abs(run.models[i][k] - theta[k]));
    }
    CHECK(worst < 1e-4);
    // Not the same as waiting for each round's mean.
    o.overlap = false;
    const RingRun waited = RunRing(n, o, lr, x0s, targets);
    CHECK(waited.models[0] != run.models[0]);
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
    "Local tensors (FedBN): mixing and outer steps leave a node's buffer tensors as its own training left "
    "them") {
  // x = (w: 4 values, buffer:s: 2). The quadratics are separable, so with
  // local buffers the w coordinates run exactly as without (bit for bit),
  // and each buffer coordinate follows the node's own local steps alone:
  // b_i + (1 - lr)^(rounds H) (x0 - b_i).
  Layout layout;
  layout.Add("w", {4});
  layout.Add("buffer:s", {2});
  const double lr = 0.05;
  auto own = [&](double x0, double b, int steps) {
    double x = x0;
    for (int s = 0; s < steps; ++s) x -= lr * (x - b);
    return x;
  };
  struct Case {
    MixOrder order;
    OuterKind outer;
  };
  for (const Case& c : {Case{MixOrder::kAdaptThenCombine, OuterKind::kNone},
                        Case{MixOrder::kCombineThenAdapt, OuterKind::kNone},
                        Case{MixOrder::kAdaptThenCombine, OuterKind::kNesterov}}) {
    CAPTURE(static_cast<int>(c.order));
    CAPTURE(static_cast<int>(c.outer));
    DecentralizedSgdOptions o;
    o.rounds = 20;
    o.local_steps = 3;
    o.order = c.order;
    o.outer.kind = c.outer;
    const Run shared = RunNodes(topology::Ring(5), o, lr, "none", &layout);
    o.local = LocalTensors(layout, kBufferTensorPrefix);
    REQUIRE(o.local.size() == 2);
    const Run local = RunNodes(topology::Ring(5), o, lr, "none", &layout);
    for (std::size_t i = 0; i < local.models.size(); ++i) {
      CAPTURE(i);
      for (std::size_t k = 0; k < 4; ++k) CHECK(local.models[i][k] == shared.models[i][k]);
      for (std::size_t k = 4; k < 6; ++k)
        CHECK(local.models[i][k] ==
              doctest::Approx(own(static_cast<double>(k) - 2.5, local.targets[i][k], 60)).epsilon(1e-5));
    }
    CHECK(shared.models[0][4] != local.models[0][4]);  // without it the buffers are mixed
  }
  // The ring all-reduce: the same.
  const NodeId n = 4;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i)
    for (std::size_t k = 0; k < kDim; ++k) {
      x0s[i][k] = 1.0f;
      targets[i][k] = static_cast<float>(i + k);
    }
  RingAllReduceOptions r;
  r.rounds = 10;
  r.local_steps = 2;
  const RingRun shared = RunRing(n, r, lr, x0s, targets, {}, &layout);
  r.local = LocalTensors(layout, kBufferTensorPrefix);
  const RingRun local = RunRing(n, r, lr, x0s, targets, {}, &layout);
  for (NodeId i = 0; i < n; ++i) {
    CAPTURE(i);
    for (std::size_t k = 0; k < 4; ++k) CHECK(local.models[i][k] == shared.models[i][k]);
    for (std::size_t k = 4; k < 6; ++k)
      CHECK(local.models[i][k] == doctest::Approx(own(1.0, targets[i][k], 20)).epsilon(1e-5));
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
