// engine::PlanJob's plans: what the builders read, from the plan: each value
// as the text it was parsed from says, the defaults resolved as
// docs/algorithms.md states them; and JobsPlanned, which counts the plans made.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/plan.h"

namespace murmur::engine {
namespace {

TEST_CASE("A gossip plan holds its spec's values parsed, the defaults resolved") {
  proto::JobSpec s;  // dpsgd: CHOCO-SGD with top-1%
  auto plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  CHECK(plan->algorithm() == Algorithm::kDpsgd);
  CHECK(plan->dpsgd_family());
  CHECK_FALSE(plan->federated());
  CHECK(plan->gossip().compression == "topk:0.01");
  CHECK_FALSE(plan->gossip().codec.full_model_safe);
  CHECK(plan->gossip().gamma == 0.05);  // CHOCO's step for a sparsifier
  CHECK(plan->gossip().mixing.rule == gossip::MixingRule::kMean);
  CHECK(plan->gossip().outer.kind == gossip::OuterKind::kNone);
  CHECK(plan->message_codec().spec == plan->gossip().codec.spec);
  s.set_lr_schedule("cosine");
  s.set_rounds(10);
  s.set_local_steps(6);
  s.set_optimizer("adamw");
  s.set_momentum(0);
  plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  // The learner's schedule runs over every node's local steps: rounds x local_steps.
  CHECK(plan->learner().schedule.kind == ml::ScheduleKind::kCosine);
  CHECK(plan->learner().schedule.total_steps == 60);
  CHECK(plan->learner().adamw);
  s.set_compression("fp16");
  s.set_gossip_aggregation("trimmed-mean:2");
  s.set_clip_honest_majority(true);
  plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  CHECK(plan->gossip().gamma == 1);  // whole models in a value coding
  CHECK(plan->gossip().mixing.rule == gossip::MixingRule::kTrimmedMean);
  CHECK(plan->gossip().mixing.trim == 2);
  CHECK(plan->gossip().mixing.honest_majority);
  s = proto::JobSpec();
  s.set_algorithm("diloco-allreduce");
  s.set_nodes(8);
  s.set_outer_optimizer("adam");
  s.set_outer_lr(0.5);
  s.set_collective("halving-doubling");
  s.set_topology("ring");
  s.set_model_buffers("local");
  plan = PlanJob(s, Host::kDaemon);
  REQUIRE(plan.ok());
  CHECK(plan->algorithm() == Algorithm::kDilocoAllReduce);
  CHECK(plan->ring_allreduce());
  CHECK(plan->local_buffers());
  CHECK(plan->gossip().compression == "none");
  CHECK(plan->gossip().outer.kind == gossip::OuterKind::kAdam);
  CHECK(plan->gossip().outer.lr == 0.5);
  CHECK(plan->gossip().collective == gossip::Collective::kHalvingDoubling);
  s.set_algorithm("gossip-learning");
  s.set_collective("ring");
  s.set_topology("one-peer-exponential");
  s.clear_outer_optimizer();
  s.clear_outer_lr();
  s.set_model_buffers("average");
  plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  CHECK(plan->gossip().time_varying);
}

TEST_CASE("A federated plan holds its clients, rules, attackers and compressors, parsed") {
  proto::JobSpec s;
  s.set_algorithm("fedyogi");
  s.set_nodes(20);
  s.set_clients_per_round(0);
  s.set_robust("multi-krum:5");
  s.set_selection("oort");
  s.set_attack("gaussian");
  s.add_attackers(3);
  s.add_attackers(17);
  s.set_upload_compression("topk:0.1");
  s.set_broadcast_compression("int8");
  s.set_dp_side("client");
  auto plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  const FederatedPlan& f = plan->fed();
  CHECK(plan->federated());
  CHECK(plan->algorithm() == Algorithm::kFedYogi);
  CHECK(f.clients == 20);
  CHECK(f.clients_per_round == 20);  // 0: every client
  CHECK(f.optimizer == federated::ServerOptimizerKind::kFedYogi);
  CHECK(f.robust.rule == federated::AggregationRule::kMultiKrum);
  CHECK(f.robust.krum_m == 5);
  CHECK(f.selection == federated::SelectionKind::kOort);
  CHECK(f.attack == federated::AttackKind::kGaussian);
  REQUIRE(f.attackers.size() == 20);
  for (NodeId c = 0; c < 20; ++c) CHECK(f.attackers[c] == (c == 3 || c == 17));
  REQUIRE(f.upload != nullptr);
  CHECK(f.upload->spec() == "topk:0.1");
  REQUIRE(f.broadcast != nullptr);
  CHECK(f.dp_client_side);
  CHECK(plan->message_codec().lossless_fp32);  // a federated message is estimated dense
  s.set_upload_compression("none");
  s.set_broadcast_compression("none");
  s.set_attack("none");
  s.clear_attackers();
  plan = PlanJob(s, Host::kSimulator);
  REQUIRE(plan.ok());
  CHECK(plan->fed().upload == nullptr);
  CHECK(plan->fed().broadcast == nullptr);
  CHECK(plan->fed().attackers.empty());
}

TEST_CASE("JobsPlanned counts every plan made and no refusal") {
  const std::uint64_t before = JobsPlanned();
  proto::JobSpec s;
  REQUIRE(PlanJob(s, Host::kSimulator).ok());
  CHECK(JobsPlanned() == before + 1);
  s.set_lr(-1);
  CHECK_FALSE(PlanJob(s, Host::kSimulator).ok());
  CHECK(JobsPlanned() == before + 1);
}

}  // namespace
}  // namespace murmur::engine
