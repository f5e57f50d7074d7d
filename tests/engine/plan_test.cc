// engine::PlanJob: the one reading of a spec both hosts run. Every refusal
// is an InvalidArgument naming its field; what one host cannot run is refused
// there with the reason and accepted by the other. A plan holds the values
// the builders read, parsed.
#include "engine/plan.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace murmur::engine {
namespace {

Status ValidateJobSpec(const proto::JobSpec& spec, Host host) { return PlanJob(spec, host).status(); }

struct Refusal {
  const char* field;  // appears as 'field' in the message
  std::function<void(proto::JobSpec&)> spoil;
};

void CheckRefused(const proto::JobSpec& ok, Host host, std::initializer_list<Refusal> cases) {
  REQUIRE(ValidateJobSpec(ok, host).ok());
  for (const Refusal& c : cases) {
    CAPTURE(c.field);
    proto::JobSpec s = ok;
    c.spoil(s);
    const Status st = ValidateJobSpec(s, host);
    CAPTURE(st.ToString());
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(std::string("spec field '") + c.field + "'") != std::string::npos);
  }
}

TEST_CASE("The default spec is valid on both hosts, and bad common fields are refused by name") {
  const proto::JobSpec ok;
  for (Host host : {Host::kSimulator, Host::kDaemon}) {
    CheckRefused(ok, host,
                 {
                     {"algorithm", [](proto::JobSpec& s) { s.set_algorithm("gossip"); }},
                     {"nodes", [](proto::JobSpec& s) { s.set_nodes(0); }},
                     {"partition", [](proto::JobSpec& s) { s.set_partition("dirichlet"); }},
                     {"rounds", [](proto::JobSpec& s) { s.set_rounds(0); }},
                     {"local_steps", [](proto::JobSpec& s) { s.set_local_steps(0); }},
                     {"batch", [](proto::JobSpec& s) { s.set_batch(70000); }},
                     {"lr", [](proto::JobSpec& s) { s.set_lr(-1); }},
                     {"momentum", [](proto::JobSpec& s) { s.set_momentum(1); }},
                     {"weight_decay", [](proto::JobSpec& s) { s.set_weight_decay(-0.1); }},
                     {"lr_schedule", [](proto::JobSpec& s) { s.set_lr_schedule("linear"); }},
                     {"round_timeout", [](proto::JobSpec& s) { s.set_round_timeout(-1); }},
                     {"compression", [](proto::JobSpec& s) { s.set_compression("zip:9"); }},
                     {"gamma", [](proto::JobSpec& s) { s.set_gamma(2); }},
                 });
  }
}

TEST_CASE("A gossip spec needs 2 nodes on both hosts, and a federated one runs with 1 client") {
  proto::JobSpec gossip;
  gossip.set_nodes(2);
  proto::JobSpec federated;
  federated.set_algorithm("fedavg");
  federated.set_nodes(1);
  federated.set_clients_per_round(1);
  for (Host host : {Host::kSimulator, Host::kDaemon}) {
    const Status fed = ValidateJobSpec(federated, host);
    CHECK_MESSAGE(fed.ok(), fed.ToString());
    CheckRefused(gossip, host, {{"nodes", [](proto::JobSpec& s) { s.set_nodes(1); }}});
  }
}

TEST_CASE(
    "Gossip refuses ',ef' and ',no-ef' on a value coding sent as whole models, and takes them with "
    "',choco'") {
  proto::JobSpec ok;
  ok.set_compression("int8,ef,choco");
  for (Host host : {Host::kSimulator, Host::kDaemon})
    CheckRefused(ok, host,
                 {{"compression", [](proto::JobSpec& s) { s.set_compression("fp16,ef"); }},
                  {"compression", [](proto::JobSpec& s) { s.set_compression("int8,no-ef"); }},
                  {"compression", [](proto::JobSpec& s) { s.set_compression("none,ef"); }}});
  ok.set_compression("topk:0.1,no-ef");  // a sparsifier: CHOCO's differences, error feedback off
  CHECK(ValidateJobSpec(ok, Host::kSimulator).ok());
}

TEST_CASE("What an algorithm cannot run is refused in both hosts alike") {
  const proto::JobSpec ok;
  for (Host host : {Host::kSimulator, Host::kDaemon}) {
    CAPTURE(static_cast<int>(host));
    CheckRefused(ok, host,
                 {
                     // Whole-vector algorithms and sparsifiers.
                     {"compression",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("push-sum");
                        s.set_compression("topk:0.1");
                      }},
                     // CHOCO's differences need one graph for the whole run.
                     {"compression", [](proto::JobSpec& s) { s.set_topology("one-peer-exponential"); }},
                     // All-reduce schedules: known names, all-reduce algorithms only.
                     {"collective",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("allreduce");
                        s.set_collective("tree");
                      }},
                     {"collective", [](proto::JobSpec& s) { s.set_collective("halving-doubling"); }},
                     // PowerSGD inside a hierarchical all-reduce: only groups that mix to one mean.
                     {"compression",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("allreduce");
                        s.set_nodes(8);
                        s.set_groups(2);
                        s.set_group_topology("ring");
                        s.set_compression("powersgd:2");
                      }},
                     {"compression",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("push-sum");
                        s.set_compression("powersgd:2");
                      }},
                     // DiLoCo's outer optimizer and its constants.
                     {"outer_optimizer",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("diloco");
                        s.set_outer_optimizer("lion");
                      }},
                     {"outer_lr",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("diloco");
                        s.set_outer_lr(0);
                      }},
                     {"outer_momentum",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("diloco");
                        s.set_outer_momentum(1);
                      }},
                     {"topology",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("allreduce");
                        s.set_topology("torus");
                      }},
                     {"compression",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("diloco-allreduce");
                        s.set_compression("topk:0.1");
                      }},
                     {"outer_beta2",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("diloco");
                        s.set_outer_beta2(-0.1);
                      }},
                     // The outer step's options where no outer step runs: refused, not ignored.
                     {"outer_optimizer",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("allreduce");
                        s.set_topology("ring");
                        s.set_outer_optimizer("adam");
                      }},
                     {"outer_lr", [](proto::JobSpec& s) { s.set_outer_lr(0.3); }},  // the default dpsgd
                     {"outer_momentum",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_outer_momentum(0.5);
                      }},
                     {"outer_beta2",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("push-sum");
                        s.set_outer_beta2(0.9);
                      }},
                     // DSGT takes one gradient step per round and no momentum.
                     {"local_steps",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("dsgt");
                        s.set_local_steps(4);
                      }},
                     {"momentum",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("dsgt");
                        s.set_momentum(0.9);
                      }},
                     // Weights a time-varying kind cannot take, and push-sum's own.
                     {"weights",
                      [](proto::JobSpec& s) {
                        s.set_topology("one-peer-exponential");
                        s.set_compression("none");
                        s.set_weights("lazy-mh");
                      }},
                     {"weights",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("push-sum");
                        s.set_weights("mh");
                      }},
                     {"weights", [](proto::JobSpec& s) { s.set_weights("heavy"); }},
                     // Gossip learning: fanout at most n - 1.
                     {"fanout",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("gossip-learning");
                        s.set_nodes(4);
                        s.set_fanout(4);
                      }},
                     {"period",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("gossip-learning");
                        s.set_period(0);
                      }},
                     // Federated: K at most the clients, min_clients at most K.
                     {"clients_per_round",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_nodes(4);
                      }},
                     {"min_clients",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_min_clients(11);
                      }},
                     {"lr_schedule",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_lr_schedule("cosine");
                      }},
                     {"dp_noise",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_dp_noise(1);
                      }},
                     {"secure_aggregation",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("scaffold");
                        s.set_secure_aggregation(true);
                      }},
                     {"attackers",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_attack("sign-flip");
                        s.add_attackers(64);  // clients are 0 .. 63
                      }},
                     {"attackers",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("fedavg");
                        s.set_attack("sign-flip");
                        s.set_attack_fraction(0.1);
                        s.add_attackers(3);
                      }},
                 });
  }
}

TEST_CASE(
    "What only the simulator runs is refused on daemons with the reason, and accepted by the simulator") {
  struct Case {
    const char* field;
    const char* reason;
    std::function<void(proto::JobSpec&)> make;
  };
  const Case cases[] = {
      {"topology", "simulator only",
       [](proto::JobSpec& s) {
         s.set_topology("vehicles");
         s.set_compression("fp16");
       }},
      {"attack", "simulator only",
       [](proto::JobSpec& s) {
         s.set_compression("none");
         s.set_attack("dissensus");
         s.set_attack_fraction(0.125);
       }},
      {"edge_aggregators", "simulator only",
       [](proto::JobSpec& s) {
         s.set_algorithm("fedavg");
         s.set_edge_aggregators(4);
       }},
      {"compression", "not checkpointed", [](proto::JobSpec& s) { s.set_compression("powersgd:2"); }},
      {"topology", "murmur job submit` chooses it",
       [](proto::JobSpec& s) { s.set_topology("link-aware:4"); }},
      {"topology", "murmur job submit` chooses it",
       [](proto::JobSpec& s) {
         s.set_algorithm("allreduce");
         s.set_topology("link-aware-ring");
       }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.field);
    proto::JobSpec s;
    c.make(s);
    CHECK(ValidateJobSpec(s, Host::kSimulator).ok());
    const Status st = ValidateJobSpec(s, Host::kDaemon);
    CAPTURE(st.ToString());
    CHECK(st.message().find(std::string("spec field '") + c.field + "'") != std::string::npos);
    CHECK(st.message().find(c.reason) != std::string::npos);
  }
}

TEST_CASE(
    "PowerSGD inside an all-reduce runs on both hosts (overlapped, and hierarchical with a complete group "
    "topology), PowerSGD for gossip only in the simulator") {
  proto::JobSpec s;
  s.set_algorithm("diloco-allreduce");
  s.set_compression("powersgd:4");
  CHECK(ValidateJobSpec(s, Host::kSimulator).ok());
  CHECK(ValidateJobSpec(s, Host::kDaemon).ok());
  // With groups and overlap: in a hierarchical all-reduce only when the groups mix to one mean.
  s.set_overlap(true);
  CHECK(ValidateJobSpec(s, Host::kDaemon).ok());
  s.set_overlap(false);
  s.set_nodes(8);
  s.set_groups(2);
  s.set_group_topology("complete");
  CHECK(ValidateJobSpec(s, Host::kSimulator).ok());
  CHECK(ValidateJobSpec(s, Host::kDaemon).ok());
  s.set_group_topology("ring");
  CHECK(ValidateJobSpec(s, Host::kDaemon).message().find("needs group_topology complete") !=
        std::string::npos);
  s.set_groups(1);
  s.set_algorithm("dpsgd");
  CHECK(ValidateJobSpec(s, Host::kSimulator).ok());
  CHECK(ValidateJobSpec(s, Host::kDaemon).message().find("not checkpointed") != std::string::npos);
}

TEST_CASE("clients_per_round 0 takes every client, and the default compression fits every gossip algorithm") {
  proto::JobSpec s;
  s.set_algorithm("fedavg");
  s.set_nodes(4);
  s.set_clients_per_round(0);
  CHECK(ValidateJobSpec(s, Host::kSimulator).ok());
  for (const char* a : {"dpsgd", "dpsgd-cta", "diloco", "allreduce", "diloco-allreduce", "push-sum", "dsgt",
                        "gossip-learning"}) {
    CAPTURE(a);
    proto::JobSpec g;
    g.set_algorithm(a);
    CHECK(ValidateJobSpec(g, Host::kSimulator).ok());
    CHECK(ValidateJobSpec(g, Host::kDaemon).ok());
  }
}

}  // namespace
}  // namespace murmur::engine

namespace murmur::engine {
namespace {

TEST_CASE("plausibility and max_weight take their ranges and only the algorithms they bound") {
  proto::JobSpec gossip;
  gossip.set_algorithm("dpsgd");
  gossip.set_compression("none");
  proto::JobSpec fed;
  fed.set_algorithm("fedavg");
  for (Host host : {Host::kSimulator, Host::kDaemon}) {
    CheckRefused(gossip, host,
                 {
                     {"plausibility", [](proto::JobSpec& s) { s.set_plausibility(-1); }},
                     {"plausibility", [](proto::JobSpec& s) { s.set_plausibility(std::nan("")); }},
                     {"plausibility", [](proto::JobSpec& s) { s.set_plausibility(1e7); }},
                     {"plausibility",
                      [](proto::JobSpec& s) {
                        s.set_algorithm("allreduce");
                        s.set_plausibility(3);
                      }},
                     {"max_weight", [](proto::JobSpec& s) { s.set_max_weight(100); }},
                 });
    CheckRefused(fed, host,
                 {
                     {"max_weight", [](proto::JobSpec& s) { s.set_max_weight(-1); }},
                     {"max_weight",
                      [](proto::JobSpec& s) { s.set_max_weight(std::numeric_limits<double>::infinity()); }},
                     {"plausibility", [](proto::JobSpec& s) { s.set_plausibility(-1); }},
                     {"plausibility", [](proto::JobSpec& s) { s.set_plausibility(2e6); }},
                 });
    fed.set_plausibility(3);  // federated results are bounded too
    CHECK(ValidateJobSpec(fed, host).ok());
    fed.set_plausibility(10);
    gossip.set_plausibility(0);  // no bound
    CHECK(ValidateJobSpec(gossip, host).ok());
    proto::JobSpec learning = gossip;  // gossip learning judges whole models too
    learning.set_algorithm("gossip-learning");
    learning.set_plausibility(3);
    CHECK(ValidateJobSpec(learning, host).ok());
    gossip.set_plausibility(10);
    fed.set_max_weight(6000);
    CHECK(ValidateJobSpec(fed, host).ok());
    fed.set_max_weight(0);
  }
}
}  // namespace
}  // namespace murmur::engine
