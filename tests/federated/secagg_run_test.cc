// SecAgg+ inside the simulator's federated run: one FedAvg round with secure
// aggregation lands within the quantization bound of the same round in the
// clear (the bound computed here from the partition sizes and parameters);
// runs with dropped clients keep training; bad fields are named.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "sim/run/federated_run.h"
#include "sim/run/scenario.h"
#include "sim/run/world.h"

namespace murmur::sim {
namespace {

proto::Scenario Blobs(std::uint32_t clients, std::uint64_t rounds) {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("softmax");
  s.mutable_spec()->set_algorithm("fedavg");
  s.mutable_spec()->set_nodes(clients);
  s.mutable_spec()->set_clients_per_round(clients);
  s.mutable_spec()->set_rounds(rounds);
  s.mutable_spec()->set_eval_every(rounds);
  s.set_threads(2);
  return s;
}

TEST_CASE("One SecAgg+ FedAvg round equals the plain round within the quantization bound") {
  for (std::uint32_t k : {0u, 6u}) {
    CAPTURE(k);
    proto::Scenario s = Blobs(12, 1);
    FederatedStats plain;
    REQUIRE(RunFederatedScenario(s, {}, &plain).ok());
    s.mutable_spec()->set_secure_aggregation(true);
    s.mutable_spec()->set_secagg_neighbours(k);
    s.mutable_spec()->set_secagg_bits(16);
    s.mutable_spec()->set_secagg_range(2);
    FederatedStats secure;
    auto run = RunFederatedScenario(s, {}, &secure);
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    CHECK(run->rounds_done == 1);
    CHECK(secure.secagg_rounds_aborted == 0);
    CHECK(secure.results_accepted == 12);

    // Delta = A / W with A = sum_i w_i Delta_i, W = sum_i w_i, w_i = n_i / n_max. Each
    // of A and W is off by at most e = m R / (2^16 - 1), so Delta is off by at most
    // (e + |Delta| e) / (W - e), plus float32 rounding of the stored model.
    auto world = BuildWorld(PlanScenario(s).value()).value();
    double n_max = 0, total = 0;
    for (NodeId i = 0; i < 12; ++i)
      n_max = std::max(n_max, static_cast<double>(world->partition->node(i).size()));
    for (NodeId i = 0; i < 12; ++i) total += static_cast<double>(world->partition->node(i).size()) / n_max;
    const double e = 12 * 2.0 / 65535.0;
    REQUIRE(secure.final_model.size() == plain.final_model.size());
    double worst_excess = 0, worst = 0;
    for (std::size_t j = 0; j < plain.final_model.size(); ++j) {
      const double delta = std::abs(static_cast<double>(plain.final_model[j]) - world->initial[j]);
      const double bound = (e + delta * e) / (total - e) + 2e-7 * (1 + std::abs(plain.final_model[j]));
      const double diff = std::abs(static_cast<double>(secure.final_model[j]) - plain.final_model[j]);
      worst = std::max(worst, diff);
      worst_excess = std::max(worst_excess, diff - bound);
    }
    CHECK(worst_excess <= 0);
    CHECK(worst > 0);
  }
}

TEST_CASE("SecAgg+ runs with 10% and 30% dropouts after key sharing keep training") {
  // k = 16 of 30 for 10%; the complete graph for 30%, where a neighbourhood of
  // 16 (t = 9) would lose more than 7 often enough to abort some rounds.
  for (double dropout : {0.1, 0.3}) {
    CAPTURE(dropout);
    const std::uint32_t k = dropout < 0.2 ? 16 : 0;
    proto::Scenario s = Blobs(30, 8);
    s.mutable_spec()->set_deadline(30);
    FederatedStats plain;
    auto base = RunFederatedScenario(s, {}, &plain);
    REQUIRE(base.ok());
    s.mutable_spec()->set_secure_aggregation(true);
    s.mutable_spec()->set_secagg_neighbours(k);
    s.mutable_spec()->set_secagg_dropout(dropout);
    FederatedStats secure;
    auto run = RunFederatedScenario(s, {}, &secure);
    REQUIRE_MESSAGE(run.ok(), run.status().ToString());
    CHECK(run->rounds_done == 8);
    CHECK(secure.secagg_rounds_aborted == 0);
    CHECK(secure.secagg_clients_dropped > 0);
    CHECK(secure.secagg_clients_dropped + secure.results_accepted == 8 * 30);
    CHECK(run->points.back().avg_acc >= base->points.back().avg_acc - 0.05);
  }
}

TEST_CASE("The spec's plausibility bounds results in the clear and the secure sum alike") {
  // A bound no honest difference meets (1e-6 ||x||): once the global model
  // is not 0 (a zero model judges nothing), every result in the clear is
  // refused, and every secure round's sum is judged and not applied.
  proto::Scenario s = Blobs(6, 3);
  s.mutable_spec()->set_plausibility(1e-6);
  FederatedStats plain;
  auto clear = RunFederatedScenario(s, {}, &plain);
  REQUIRE_MESSAGE(clear.ok(), clear.status().ToString());
  const std::uint64_t refused = clear->refused[static_cast<std::size_t>(Refusal::kImplausible)];
  CHECK(refused >= 12);
  CHECK(refused % 6 == 0);
  CHECK(plain.results_accepted + refused == 18);
  s.mutable_spec()->set_secure_aggregation(true);
  FederatedStats secure;
  auto run = RunFederatedScenario(s, {}, &secure);
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  CHECK(run->rounds_done == 3);
  CHECK(secure.secagg_rounds_aborted * 6 == refused);
  // Off (0), nothing is refused or aborted.
  s.mutable_spec()->set_plausibility(0);
  FederatedStats off;
  REQUIRE(RunFederatedScenario(s, {}, &off).ok());
  CHECK(off.secagg_rounds_aborted == 0);
}

TEST_CASE("SecAgg+ scenario fields are validated by name") {
  proto::Scenario s = Blobs(10, 2);
  s.mutable_spec()->set_secure_aggregation(true);
  CHECK(ValidateScenario(s).ok());
  s.mutable_spec()->set_algorithm("scaffold");
  CHECK(ValidateScenario(s).message().find("'secure_aggregation'") != std::string::npos);
  s.mutable_spec()->set_algorithm("fedavg");
  s.mutable_spec()->set_secagg_neighbours(3);
  CHECK(ValidateScenario(s).message().find("'secagg_neighbours'") != std::string::npos);
  s.mutable_spec()->set_secagg_neighbours(4);
  s.mutable_spec()->set_secagg_bits(30);  // 10 clients of 30 bits overflow 32 bits
  CHECK(ValidateScenario(s).message().find("'secagg_bits'") != std::string::npos);
  s.mutable_spec()->set_secagg_bits(20);
  s.mutable_spec()->set_robust("median");
  CHECK(ValidateScenario(s).message().find("robust = mean") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim
