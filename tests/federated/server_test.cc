#include "federated/server.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "core/manual_env.h"

namespace murmur::federated {
namespace {

UpdatePtr Dense(std::vector<float> v) {
  auto none = compression::MakeCompressor("none").value();
  compression::CompressorState s;
  Rng rng(0);
  return none->Compress(v, Layout(), s, rng);
}

MessagePtr Result(std::uint64_t round, double weight, std::uint32_t steps, std::vector<float> delta) {
  FedHeader h;
  h.kind = FedKind::kResult;
  h.round = round;
  h.weight = weight;
  h.steps = steps;
  return std::make_shared<const FedMessage>(h, std::vector<UpdatePtr>{Dense(std::move(delta))});
}

struct Counter final : RoundObserver {
  void OnRoundDone(NodeId, std::uint64_t, double) override { ++rounds; }
  int rounds = 0;
};

TEST_CASE("FedNova normalizes by local steps: Delta = tau_eff sum p_i Delta_i / tau_i") {
  for (bool nova : {false, true}) {
    CAPTURE(nova);
    ManualEnv env(2);
    ServerOptions o;
    o.num_clients = 2;
    o.clients_per_round = 2;
    o.rounds = 1;
    o.fednova = nova;
    FedServer server(env, ParamVector(2), o, nullptr);
    server.Start();
    CHECK(env.outbox().size() == 2);
    CHECK(server.WaitingFor() == std::vector<NodeId>{0, 1});
    // Client 0: 1 step, Delta (1, 0); client 1: 4 steps, Delta (0, 4); equal weights.
    server.OnMessage(0, Result(0, 1, 1, {1, 0}));
    CHECK(server.WaitingFor() == std::vector<NodeId>{1});  // what `murmur job status` shows
    server.OnMessage(1, Result(0, 1, 4, {0, 4}));
    REQUIRE(server.rounds_done() == 1);
    CHECK(server.WaitingFor().empty());
    // FedAvg: (0.5, 2). FedNova: tau_eff = 2.5, d = (0.5, 0.5): (1.25, 1.25).
    CHECK(server.params()[0] == doctest::Approx(nova ? 1.25 : 0.5));
    CHECK(server.params()[1] == doctest::Approx(nova ? 1.25 : 2.0));
  }
}

TEST_CASE("Sample weighting, over-commitment and late results") {
  ManualEnv env(4);
  ServerOptions o;
  o.num_clients = 4;
  o.clients_per_round = 2;
  o.over_commit = 1.5;  // 3 selected, the first 2 kept
  o.rounds = 2;
  Counter counter;
  FedServer server(env, ParamVector(1), o, &counter);
  server.Start();
  REQUIRE(env.outbox().size() == 3);
  const NodeId a = env.outbox()[0].to, b = env.outbox()[1].to, c = env.outbox()[2].to;
  server.OnMessage(a, Result(0, 1, 1, {3}));
  server.OnMessage(b, Result(0, 3, 1, {7}));
  CHECK(counter.rounds == 1);
  CHECK(server.params()[0] == doctest::Approx((3 + 21) / 4.0));
  // Round 1 selects 3 clients: the 3 that are not still busy, never the straggler c.
  REQUIRE(env.outbox().size() == 6);
  for (std::size_t i = 3; i < 6; ++i) CHECK(env.outbox()[i].to != c);
  server.OnMessage(c, Result(0, 1, 1, {100}));  // the straggler of round 0
  CHECK(server.results_dropped() == 1);
  CHECK(server.params()[0] == doctest::Approx(6.0));
}

// One round of every one of `clients` clients; the public bound on a weight is 10.
ServerOptions OneRoundOf(NodeId clients) {
  ServerOptions o;
  o.num_clients = clients;
  o.clients_per_round = clients;
  o.rounds = 1;
  o.max_weight = 10;
  return o;
}

TEST_CASE(
    "Results with an absurd, zero or non-finite weight or values are refused, booked and not waited for") {
  // Three clients, every one each round; the public bound on a weight is 10.
  // Client 2 lies each round in another way; its result is refused at once,
  // and the round closes on the two honest ones: (1 x 4 + 3 x 8) / 4 = 7.
  struct Lie {
    double weight;
    float value;
    Refusal why;
  };
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  for (const Lie& lie : {Lie{1e300, 1, Refusal::kImplausible}, Lie{10.5, 1, Refusal::kImplausible},
                         Lie{0, 1e30f, Refusal::kImplausible}, Lie{-1, 1, Refusal::kImplausible},
                         Lie{std::nan(""), 1, Refusal::kImplausible}, Lie{1, nan, Refusal::kNotFinite},
                         Lie{1, inf, Refusal::kNotFinite}}) {
    CAPTURE(lie.weight);
    CAPTURE(lie.value);
    ManualEnv env(3);
    Counter counter;
    FedServer server(env, ParamVector(1), OneRoundOf(3), &counter);
    server.Start();
    server.OnMessage(0, Result(0, 1, 1, {4}));
    server.OnMessage(2, Result(0, lie.weight, 1, {lie.value}));
    CHECK(counter.rounds == 0);
    server.OnMessage(1, Result(0, 3, 1, {8}));
    REQUIRE(counter.rounds == 1);
    CHECK(server.params()[0] == doctest::Approx(7.0));
    REQUIRE(env.refused().size() == 1);
    CHECK(env.refused()[0] == std::pair<NodeId, Refusal>{2, lie.why});
  }
  // At the bound the weight counts in full.
  ManualEnv env(3);
  FedServer server(env, ParamVector(1), OneRoundOf(2), nullptr);
  server.Start();
  server.OnMessage(0, Result(0, 10, 1, {1}));
  server.OnMessage(1, Result(0, 10, 1, {3}));
  CHECK(server.params()[0] == doctest::Approx(2.0));
  CHECK(env.refused().empty());
}

TEST_CASE(
    "A client online but silent for 3 tasks in a row is left out for 5, 10, 20 ... rounds until it speaks") {
  // Three clients, every one each round, a 10 s deadline; clients 0 and 1
  // answer each task at once, client 2 never does. Its first 3 tasks (rounds
  // 0-2) each cost a deadline; then it is left out for 5 rounds (3-7), tried
  // at round 8, left out for 10 (9-18), tried at 19, left out for 20. At
  // round 25 a late result for its task of round 19 comes: it speaks, so
  // round 26 selects it again, and from there it takes 3 more silent tasks.
  for (bool leave_out : {false, true}) {
    CAPTURE(leave_out);
    ManualEnv env(3);
    ServerOptions o;
    o.num_clients = 3;
    o.clients_per_round = 3;
    o.rounds = 30;
    o.deadline = std::chrono::seconds(10);
    o.leave_out_silent = leave_out;
    Counter counter;
    FedServer server(env, ParamVector(1), o, &counter);
    server.Start();
    std::vector<std::uint64_t> tasked;  // the rounds client 2 got a task in
    std::size_t seen = 0;
    bool spoke = false;
    for (int guard = 0; guard < 100 && !server.finished(); ++guard) {
      while (seen < env.outbox().size()) {  // OnMessage may close the round and send the next tasks
        const auto sent = env.outbox()[seen++];
        const std::uint64_t round = static_cast<const FedMessage&>(*sent.msg).header().round;
        if (round == 25 && !spoke) {
          server.OnMessage(2, Result(19, 1, 1, {5}));
          spoke = true;
        }
        if (sent.to == 2)
          tasked.push_back(round);
        else
          server.OnMessage(sent.to, Result(round, 1, 1, {1}));
      }
      if (!server.finished()) env.AdvanceBy(std::chrono::seconds(10));  // the deadline
    }
    REQUIRE(server.finished());
    CHECK(server.rounds_done() == 30);
    if (!leave_out) {
      CHECK(tasked.size() == 30);  // every round waits its deadline for client 2
      CHECK(env.Now() == std::chrono::seconds(300));
      continue;
    }
    CHECK(tasked == std::vector<std::uint64_t>{0, 1, 2, 8, 19, 26, 27, 28});
    CHECK(env.Now() == std::chrono::seconds(80));  // 8 deadlines
    CHECK(server.left_out_silent().empty());       // round 29 left nobody out anew (client 2 was out already)
  }
}

MessagePtr ModelResult(std::uint64_t round, std::vector<float> model) {
  FedHeader h;
  h.kind = FedKind::kResult;
  h.round = round;
  h.weight = 1;
  h.steps = 1;
  h.flags = kFlagIsModel;
  return std::make_shared<const FedMessage>(h, std::vector<UpdatePtr>{Dense(std::move(model))});
}

TEST_CASE(
    "A result whose difference is longer than plausibility x ||x|| is refused, and at the bound it counts") {
  // x = (3, 4), ||x|| = 5, rho = 2: a difference may be 10 long. (6, 8) is
  // exactly 10 (every square and sum exact in double) and counts.
  const auto x0 = [] {
    ParamVector x(2);
    x[0] = 3;
    x[1] = 4;
    return x;
  };
  struct Case {
    MessagePtr lie;
    bool refused;
  };
  for (const Case& c : {Case{Result(0, 1, 1, {6, 8}), false}, Case{Result(0, 1, 1, {6, 8.01f}), true},
                        Case{Result(0, 1, 1, {1e30f, 0}), true}, Case{Result(0, 1, 1, {-150, -200}), true},
                        Case{ModelResult(0, {9, 12}), false},        // y - x = (6, 8)
                        Case{ModelResult(0, {9, 12.02f}), true}}) {  // y - x = (6, 8.02)
    ManualEnv env(3);
    ServerOptions o = OneRoundOf(3);
    o.plausibility = 2;
    FedServer server(env, x0(), o, nullptr);
    server.Start();
    server.OnMessage(0, Result(0, 1, 1, {0, 0}));
    server.OnMessage(2, c.lie);
    server.OnMessage(1, Result(0, 1, 1, {0, 0}));
    REQUIRE(server.rounds_done() == 1);
    if (c.refused) {
      REQUIRE(env.refused().size() == 1);
      CHECK(env.refused()[0] == std::pair<NodeId, Refusal>{2, Refusal::kImplausible});
      CHECK(server.results_accepted() == 2);
      CHECK(server.params()[0] == 3.0f);  // the honest clients' mean, 0
      CHECK(server.params()[1] == 4.0f);
    } else {
      CHECK(env.refused().empty());
      CHECK(server.params()[0] == doctest::Approx(5.0));  // 3 + 6 / 3
      CHECK(server.params()[1] == doctest::Approx(4.0 + 8.0 / 3));
    }
  }
  // Client-side DP: an honest result carries noise of its own length, so the
  // bound is rho max(||x||, C + z C sqrt(d / K)) = 2 (1 + 10 sqrt(2)) = 30.28.
  for (const bool dp : {false, true}) {
    ManualEnv env(1);
    ServerOptions o = OneRoundOf(1);
    o.plausibility = 2;
    if (dp) {
      o.dp_clip = 1;
      o.dp_noise = 10;
      o.dp_client_side = true;
    }
    FedServer server(env, x0(), o, nullptr);
    server.Start();
    server.OnMessage(0, Result(0, 1, 1, {0, 30}));
    CHECK(env.refused().size() == (dp ? 0u : 1u));
  }
  // A model that is 0 cannot judge lengths, and rho = 0 turns the bound off.
  for (const bool zero : {true, false}) {
    ManualEnv env(1);
    ServerOptions o = OneRoundOf(1);
    o.plausibility = zero ? 2 : 0;
    FedServer server(env, zero ? ParamVector(2) : x0(), o, nullptr);
    server.Start();
    server.OnMessage(0, Result(0, 1, 1, {1e30f, 0}));
    CHECK(env.refused().empty());
    CHECK(server.params()[0] == doctest::Approx(1e30));
  }
}

TEST_CASE("A client the availability predicate calls dead is never selected, even by uniform selection") {
  // 10 clients, K = 4, uniform selection; clients 3 and 7 are dead for the first
  // 150 rounds, then 3 comes back. Among the 8 live clients each round is a
  // uniform 4-subset, so each is chosen with probability 1/2: 75 of 150 rounds
  // (binomial sd 6.1); 3 afterwards with probability 4/9.
  ManualEnv env(10);
  ServerOptions o;
  o.num_clients = 10;
  o.clients_per_round = 4;
  o.rounds = 300;
  bool three_alive = false;
  o.available = [&](NodeId c) { return c != 7 && (c != 3 || three_alive); };
  FedServer server(env, ParamVector(1), o, nullptr);
  server.Start();
  std::vector<int> before(10, 0), after(10, 0);
  std::size_t next = 0;
  while (!server.finished()) {
    const std::uint64_t round = server.rounds_done();
    if (round == 150) three_alive = true;
    const std::size_t end = env.outbox().size();
    REQUIRE(end - next == 4);
    for (; next < end; ++next) {
      const NodeId c = env.outbox()[next].to;
      (round < 150 ? before : after)[c]++;
      server.OnMessage(c, Result(round, 1, 1, {0}));
    }
  }
  CHECK(server.rounds_done() == 300);
  CHECK(before[3] == 0);
  CHECK(before[7] == 0);
  CHECK(after[7] == 0);
  for (NodeId c : {0, 1, 2, 4, 5, 6, 8, 9}) {
    CAPTURE(c);
    CHECK(before[c] == doctest::Approx(75).epsilon(0.4));  // within 30 of 75: ~5 sd
  }
  CHECK(after[3] == doctest::Approx(150.0 * 4 / 9).epsilon(0.45));
}

TEST_CASE("A deadline closes the round with the results in hand") {
  ManualEnv env(4);
  ServerOptions o;
  o.num_clients = 4;
  o.clients_per_round = 4;
  o.rounds = 5;
  o.deadline = std::chrono::seconds(10);
  FedServer server(env, ParamVector(1), o, nullptr);
  server.Start();
  server.OnMessage(env.outbox()[0].to, Result(0, 1, 1, {2}));
  env.AdvanceBy(std::chrono::seconds(9));
  CHECK(server.rounds_done() == 0);
  env.AdvanceBy(std::chrono::seconds(1));
  CHECK(server.rounds_done() == 1);
  CHECK(server.params()[0] == 2.0f);
  // With no result at all the model stays put, and the round still ends.
  env.AdvanceBy(std::chrono::seconds(10));
  CHECK(server.rounds_done() == 2);
  CHECK(server.params()[0] == 2.0f);
}

TEST_CASE("A DP job refuses to run past its epsilon budget") {
  ManualEnv env(100);
  ServerOptions o;
  o.num_clients = 100;
  o.clients_per_round = 10;
  o.rounds = 1000;
  o.dp_clip = 1;
  o.dp_noise = 2.0;  // q = 0.1: epsilon(1e-5) is 0.94 after 10 rounds and 2.59 after 100
  o.epsilon_budget = 2.0;
  o.dp_delta = 1e-5;
  o.deadline = std::chrono::seconds(1);
  FedServer server(env, ParamVector(1), o, nullptr);
  server.Start();
  env.AdvanceBy(std::chrono::seconds(2000));
  CHECK(server.finished());
  CHECK(server.stop_reason().find("privacy budget") != std::string::npos);
  CHECK(server.epsilon() <= 2.0);
  RdpAccountant one_more;
  one_more.Compose(0.1, 2.0, server.rounds_done() + 1);
  CHECK(one_more.Epsilon(1e-5) > 2.0);
  CHECK(server.rounds_done() > 10);
  CHECK(server.rounds_done() < 100);
}

TEST_CASE("FedBuff weights a result by 1 / sqrt(1 + staleness)") {
  ManualEnv env(2);
  ServerOptions o;
  o.num_clients = 2;
  o.clients_per_round = 1;
  o.async = true;
  o.concurrency = 2;
  o.buffer = 1;
  o.rounds = 3;
  FedServer server(env, ParamVector(1), o, nullptr);
  server.Start();
  REQUIRE(env.outbox().size() == 2);
  const NodeId first = env.outbox()[0].to, second = env.outbox()[1].to;
  server.OnMessage(first, Result(0, 1, 1, {1}));  // fresh: +1, model version 1
  CHECK(server.params()[0] == 1.0f);
  server.OnMessage(second, Result(0, 1, 1, {3}));  // staleness 1: +3 / sqrt(2)
  CHECK(server.params()[0] == doctest::Approx(1 + 3 / std::sqrt(2.0)));
  CHECK(server.rounds_done() == 2);
}

TEST_CASE("The mean streams results into one accumulator while a robust rule holds the round's updates") {
  // d = 1000 parameters, K = 8: after 5 of the 8 results the mean's state is
  // what it was before the first; the median's has grown by 5 d floats.
  for (bool robust : {false, true}) {
    CAPTURE(robust);
    ManualEnv env(8);
    ServerOptions o;
    o.num_clients = 8;
    o.clients_per_round = 8;
    o.rounds = 1;
    if (robust) o.robust.rule = AggregationRule::kMedian;
    FedServer server(env, ParamVector(1000), o, nullptr);
    server.Start();
    const std::size_t before = server.state_floats();
    for (NodeId c = 0; c < 5; ++c)
      server.OnMessage(env.outbox()[c].to, Result(0, 1, 1, std::vector<float>(1000, 1.0f)));
    CHECK(server.rounds_done() == 0);
    CHECK(server.state_floats() == before + (robust ? 5 * 1000 : 0));
  }
}

}  // namespace
}  // namespace murmur::federated
