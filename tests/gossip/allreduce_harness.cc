#include "tests/gossip/allreduce_harness.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "sim/net/simulator.h"
#include "tests/gossip/quadratic.h"
#include "topology/weights.h"

namespace murmur::gossip::testing {
namespace {

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

}  // namespace

Run RunNodes(const topology::Graph& graph, DecentralizedSgdOptions o, double lr, const char* codec,
             const Layout* layout) {
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

RingRun RunRing(NodeId n, const RingAllReduceOptions& o, double lr,
                const std::vector<std::vector<float>>& x0s, const std::vector<std::vector<float>>& targets,
                std::vector<NodeId> silent, const Layout* layout) {
  return RunRingNodes(std::vector<RingAllReduceOptions>(n, o), lr, x0s, targets, std::move(silent), layout);
}

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
  run.seconds = std::chrono::duration<double>(sim.now()).count();
  for (NodeId i = 0; i < n; ++i) {
    run.models.emplace_back(nodes[i]->params().span().begin(), nodes[i]->params().span().end());
    run.received.push_back(sinks[i]->values);
    run.failed.push_back(nodes[i]->failed_rounds());
    if (std::find(silent.begin(), silent.end(), i) == silent.end()) CHECK(nodes[i]->finished());
  }
  return run;
}

ExactSumRun RunExactSum(NodeId n, std::size_t len, Collective collective) {
  std::vector<std::vector<float>> x0s(n, std::vector<float>(len)), targets = x0s;
  ExactSumRun out;
  out.sum.assign(len, 0);
  for (NodeId i = 0; i < n; ++i)
    for (std::size_t k = 0; k < len; ++k) {
      x0s[i][k] = static_cast<float>((i * 7 + k * 3) % 11) - 5.0f;
      out.sum[k] += x0s[i][k];
    }
  RingAllReduceOptions o;
  o.rounds = 1;
  o.collective = collective;
  out.run = RunRing(n, o, 0.0, x0s, targets);
  return out;
}

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

}  // namespace murmur::gossip::testing
