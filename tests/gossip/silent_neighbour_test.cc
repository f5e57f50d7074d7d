// The silent-neighbour rule of D-PSGD with catch-up (docs/security.md,
// "Insiders"), on a simulated 3-node ring whose virtual times follow from the
// device and link figures: a neighbour whose model is missing at 3 timeouts
// in a row is no longer waited for, but one that only lags is waited for
// again once nothing else is, so the node does not run on alone.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "gossip/decentralized_sgd.h"
#include "sim/net/simulator.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

// Node 1 of the ring: it answers node 0's model of round r with its own model
// of round r - 1 (it is a round behind, held up elsewhere) until `caught_up`,
// and from then with its model of round r after `pace` (a slow device). Its
// model is node 0's, so every answer is plausible.
struct Laggard final : public MessageSink {
  sim::Simulator* sim = nullptr;
  std::chrono::nanoseconds caught_up{}, pace{};
  std::uint64_t answered = 0;
  void OnMessage(NodeId from, MessagePtr msg) override {
    const auto& m = static_cast<const GossipMessage&>(*msg);
    const auto model = m.update_ptr();
    if (sim->now() < caught_up) {
      if (m.round() == 0) return;
      sim->env(1).Send(from,
                       std::make_shared<const GossipMessage>(Channel::kModel, m.round() - 1, 0.0, model));
      ++answered;
      return;
    }
    const std::uint64_t round = m.round();
    sim->env(1).StartTimer(pace, [this, from, round, model] {
      sim->env(1).Send(from, std::make_shared<const GossipMessage>(Channel::kModel, round, 0.0, model));
      ++answered;
    });
  }
};

struct Silent final : public MessageSink {
  void OnMessage(NodeId, MessagePtr) override {}
};

// The virtual time at which node 0 ended its last round.
struct LastRound final : public RoundObserver {
  sim::Simulator* sim = nullptr;
  double at_s = 0;
  void OnRoundDone(NodeId, std::uint64_t, double) override {
    at_s = std::chrono::duration<double>(sim->now()).count();
  }
};

// Node 0 trains 1 s a round (1e6 flops at 1 Mflop/s); links take 10 ms; the
// round timeout is 30 s. Node 2 sends nothing and is counted alive until
// 100 s. Node 1 lags a round until 95 s, then answers 5 s after each model.
// Returns the virtual time at which node 0 ended its 20 rounds.
double RunWithLaggard() {
  std::vector<sim::DeviceProfile> devices(3);
  devices[0].flops_per_s = 1e6;
  sim::Simulator sim(sim::SimulatorOptions{}, devices);
  RoundTopology topo(topology::UniformWeights(topology::Ring(3)));
  Laggard laggard;
  laggard.sim = &sim;
  laggard.caught_up = std::chrono::seconds(95);
  laggard.pace = std::chrono::seconds(5);
  Silent silent;
  sim.SetSink(1, &laggard);
  sim.SetSink(2, &silent);
  DecentralizedSgdOptions o;
  o.rounds = 20;
  o.round_timeout = std::chrono::seconds(30);
  o.catch_up = true;  // as on a daemon
  o.peer_alive = [&sim](NodeId j) { return j != 2 || sim.now() < std::chrono::seconds(100); };
  LastRound last;
  last.sim = &sim;
  testing::QuadraticLearner learner({1.0f, 2.0f, -3.0f}, 0.1);
  ParamVector x0(3);
  x0[0] = 1, x0[1] = 2, x0[2] = -3;
  DecentralizedSgdNode node(sim.env(0), topo, learner, std::move(x0),
                            std::make_unique<Codec>(CodecSpec::Parse("none").value(), 0, Layout(),
                                                    Rng(7, 0, RngPurpose::kCompression)),
                            o, &last);
  sim.SetSink(0, &node);
  node.Start();
  sim.RunUntil(Nanos::max());
  REQUIRE(node.finished());
  CHECK(laggard.answered >= 19);
  return last.at_s;
}

TEST_CASE("A neighbour that lags is waited for again once nothing else is: the node does not run on alone") {
  // Rounds 0 to 2 end on their timeouts (node 1's answers are a round old,
  // node 2's never come): 3 x (1 s training + 30 s) = 93 s, and both
  // neighbours count as silent. Round 3 then waits for nobody and ends at
  // 94 s; node 1's model of round 2, which comes while round 4 trains, shows
  // that it lags rather than withholds, and with node 2 unwaited it is waited
  // for again. Rounds 4 to 19 each take 1 s of training, 10 ms there, 5 s at
  // node 1 and 10 ms back: 94 + 16 x 6.02 = 190.3 s. Had node 1 stayed
  // unwaited, node 0 would have run rounds 3 to 19 alone and ended at
  // 93 + 17 = 110 s, mixing none of node 1's models.
  const double end = RunWithLaggard();
  CHECK(end == doctest::Approx(94 + 16 * 6.02).epsilon(1e-3));
}

}  // namespace
}  // namespace murmur::gossip
