// Push-sum on closed-form problems in the simulator: exact averaging on a
// directed graph under loss, and its mass (sum of weights and of x) kept
// through churn, loss and late arrivals.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "gossip/push_sum.h"
#include "sim/net/churn.h"
#include "sim/net/simulator.h"
#include "tests/gossip/fixture.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using testing::Fixture;
using testing::kDim;
using testing::MaxDistanceTo;
using testing::PushSumNodes;

TEST_CASE("Push-sum averages exactly on a directed graph under 10% message loss") {
  const NodeId n = 16;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    Fixture f(n, 0.0, 0.10, seed);
    RoundTopology topo(topology::PushSumWeights(topology::Exponential(n)));
    PushSumOptions o;
    o.rounds = 80;
    o.round_timeout = std::chrono::milliseconds(200);
    auto nodes = PushSumNodes(f, topo, o);
    for (auto& nd : nodes) nd->Start();
    f.sim->RunUntil(Nanos::max());
    CHECK(f.sim->TotalTraffic().messages_lost > 50);
    CHECK(MaxDistanceTo(nodes, f.Optimum()) < 1e-3);
  }
}

// Push-sum's books, from every node's exported state (gossip/node_state.h):
// sum_i w_i + sum_ij (sigma_ij - rho_ji), the weights held plus those pushed
// and not yet absorbed, and the same sum for x. Call once every node is done.
struct PushSumBooks {
  double w = 0;
  std::vector<double> x = std::vector<double>(kDim, 0.0);
};

PushSumBooks CountMass(const std::vector<std::unique_ptr<PushSumNode>>& nodes) {
  std::vector<NodeState> states;
  for (const auto& nd : nodes) states.push_back(nd->ExportState().value());
  PushSumBooks books;
  for (std::size_t i = 0; i < states.size(); ++i) {
    books.w += states[i].scalars.at("w");
    for (std::size_t k = 0; k < kDim; ++k) books.x[k] += states[i].vectors.at("x")[k];
    for (std::size_t j = 0; j < states.size(); ++j) {
      auto sent = states[i].scalars.find("sent_w/" + std::to_string(j));
      if (sent == states[i].scalars.end()) continue;
      auto got = states[j].scalars.find("received_w/" + std::to_string(i));
      books.w += sent->second - (got == states[j].scalars.end() ? 0.0 : got->second);
      const auto& sigma = states[i].vectors.at("sent/" + std::to_string(j));
      auto rho = states[j].vectors.find("received/" + std::to_string(i));
      for (std::size_t k = 0; k < kDim; ++k)
        books.x[k] += sigma[k] - (rho == states[j].vectors.end() ? 0.0 : rho->second[k]);
    }
  }
  return books;
}

// 16 push-sum nodes on the complete graph with 10% message loss and Markov
// churn (availability 0.6, 0.5 s online on average) for the first 3 s, after
// which every node is back online; 100 ms rounds.
struct ChurnRun {
  ChurnRun(std::uint64_t seed, double lr, std::uint64_t rounds) : f(kNodes, lr, 0.10, seed) {
    std::vector<sim::DeviceProfile> devices(kNodes);
    for (auto& d : devices) d.availability = 0.6;
    sim::SimulatorOptions so;
    so.seed = seed;
    so.network.message_loss = 0.10;
    f.sim = std::make_unique<sim::Simulator>(so, devices);
    PushSumOptions o;
    o.rounds = rounds;
    o.round_timeout = std::chrono::milliseconds(100);
    nodes = PushSumNodes(f, topo, o);
    sim::ChurnOptions co;
    co.mean_online = std::chrono::milliseconds(500);
    const Nanos until = std::chrono::seconds(3);
    sim::StartMarkovChurn(*f.sim, co, until, [this](NodeId, bool) { ++transitions; });
    std::vector<sim::ChurnEvent> back;
    for (NodeId i = 0; i < kNodes; ++i) back.push_back({until, i, true});
    sim::StartTraceChurn(*f.sim, back, {});
    for (auto& nd : nodes) nd->Start();
  }
  // Runs to the end, calling `look` every 5 ms of virtual time for the
  // first `watch` of it.
  void Run(const std::function<void()>& look = {}, Nanos watch = std::chrono::seconds(15)) {
    for (Nanos t{0}; look && t < watch; t += std::chrono::milliseconds(5)) {
      f.sim->RunUntil(t);
      look();
    }
    f.sim->RunUntil(Nanos::max());
  }
  static constexpr NodeId kNodes = 16;
  Fixture f;
  RoundTopology topo{topology::PushSumWeights(topology::Complete(kNodes))};
  std::vector<std::unique_ptr<PushSumNode>> nodes;
  int transitions = 0;
};

TEST_CASE(
    "Push-sum under churn and 10% loss keeps sum w + in flight = n and sum x likewise, and averages "
    "exactly") {
  // Pure averaging (lr 0): the invariant of Hadjicostis et al.'s running
  // sums must survive nodes going offline and coming back, whatever the
  // messages lost on the way; once all are back the models reach the mean.
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    CAPTURE(seed);
    ChurnRun run(seed, 0.0, 80);
    run.Run();
    CHECK(run.transitions > 20);
    CHECK(run.f.sim->TotalTraffic().messages_lost > 500);
    const PushSumBooks books = CountMass(run.nodes);
    CHECK(books.w == doctest::Approx(ChurnRun::kNodes).epsilon(1e-12));
    const std::vector<double> mean = run.f.Optimum();
    for (std::size_t k = 0; k < kDim; ++k) {
      CAPTURE(k);
      CHECK(books.x[k] == doctest::Approx(mean[k] * ChurnRun::kNodes).epsilon(1e-5));
    }
    CHECK(MaxDistanceTo(run.nodes, mean) < 1e-3);
  }
}

TEST_CASE(
    "Push-sum SGD under churn and 10% loss keeps every model between the b_i and ends near the optimum") {
  // With lr > 0 the mass pushed towards offline nodes used to pile up in
  // running sums while every live node's weight shrank; z = x / w then moved
  // by eta g / w and blew up (gossip/push_sum.h, "Silent neighbours").
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    CAPTURE(seed);
    const double lr = 0.3;
    ChurnRun run(seed, lr, 120);
    // Mixing takes convex combinations and a local step with eta < 1 moves a
    // model part way towards its b_i, so every model stays, coordinate by
    // coordinate, between the smallest and the largest b_i, also while a
    // node is cut off (SGP's step on x moves z by eta / w of the way there,
    // past b_i once w < eta).
    std::vector<double> low(kDim, 1e300), high(kDim, -1e300);
    for (const auto& b : run.f.targets) {
      for (std::size_t k = 0; k < kDim; ++k) {
        low[k] = std::min<double>(low[k], b[k]);
        high[k] = std::max<double>(high[k], b[k]);
      }
    }
    double outside = 0;  // the furthest any model got out of that box
    run.Run([&] {
      for (const auto& nd : run.nodes) {
        for (std::size_t k = 0; k < kDim; ++k) {
          const double z = nd->params()[k];
          const double d = std::isfinite(z) ? std::max({low[k] - z, z - high[k], 0.0}) : 1e300;
          outside = std::max(outside, d);
        }
      }
    });
    CHECK(outside < 1e-4);
    CHECK(CountMass(run.nodes).w == doctest::Approx(ChurnRun::kNodes).epsilon(1e-12));
    // The minimizer of the average objective is the mean of the b_i. With a
    // constant step and lost messages the models settle within O(eta) of it;
    // a loose bound is the largest move of one local step, eta max |b_i - mean|.
    const std::vector<double> optimum = run.f.Optimum();
    double spread = 0;
    for (const auto& b : run.f.targets)
      for (std::size_t k = 0; k < kDim; ++k) spread = std::max(spread, std::abs(b[k] - optimum[k]));
    const double distance = MaxDistanceTo(run.nodes, optimum);
    MESSAGE("seed " << seed << ": furthest out of the box " << outside << ", distance to the optimum "
                    << distance << " (one step " << lr * spread << ")");
    CHECK(distance < lr * spread);
  }
}

TEST_CASE("Push-sum mass that arrives after the receiver's last round is kept") {
  // Node 3 computes 20x slower than the others, whose rounds end on their
  // 5 ms timeout: its running sums reach them after their last round too.
  const NodeId n = 4;
  Fixture f(n, 0.0);
  std::vector<sim::DeviceProfile> devices(n);
  devices[3].flops_per_s = devices[0].flops_per_s / 20;
  f.sim = std::make_unique<sim::Simulator>(sim::SimulatorOptions{}, devices);
  RoundTopology topo(topology::PushSumWeights(topology::Complete(n)));
  PushSumOptions o;
  o.rounds = 10;
  o.round_timeout = std::chrono::milliseconds(5);
  auto nodes = PushSumNodes(f, topo, o);
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  const PushSumBooks books = CountMass(nodes);
  CHECK(books.w == doctest::Approx(n).epsilon(1e-12));
  const std::vector<double> mean = f.Optimum();
  for (std::size_t k = 0; k < kDim; ++k) CHECK(books.x[k] == doctest::Approx(mean[k] * n).epsilon(1e-5));
}

// Node 3 of a complete graph of 4: a certified insider that answers each
// running sum pushed to it with a crafted one of the same round (nothing
// when `craft` is null: a silent node).
struct PushSumInsider final : MessageSink {
  sim::Simulator* sim = nullptr;
  std::function<MessagePtr(const GossipMessage&)> craft;
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (craft == nullptr || msg->kind() != kGossipMessageKind) return;
    sim->env(3).Send(from, craft(static_cast<const GossipMessage&>(*msg)));
  }
};

struct InsiderRun {
  std::vector<std::vector<float>> models;
  std::array<std::uint64_t, kRefusalKinds> refused{};
};

InsiderRun RunWithPushSumInsider(std::function<MessagePtr(const GossipMessage&)> craft, double rho = 10) {
  Fixture f(4, 0.0);  // no training: the honest nodes only average their b_i
  RoundTopology topo(topology::PushSumWeights(topology::Complete(4)));
  PushSumOptions o;
  o.rounds = 30;
  o.round_timeout = std::chrono::seconds(1);
  o.plausibility = rho;
  PushSumInsider insider;
  insider.sim = f.sim.get();
  insider.craft = std::move(craft);
  f.sim->SetSink(3, &insider);
  std::vector<std::unique_ptr<PushSumNode>> nodes;
  for (NodeId i = 0; i < 3; ++i) {
    nodes.push_back(std::make_unique<PushSumNode>(f.sim->env(i), topo, *f.learners[i], f.Initial(i),
                                                  f.MakeCodec("none", i), o, nullptr));
    f.sim->SetSink(i, nodes.back().get());
  }
  for (auto& nd : nodes) nd->Start();
  f.sim->RunUntil(Nanos::max());
  InsiderRun out;
  for (auto& nd : nodes) {
    REQUIRE(nd->finished());
    out.models.emplace_back(nd->params().span().begin(), nd->params().span().end());
  }
  out.refused = f.sim->TotalTraffic().refused;
  return out;
}

TEST_CASE("A push-sum insider's implausible running sums are refused on arrival, as if it were silent") {
  // Refused sums leave the honest nodes exactly where a silent node 3 would
  // (no mass goes to a neighbour never heard from), bit for bit.
  const InsiderRun silent = RunWithPushSumInsider(nullptr);
  struct Case {
    const char* what;
    Refusal why;
    std::function<MessagePtr(const GossipMessage&)> craft;
  };
  const auto sum = [](double w, std::vector<float> x, std::uint64_t round) {
    return std::make_shared<const GossipMessage>(Channel::kPushSum, round, w,
                                                 compression::DenseF32Update(std::move(x)));
  };
  const std::vector<Case> cases = {
      // Half a unit of weight (never absorbed, so every sum adds it anew) carrying a model of
      // 1e30: dx / dw is far from every z_i.
      {"1e30", Refusal::kImplausible,
       [&](const GossipMessage& m) { return sum(0.5, std::vector<float>(kDim, 1e30f), m.round()); }},
      // More weight than the 4 nodes hold together, with an honest-looking model.
      {"weight 1e9", Refusal::kImplausible,
       [&](const GossipMessage& m) {
         return sum(1e9 * static_cast<double>(m.round() + 1), std::vector<float>(kDim, 0.0f), m.round());
       }},
      {"NaN", Refusal::kNotFinite,
       [&](const GossipMessage& m) { return sum(0.5, std::vector<float>(kDim, std::nanf("")), m.round()); }},
      {"one value too few", Refusal::kWrongLength,
       [&](const GossipMessage& m) { return sum(0.5, std::vector<float>(kDim - 1, 0.0f), m.round()); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const InsiderRun attacked = RunWithPushSumInsider(c.craft);
    CHECK(attacked.models == silent.models);
    std::uint64_t total = 0;
    for (std::size_t k = 0; k < kRefusalKinds; ++k) total += attacked.refused[k];
    CHECK(attacked.refused[static_cast<std::size_t>(c.why)] > 0);
    CHECK(attacked.refused[static_cast<std::size_t>(c.why)] == total);
  }
  // Without the distance bound the 1e30 model is absorbed and ruins every honest model.
  const InsiderRun unbounded = RunWithPushSumInsider(cases[0].craft, 0);
  CHECK(unbounded.models != silent.models);
  CHECK(unbounded.refused[static_cast<std::size_t>(Refusal::kImplausible)] == 0);
}

}  // namespace
}  // namespace murmur::gossip
