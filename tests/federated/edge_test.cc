// Hierarchical federated learning (federated/edge.h, sim/run/federated_edges.h).
#include <doctest/doctest.h>

#include <cmath>

#include "core/manual_env.h"
#include "engine/federated_builder.h"
#include "federated/edge.h"
#include "federated/server.h"
#include "sim/run/federated_edges.h"
#include "sim/run/federated_run.h"
#include "sim/run/scenario.h"
#include "sim/run/world.h"

namespace murmur::sim {
namespace {

proto::Scenario Blobs(std::uint32_t clients, std::uint64_t rounds) {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:16");
  s.mutable_spec()->set_algorithm("fedavg");
  s.mutable_spec()->set_nodes(clients);
  s.mutable_spec()->set_rounds(rounds);
  s.mutable_spec()->set_eval_every(rounds);
  s.set_threads(2);
  return s;
}

TEST_CASE("Hierarchical FedAvg lands on flat FedAvg's global model: weighted means compose") {
  // Every client takes part in every round in both runs (K = n, and each edge
  // keeps its whole cluster), one local step each: the flat server averages
  // sum_i n_i y_i / sum_i n_i; the edges average their clusters and the top
  // averages the edges with weights W_e = sum_{i in e} n_i. The partitions
  // are Dirichlet, so n_i differ and a plain mean of edge means would not match.
  for (std::uint32_t edges : {2u, 3u, 5u}) {
    CAPTURE(edges);
    proto::Scenario flat = Blobs(15, 20);
    flat.mutable_spec()->set_partition("dirichlet:0.5");
    flat.mutable_spec()->set_clients_per_round(15);
    flat.mutable_spec()->set_local_epochs(0);
    flat.mutable_spec()->set_local_steps(1);
    proto::Scenario hier = flat;
    hier.mutable_spec()->set_edge_aggregators(edges);
    FederatedStats fs, hs;
    auto f = RunFederatedScenario(flat, {}, &fs);
    auto h = RunFederatedScenario(hier, {}, &hs);
    REQUIRE(f.ok());
    REQUIRE(h.ok());
    CHECK(h.value().rounds_done == 20);
    REQUIRE(fs.final_model.size() == hs.final_model.size());
    double worst = 0, moved = 0;
    auto world = BuildWorld(PlanScenario(flat).value()).value();
    for (std::size_t j = 0; j < fs.final_model.size(); ++j) {
      const double scale = 1 + std::fabs(fs.final_model[j]);
      worst = std::max(worst, std::fabs(static_cast<double>(fs.final_model[j]) - hs.final_model[j]) / scale);
      moved = std::max(moved, std::fabs(static_cast<double>(fs.final_model[j]) - world->initial[j]));
    }
    CHECK(moved > 1e-2);  // training moved the model ...
    CHECK(worst < 1e-6);  // ... and the runs agree to float rounding (measured: 1-2 ulps after 20 rounds)
    // The top sees one task and one result per edge instead of one per client:
    // every message has the same size, so its bytes drop by exactly n / E.
    CHECK(fs.top_bytes_received * edges == hs.top_bytes_received * 15);
    CHECK(fs.top_bytes_sent * edges == hs.top_bytes_sent * 15);
    CHECK(hs.results_accepted == 20 * edges);
  }
}

TEST_CASE("An edge none of whose clients answer in time answers empty, and the top moves on") {
  proto::Scenario s = Blobs(12, 6);
  s.mutable_spec()->set_edge_aggregators(3);
  s.mutable_spec()->set_clients_per_round(6);
  s.mutable_spec()->set_deadline(1e-6);  // no client can train and upload in a microsecond
  FederatedStats stats;
  auto run = RunFederatedScenario(s, {}, &stats);
  REQUIRE(run.ok());
  CHECK(run.value().rounds_done == 6);
  CHECK(stats.results_accepted == 0);
  auto world = BuildWorld(PlanScenario(s).value()).value();
  REQUIRE(stats.final_model.size() == world->initial.size());
  std::size_t differing = 0;
  for (std::size_t j = 0; j < stats.final_model.size(); ++j)
    differing += stats.final_model[j] != world->initial[j];
  CHECK(differing == 0);
}

Layout OneParameter() {
  Layout l;
  l.Add("w", {1});
  return l;
}

federated::FedMessage Task(std::uint64_t round, std::vector<float> x, std::uint8_t flags = 0) {
  federated::FedHeader h;
  h.round = round;
  h.flags = flags;
  return federated::FedMessage(h, {compression::DenseF32Update(x)});
}

MessagePtr Result(std::uint64_t round, double weight, std::vector<float> delta) {
  federated::FedHeader h;
  h.kind = federated::FedKind::kResult;
  h.round = round;
  h.weight = weight;
  h.steps = 1;
  return std::make_shared<const federated::FedMessage>(
      h, std::vector<federated::UpdatePtr>{compression::DenseF32Update(delta)});
}

TEST_CASE("An edge forwards the task to its cluster and sends its parent one sample-weighted result") {
  // Parent 9, members 3, 4, 5; keep 2 of them. Results Delta = 1 (n = 1) and
  // 4 (n = 3): the edge sends (1 + 12) / 4 = 3.25 with weight 4.
  ManualEnv env(8);
  federated::EdgeOptions o;
  o.parent = 9;
  o.members = {3, 4, 5};
  o.clients_per_round = 2;
  federated::EdgeAggregator edge(env, OneParameter(), o);
  edge.OnMessage(9, std::make_shared<const federated::FedMessage>(Task(4, {10})));
  REQUIRE(env.outbox().size() == 2);
  const NodeId a = env.outbox()[0].to, b = env.outbox()[1].to;
  CHECK(a != b);
  for (NodeId to : {a, b}) CHECK((to >= 3 && to <= 5));
  edge.OnMessage(7, Result(4, 1, {100}));  // not a member: dropped
  edge.OnMessage(a, Result(4, 1, {1}));
  CHECK(env.outbox().size() == 2);
  edge.OnMessage(b, Result(4, 3, {4}));
  REQUIRE(env.outbox().size() == 3);
  CHECK(env.outbox()[2].to == 9);
  const auto& up = static_cast<const federated::FedMessage&>(*env.outbox()[2].msg);
  CHECK(up.header().kind == federated::FedKind::kResult);
  CHECK(up.header().round == 4);
  CHECK(up.header().weight == 4.0);
  ParamVector got(1);
  REQUIRE(up.updates()[0]->AddTo(got.span()).ok());
  CHECK(got[0] == doctest::Approx(3.25));
  CHECK(edge.results_dropped() == 1);
}

TEST_CASE("An edge refuses and books a member's implausible result, and closes on the honest ones") {
  // Task x = 10, rho = 2: a difference may be 20 long. Member 5 sends 1e30,
  // then weight 50 over a bound of 40, then 20.5, just past the length bound.
  for (const auto& lie : {Result(0, 1, {1e30f}), Result(0, 50, {1}), Result(0, 1, {20.5f})}) {
    ManualEnv env(8);
    federated::EdgeOptions o;
    o.parent = 9;
    o.members = {3, 4, 5};
    o.clients_per_round = 3;
    o.max_weight = 40;
    o.plausibility = 2;
    federated::EdgeAggregator edge(env, OneParameter(), o);
    edge.OnMessage(9, std::make_shared<const federated::FedMessage>(Task(0, {10})));
    REQUIRE(env.outbox().size() == 3);
    edge.OnMessage(3, Result(0, 1, {20}));  // at the bound: counts
    edge.OnMessage(5, lie);
    edge.OnMessage(4, Result(0, 3, {4}));
    REQUIRE(env.outbox().size() == 4);
    const auto& up = static_cast<const federated::FedMessage&>(*env.outbox()[3].msg);
    CHECK(up.header().weight == 4.0);
    ParamVector got(1);
    REQUIRE(up.updates()[0]->AddTo(got.span()).ok());
    CHECK(got[0] == doctest::Approx((20 + 12) / 4.0));
    REQUIRE(env.refused().size() == 1);
    CHECK(env.refused()[0] == std::pair<NodeId, Refusal>{5, Refusal::kImplausible});
    CHECK(edge.results_dropped() == 1);
  }
}

TEST_CASE(
    "An edge with no client online answers empty, and the top closes its round on it, model unchanged") {
  ManualEnv edge_env(8);
  federated::EdgeOptions o;
  o.parent = 9;
  o.members = {3, 4};
  o.clients_per_round = 2;
  federated::EdgeAggregator edge(edge_env, OneParameter(), o);
  edge.SetOnline(3, false);
  edge.SetOnline(4, false);
  edge.OnMessage(9, std::make_shared<const federated::FedMessage>(Task(0, {10})));
  REQUIRE(!edge_env.outbox().empty());
  const auto& up = edge_env.outbox().back();
  CHECK(up.to == 9);
  const auto& m = static_cast<const federated::FedMessage&>(*up.msg);
  CHECK((m.header().flags & federated::kFlagEmpty) != 0);

  // A top server of one edge and no deadline: without the empty answer it would wait forever.
  ManualEnv top_env(9);
  federated::ServerOptions so;
  so.num_clients = 1;
  so.clients_per_round = 1;
  so.rounds = 1;
  ParamVector x0(1);
  x0[0] = 10;
  federated::FedServer top(top_env, std::move(x0), so, nullptr);
  top.Start();
  top.OnMessage(0, up.msg);
  CHECK(top.rounds_done() == 1);
  CHECK(top.finished());
  CHECK(top.params()[0] == 10.0f);
  CHECK(top.results_accepted() == 0);
}

TEST_CASE("Clients are assigned to edges in contiguous blocks of ids, k_e in proportion") {
  auto edge_of = EdgesById(10, 3);
  const std::vector<std::uint32_t> expected = {0, 0, 0, 0, 1, 1, 1, 2, 2, 2};  // floor(3 i / 10)
  CHECK(edge_of == expected);
  CHECK(engine::EdgeClientsPerRound(10, 25, 100) == 3);  // round(2.5) away from zero
  CHECK(engine::EdgeClientsPerRound(10, 4, 100) == 1);   // at least one
  CHECK(engine::EdgeClientsPerRound(10, 0, 100) == 0);
}

TEST_CASE("Vehicles report to the nearest roadside unit, and a run over RSUs trains") {
  proto::Scenario s = Blobs(24, 10);
  s.mutable_spec()->set_topology("vehicles");
  s.set_rsus(4);
  s.mutable_spec()->set_edge_aggregators(4);
  s.mutable_spec()->set_edge_assignment("nearest-rsu");
  s.mutable_spec()->set_clients_per_round(8);
  auto world = BuildWorld(PlanScenario(s).value()).value();
  world->mobility->Advance(30);
  auto edge_of = NearestRsu(*world->mobility, 20, 4);
  const auto& p = world->mobility->positions();
  for (NodeId i = 0; i < 20; ++i) {
    CAPTURE(i);
    const auto& mine = p[20 + edge_of[i]];
    const double d = std::hypot(p[i].x - mine.x, p[i].y - mine.y);
    for (NodeId e = 0; e < 4; ++e) CHECK(d <= std::hypot(p[i].x - p[20 + e].x, p[i].y - p[20 + e].y));
  }
  FederatedStats stats;
  auto run = RunFederatedScenario(s, {}, &stats);
  REQUIRE(run.ok());
  CHECK(run.value().rounds_done == 10);
  CHECK(stats.results_accepted <= 10 * 4);  // at most one result per RSU per round reaches the top
  CHECK(run.value().points.back().avg_acc > run.value().points.front().avg_acc + 0.2);
}

TEST_CASE("Edge fields are validated by name") {
  proto::Scenario s = Blobs(10, 5);
  s.mutable_spec()->set_clients_per_round(5);
  s.mutable_spec()->set_edge_aggregators(11);
  CHECK(ValidateScenario(s).message().find("'edge_aggregators'") != std::string::npos);
  s.mutable_spec()->set_edge_aggregators(2);
  CHECK(ValidateScenario(s).ok());
  s.mutable_spec()->set_edge_assignment("nearest-rsu");
  CHECK(ValidateScenario(s).message().find("'edge_assignment'") != std::string::npos);
  s.mutable_spec()->set_edge_assignment("by-region");
  CHECK(ValidateScenario(s).message().find("by-region") != std::string::npos);
  s.mutable_spec()->set_edge_assignment("id");
  s.set_edge_devices("satellite");
  CHECK(ValidateScenario(s).message().find("'edge_devices'") != std::string::npos);
  s.set_edge_devices("edge-server");
  s.mutable_spec()->set_algorithm("scaffold");
  CHECK(ValidateScenario(s).message().find("scaffold") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim
