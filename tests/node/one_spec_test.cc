// One JobSpec, two hosts: the same spec run by `murmur sim` (sim::RunScenario)
// and by a fleet of murmurd daemons on loopback (submitted through their
// control ports as a JobConfig holding that spec, word for word). Both build
// their nodes through the one engine (engine/gossip_builder.h,
// engine/federated_builder.h), so for every gossip algorithm and every
// federated strategy whose outcome is a function of the spec and the message
// order they must end with the same models bit for bit: synchronous gossip
// (D-PSGD in both orders, CHOCO-SGD, push-sum, DSGT) mixes in sender order
// whatever the arrival order, and a synchronous federated round sums its
// results in double precision, where the terms are exact, so the order they
// arrive in changes no bit we have seen (docs/daemon.md, "Federated jobs",
// bounds it). The two asynchronous algorithms depend on timing (gossip
// learning's wake-ups follow the real clock, FedBuff's buffer the arrival
// order), so for them the daemons' accuracy must land within the spread of
// the simulator's over seeds (docs/daemon.md, "Conformance").
//
// No test here writes a Scenario field from a JobConfig field: the spec is
// copied whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "engine/algorithms.h"
#include "node/job/job.h"
#include "sim/runner.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using testing::FedFleet;

// Timing-dependent algorithms: at most this far from the simulator's accuracy
// over seeds 1-5 (the same tolerance as the gossip-learning daemon test).
constexpr double kAsynchronousTolerance = 0.05;

proto::JobSpec BaseSpec(const std::string& algorithm) {
  proto::JobSpec s;
  s.set_algorithm(algorithm);
  s.set_dataset("synthetic:blobs");
  s.set_model("softmax");
  s.set_lr(0.05);
  s.set_batch(16);
  s.set_seed(11);
  s.set_eval_every(0);
  s.set_round_timeout(30);
  if (engine::IsFederatedAlgorithm(algorithm)) {
    s.set_nodes(3);
    s.set_clients_per_round(0);
    s.set_rounds(6);
    s.set_local_epochs(0);
    s.set_local_steps(10);
    s.set_deadline(60);
  } else {
    s.set_nodes(4);
    s.set_rounds(25);
    s.set_topology("ring");
  }
  return s;
}

struct Models {
  std::vector<std::vector<float>> models;  // gossip: every node's; federated: the server's
  double accuracy = 0;                     // the last evaluation's (gossip: mean node; federated: global)
};

Models InSimulator(const proto::JobSpec& spec) {
  proto::Scenario s;
  *s.mutable_spec() = spec;
  s.set_eval_nodes(spec.nodes());
  s.set_eval_samples(1000000);  // the whole test set, as each daemon evaluates
  s.set_threads(1);
  auto run = sim::RunScenario(s, {}, sim::RunOptions{true});
  REQUIRE_MESSAGE(run.ok(), run.status().ToString());
  const auto& last = run->points.back();
  return {run->final_models, engine::IsFederatedAlgorithm(spec.algorithm()) ? last.avg_acc : last.acc_mean};
}

Models OnDaemons(const proto::JobSpec& spec, const std::string& id) {
  proto::JobConfig job;
  job.set_job_id(id);
  *job.mutable_spec() = spec;
  job.set_aggregator(1);  // not 0: the engine's indices differ from node ids
  job.set_checkpoint_every(5);
  FedFleet fleet(DaemonsOf(job));
  fleet.SubmitAll(job);
  REQUIRE(fleet.WaitDone(std::chrono::seconds(120)));
  Models m;
  const bool federated = engine::IsFederatedAlgorithm(spec.algorithm());
  double sum = 0;
  for (NodeId i = 0; i < fleet.nodes; ++i) {
    if (federated && i != job.aggregator()) continue;
    sum += fleet.Status(i).test_accuracy();
  }
  m.accuracy = federated ? sum : sum / fleet.nodes;
  fleet.Stop();
  if (federated) {
    m.models.push_back(fleet.daemons[job.aggregator()]->params());
  } else {
    for (const auto& d : fleet.daemons) m.models.push_back(d->params());
  }
  return m;
}

TEST_CASE("One spec: every synchronous gossip algorithm ends with the simulator's models bit for bit") {
  struct Case {
    const char* algorithm;
    const char* compression;
    const char* topology;
    const char* aggregation = "mean";
  };
  for (const Case& c : {Case{"dpsgd", "none", "ring"}, Case{"dpsgd", "none", "ring", "clipped"},
                        Case{"dpsgd-cta", "fp16", "ring", "median"}, Case{"dpsgd-cta", "fp16", "ring"},
                        Case{"dpsgd", "topk:0.1", "ring"}, Case{"dpsgd", "fp16", "one-peer-exponential"},
                        Case{"push-sum", "none", "exponential"}, Case{"dsgt", "none", "ring"},
                        Case{"diloco", "int8", "ring"}, Case{"diloco-allreduce", "none", "ring"}}) {
    const std::string algorithm = c.algorithm, compression = c.compression, topology = c.topology;
    CAPTURE(algorithm);
    CAPTURE(compression);
    CAPTURE(topology);
    proto::JobSpec spec = BaseSpec(c.algorithm);
    spec.set_compression(c.compression);
    spec.set_topology(c.topology);
    spec.set_gossip_aggregation(c.aggregation);
    CAPTURE(spec.gossip_aggregation());
    const Models sim = InSimulator(spec);
    if (spec.gossip_aggregation() != "mean") {
      // The rule changes the models (so the daemons ran it, not the mean).
      proto::JobSpec mean = spec;
      mean.set_gossip_aggregation("mean");
      CHECK(InSimulator(mean).models != sim.models);
    }
    const Models daemons = OnDaemons(spec, std::string("one-spec-") + c.algorithm + "-" + c.aggregation);
    REQUIRE(daemons.models.size() == sim.models.size());
    for (std::size_t i = 0; i < sim.models.size(); ++i) {
      CAPTURE(i);
      CHECK(daemons.models[i] == sim.models[i]);
    }
    if (std::string(c.algorithm) == "diloco-allreduce") {
      CHECK(sim.models[0] == sim.models[1]);  // exact averaging: one sum, copied to every node
    } else {
      CHECK(sim.models[0] != sim.models[1]);  // the nodes' models are their own, not one shared vector
    }
  }
}

TEST_CASE(
    "One spec: a ring all-reduce job, a hierarchical one, a halving-doubling one, one with PowerSGD inside "
    "(also overlapped, and hierarchical), an overlapped DiLoCo one and a DiLoCo job on 8 daemons (6 for "
    "halving-doubling, whose 6 fold into 4) end with the simulator's models") {
  for (const char* algorithm : {"allreduce", "hierarchical", "halving-doubling", "powersgd", "overlap",
                                "powersgd-overlap", "powersgd-hierarchical", "diloco"}) {
    CAPTURE(std::string(algorithm));
    const bool hierarchical = std::string(algorithm).find("hierarchical") != std::string::npos;
    const bool rhd = std::string(algorithm) == "halving-doubling";
    const bool lowrank = std::string(algorithm).rfind("powersgd", 0) == 0;
    const bool overlap = std::string(algorithm).find("overlap") != std::string::npos;
    proto::JobSpec spec =
        BaseSpec(hierarchical || rhd || lowrank || overlap ? "diloco-allreduce" : algorithm);
    spec.set_overlap(overlap);
    spec.set_nodes(rhd ? 6 : 8);
    if (rhd) spec.set_collective("halving-doubling");
    spec.set_rounds(12);
    spec.set_local_steps(5);
    spec.set_compression(std::string(algorithm) == "diloco" ? "int8" : lowrank ? "powersgd:1" : "none");
    if (hierarchical) {  // 4 groups of 2 (id blocks) mixing over a ring of groups (PowerSGD: all of them)
      spec.set_groups(4);
      spec.set_group_topology(lowrank ? "complete" : "ring");
    }
    const Models sim = InSimulator(spec);
    const Models daemons = OnDaemons(spec, std::string("one-spec-8-") + algorithm);
    REQUIRE(daemons.models.size() == spec.nodes());
    for (std::size_t i = 0; i < spec.nodes(); ++i) {
      CAPTURE(i);
      CHECK(daemons.models[i] == sim.models[i]);
    }
    if (overlap) CHECK(sim.models[0] == sim.models[7]);  // every node ends on the one anchor
  }
}

TEST_CASE(
    "One spec: every synchronous federated strategy ends with the simulator's global model bit for bit") {
  for (const char* a : {"fedavg", "fedprox", "scaffold", "fedavgm", "fedadam", "fedyogi", "fedadagrad"}) {
    CAPTURE(std::string(a));
    proto::JobSpec spec = BaseSpec(a);
    spec.set_prox_mu(0.1);
    const Models sim = InSimulator(spec);
    const Models daemons = OnDaemons(spec, std::string("one-spec-") + a);
    REQUIRE(daemons.models.size() == 1);
    CHECK(daemons.models[0] == sim.models[0]);
    CHECK(daemons.accuracy == doctest::Approx(sim.accuracy).epsilon(1e-12));
  }
}

TEST_CASE("One spec: gossip learning and FedBuff on daemons land within the simulator's spread over seeds") {
  for (const char* a : {"gossip-learning", "fedbuff"}) {
    CAPTURE(std::string(a));
    proto::JobSpec spec = BaseSpec(a);
    if (std::string(a) == "gossip-learning") {
      spec.set_topology("complete");
      spec.set_compression("none");
      spec.set_period(0.05);
      spec.set_rounds(60);
      spec.set_lr(0.2);
    } else {
      spec.set_nodes(4);
      spec.set_clients_per_round(2);
      spec.set_rounds(12);
    }
    double lo = 1, hi = 0;
    const std::uint64_t seed = spec.seed();
    for (std::uint64_t k = 0; k < 5; ++k) {
      proto::JobSpec seeded = spec;
      seeded.set_seed(seed + k);
      const double acc = InSimulator(seeded).accuracy;
      lo = std::min(lo, acc);
      hi = std::max(hi, acc);
    }
    const double daemons = OnDaemons(spec, std::string("one-spec-") + a).accuracy;
    MESSAGE(std::string(a) << ": daemons " << daemons << ", murmur sim over 5 seeds [" << lo << ", " << hi
                           << "]");
    CHECK(daemons >= lo - kAsynchronousTolerance);
    CHECK(daemons <= hi + kAsynchronousTolerance);
  }
}

}  // namespace
}  // namespace murmur::node
