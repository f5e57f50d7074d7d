// The engine's builders: what a spec turns into, the same for both hosts
// except where FederatedHost or GossipHost says otherwise.
#include <doctest/doctest.h>

#include <string>

#include "engine/federated_builder.h"
#include "engine/gossip_builder.h"
#include "engine/model_factory.h"
#include "engine/topology.h"
#include "gossip/collective_schedule.h"
#include "ml/text.h"

namespace murmur::engine {
namespace {

JobPlan Plan(const proto::JobSpec& s, Host host = Host::kSimulator) {
  auto plan = PlanJob(s, host);
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

TEST_CASE(
    "The default compression is top-1% for D-PSGD and none for the algorithms that send whole vectors") {
  proto::JobSpec s;
  CHECK(CompressionOf(s) == "topk:0.01");
  for (const char* a : {"push-sum", "dsgt", "gossip-learning"}) {
    s.set_algorithm(a);
    CHECK(CompressionOf(s) == "none");
  }
  s.set_compression("fp16");
  CHECK(CompressionOf(s) == "fp16");
}

TEST_CASE(
    "Server options: every client for K = 0, Krum's f from the attackers, models requested when lossless") {
  proto::JobSpec s;
  s.set_algorithm("fedadam");
  s.set_nodes(20);
  s.set_clients_per_round(0);
  auto o = MakeServerOptions(Plan(s), {});
  CHECK(o.num_clients == 20);
  CHECK(o.clients_per_round == 20);
  CHECK(o.optimizer.lr == doctest::Approx(0.01));  // the adaptive optimizers' default server rate
  CHECK(o.request_model);
  CHECK(o.robust.krum_f == 1);
  // 5 of 20 attackers and K = 8: f = llround(0.25 x 8) = 2; the simulator's server plays them all.
  s.set_clients_per_round(8);
  s.set_attack("sign-flip");
  s.set_attack_fraction(0.25);
  s.set_robust("krum");
  o = MakeServerOptions(Plan(s), {});
  CHECK(o.robust.krum_f == 2);
  CHECK(o.attack == federated::AttackKind::kSignFlip);
  const std::vector<bool> attackers = Plan(s).fed().attackers;
  CHECK(std::count(attackers.begin(), attackers.end(), true) == 5);
  CHECK(o.attacker == attackers);
  // On daemons the sign-flip attackers are the clients themselves; the aggregator knows none.
  const FederatedHost daemon{true, true, true};
  o = MakeServerOptions(Plan(s, Host::kDaemon), daemon);
  CHECK(o.attacker.empty());
  int attacking = 0;
  for (NodeId c = 0; c < 20; ++c) {
    auto co = MakeClientOptions(Plan(s, Host::kDaemon), c, 100, 100, daemon);
    attacking += co.attack == federated::AttackKind::kSignFlip;
    CHECK((co.attack == federated::AttackKind::kSignFlip) == attackers[c]);
  }
  CHECK(attacking == 5);
  // Compressed uploads: differences, not models.
  s.set_upload_compression("topk:0.1");
  o = MakeServerOptions(Plan(s), {});
  CHECK_FALSE(o.request_model);
}

TEST_CASE("The all-reduce's mean message, as a fraction of the model, is what the schedules send, counted") {
  // Counted over one round of every position of a ring of m, on a model of
  // 1024 values per position (the schedules' ranges then divide it).
  auto counted = [](gossip::Collective collective, NodeId m) {
    const std::size_t size = std::size_t{1024} * m;
    double values = 0, messages = 0;
    for (NodeId i = 0; i < m; ++i) {
      const gossip::CollectiveSchedule schedule(collective, m, i, size);
      for (std::size_t k = 0; k < schedule.steps(); ++k) {
        const gossip::CollectiveStep step = schedule.At(k);
        if (step.send_to == gossip::CollectiveStep::kNobody) continue;
        values += static_cast<double>(step.send.size());
        messages += 1;
      }
    }
    return values / messages / static_cast<double>(size);
  };
  proto::JobSpec s;
  s.set_algorithm("allreduce");
  for (NodeId m = 2; m <= 33; ++m) {
    CAPTURE(m);
    s.set_nodes(m);
    s.set_collective("ring");
    CHECK(AllReduceMessageFraction(Plan(s)) == doctest::Approx(counted(gossip::Collective::kRing, m)));
    s.set_collective("halving-doubling");
    CHECK(AllReduceMessageFraction(Plan(s)) ==
          doctest::Approx(counted(gossip::Collective::kHalvingDoubling, m)));
    s.set_compression("powersgd:2");  // P, then Q: twice the messages
    CHECK(AllReduceMessageFraction(Plan(s)) ==
          doctest::Approx(counted(gossip::Collective::kHalvingDoubling, m) / 2));
    s.set_compression("none");
  }
  s.set_nodes(32);  // 4 groups of 8
  s.set_groups(4);
  CHECK(AllReduceMessageFraction(Plan(s)) ==
        doctest::Approx(counted(gossip::Collective::kHalvingDoubling, 8)));
}

TEST_CASE("Topologies parse their parameters and give each node its neighbours in every round") {
  proto::JobSpec s;
  s.set_topology("regular:3");
  auto t = MakeGraphTopology(s, 8, true);
  REQUIRE_MESSAGE(t.ok(), t.status().ToString());
  for (NodeId i = 0; i < 8; ++i) CHECK(NeighboursOf(*t->schedule, i).size() == 3);
  CHECK(t->description.find("regular:3 (spectral gap ") == 0);
  s.set_topology("one-peer-exponential");  // period 3 over 8 nodes: peers at distance 1, 2, 4 both ways
  t = MakeGraphTopology(s, 8);
  REQUIRE(t.ok());
  CHECK(NeighboursOf(*t->schedule, 0) == std::vector<NodeId>{1, 2, 4, 6, 7});
  s.set_topology("small-world:4");
  auto bad = MakeGraphTopology(s, 8);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("spec field 'topology'") != std::string::npos);
}

TEST_CASE("A topology parameter given is used or refused, never replaced by the kind's default") {
  proto::JobSpec s;
  // Refused: what no graph of the kind can mean (leaving it out gives the default).
  for (const char* spec : {"erdos-renyi:0", "erdos-renyi:-1", "erdos-renyi:1.5", "geometric:0",
                           "geometric:-1", "regular:0", "regular:2.5", "small-world:0:0.1", "link-aware:0"}) {
    CAPTURE(spec);
    s.set_topology(spec);
    auto made = MakeGraphTopology(s, 8);
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().message().find("spec field 'topology'") != std::string::npos);
  }
  // Used: p = 1 is the complete graph, whatever the default 2 ln(8) / 8 = 0.52 would give.
  s.set_topology("erdos-renyi:1");
  auto complete = MakeGraphTopology(s, 8);
  REQUIRE(complete.ok());
  for (NodeId i = 0; i < 8; ++i) CHECK(NeighboursOf(*complete->schedule, i).size() == 7);
}

TEST_CASE("A model that predicts a sample's label is refused on text windows, which hold their target") {
  // "abcabc...": a window of context 4 is 5 bytes and its label, the next
  // byte, is its own last value, which a native model would read as input.
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 60; ++i) bytes.push_back(static_cast<std::uint8_t>('a' + i % 3));
  auto text = ml::TextWindows(bytes, 4, "abc");
  REQUIRE(text.ok());
  CHECK(text->labels[0] == text->pixels[4]);
  for (const char* spec : {"softmax", "mlp:8"}) {
    CAPTURE(spec);
    auto model = MakeModel(spec, text->sample_shape(), text->num_classes);
    REQUIRE(model.ok());
    const Status fits = CheckModelForData(**model, *text);
    CHECK(fits.code() == StatusCode::kInvalidArgument);
    CHECK(fits.message().find("forward(x, y)") != std::string::npos);
  }
  // The same model on samples that do not hold their label is fine.
  ml::Dataset flat = ml::Dataset{};
  flat.name = "flat";
  flat.num_samples = 1;
  flat.dim = 5;
  flat.num_classes = 2;
  flat.features.assign(5, 0.5f);
  flat.labels = {1};
  auto model = MakeModel("mlp:8", flat.sample_shape(), flat.num_classes);
  REQUIRE(model.ok());
  CHECK(CheckModelForData(**model, flat).ok());
}

}  // namespace
}  // namespace murmur::engine
