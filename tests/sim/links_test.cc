// The link model: its kinds' closed forms, trace files and their errors, a
// message's delivery time over a path, and whole runs on link-aware
// topologies against the random graph of the same degree.
#include "sim/net/links.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "sim/net/simulator.h"
#include "sim/runner.h"
#include "tests/sim/messages.h"
#include "tests/sim/temp_file.h"

namespace murmur::sim {
namespace {

TEST_CASE("links sites: equal sites from the seed, LAN inside, WAN and its latency between") {
  auto m = MakeLinkModel("sites:4:100:1:20", 18, 5).value();
  std::map<double, int> rates;
  int wan = 0;
  for (NodeId a = 0; a < 18; ++a) {
    for (NodeId b = 0; b < 18; ++b) {
      if (a == b) continue;
      CHECK(m->Bps(a, b) == m->Bps(b, a));
      ++rates[m->Bps(a, b)];
      if (m->Bps(a, b) == 1e6) {
        ++wan;
        CHECK(m->Latency(a, b) == Nanos(20'000'000));
      } else {
        CHECK(m->Bps(a, b) == 100e6);
        CHECK(m->Latency(a, b) == Nanos(0));
      }
    }
  }
  // Sites of 5, 5, 4, 4 nodes: ordered pairs inside 2 (5 * 4) + 2 (4 * 3) = 64.
  CHECK(rates.size() == 2);
  CHECK(18 * 17 - wan == 64);
  // Not by id: some consecutive ids share no site.
  int split = 0;
  for (NodeId a = 0; a + 1 < 18; ++a) split += m->Bps(a, a + 1) == 1e6;
  CHECK(split > 0);
  CHECK(m->Bps(3, 18) == std::numeric_limits<double>::infinity());  // not a node of the model
  CHECK(m->Describe() == "4 sites, 100 Mbit/s inside, 1 Mbit/s and 20 ms between");
}

TEST_CASE("links plane: the rate falls geometrically with distance and the latency grows linearly") {
  auto m = MakeLinkModel("plane:100:1:30", 50, 2).value();
  double lo = 1e18, hi = 0;
  for (NodeId a = 0; a < 50; ++a) {
    for (NodeId b = a + 1; b < 50; ++b) {
      const double bps = m->Bps(a, b);
      CHECK(bps == m->Bps(b, a));
      // rate = 100e6 * 0.01^f and latency = 30 ms * f for the same f in [0, 1].
      const double f = std::log(bps / 100e6) / std::log(0.01);
      CHECK(f >= 0);
      CHECK(f <= 1);
      CHECK(std::chrono::duration<double, std::milli>(m->Latency(a, b)).count() ==
            doctest::Approx(30 * f).epsilon(1e-6));
      lo = std::min(lo, bps);
      hi = std::max(hi, bps);
    }
  }
  CHECK(hi / lo > 10);  // 50 points spread over the square
}

TEST_CASE("links: bad specs and trace files are named") {
  CHECK(MakeLinkModel("uniform", 4, 1).value() == nullptr);
  CHECK(MakeLinkModel("sites:0:100:1", 4, 1).status().message().find("site count") != std::string::npos);
  CHECK(MakeLinkModel("sites:5:100:1", 4, 1).status().message().find("from 1 to 4") != std::string::npos);
  CHECK(MakeLinkModel("sites:2:100:-1", 4, 1).status().message().find("WAN Mbit/s '-1'") !=
        std::string::npos);
  CHECK(MakeLinkModel("plane:100", 4, 1).status().message().find("expected uniform, sites:") !=
        std::string::npos);
  CHECK(MakeLinkModel("mesh", 4, 1).status().message().find("expected uniform") != std::string::npos);
  CHECK(MakeLinkModel("trace:/nonexistent/links.csv", 4, 1).status().code() == StatusCode::kNotFound);

  const auto good =
      WriteFile("murmur_links_good.csv", "a,b,mbps,latency_ms\n0,1,2,10\n# slow\r\n2,1,0.5,0\n");
  auto t = MakeLinkModel("trace:" + good, 3, 1).value();
  CHECK(t->Bps(1, 0) == 2e6);
  CHECK(t->Latency(0, 1) == Nanos(10'000'000));
  CHECK(t->Bps(1, 2) == 0.5e6);
  CHECK(t->Bps(0, 2) == std::numeric_limits<double>::infinity());
  CHECK(t->Latency(0, 2) == Nanos(0));

  const std::pair<const char*, const char*> bad[] = {
      {"0,1,2\n", ":1: expected 4 fields"},
      {"0,1,2,1\n1,0,3,1\n", ":2: the path 1-0 is listed twice"},
      {"0,3,2,1\n", ":1: node '3' is not a node id below 3"},
      {"0,-1,2,1\n", ":1: node '-1'"},
      {"1,1,2,1\n", ":1: a path needs two distinct nodes"},
      {"0,1,0,1\n", ":1: mbps '0' must be a positive number"},
      {"0,1,1,-2\n", ":1: latency_ms '-2' must be a non-negative number"},
      {"0,1,1,nan\n", ":1: latency_ms 'nan'"},
      {"0,1,1,1e95\n", ":1: latency_ms '1e95' must be a non-negative number up to 3.6e+06"},
      {"0,1,1e12,1\n", ":1: mbps '1e12' must be a positive number up to 1e+09"},
  };
  for (const auto& [text, why] : bad) {
    const auto f = WriteFile("murmur_links_bad.csv", text);
    auto r = MakeLinkModel("trace:" + f, 3, 1);
    CAPTURE(text);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find(why) != std::string::npos);
  }
}

using testing::Blob;
using testing::Recorder;

TEST_CASE("A path slower than the uplink holds the uplink for the whole message and adds its latency") {
  // Trace: 0-1 at 2 Mbit/s and 7 ms; 0-2 unlimited. Devices: 8 Mbit/s up,
  // 1 Gbit/s down, 1 ms each.
  const auto f = WriteFile("murmur_links_sim.csv", "0,1,2,7\n");
  SimulatorOptions o;
  o.network.links = MakeLinkModel("trace:" + f, 3, 1).value();
  DeviceProfile d;
  d.up_bps = 8e6;
  d.down_bps = 1e9;
  d.latency = Nanos(1'000'000);
  Simulator sim(o, {d, d, d});
  Recorder one(&sim), two(&sim);
  sim.SetSink(1, &one);
  sim.SetSink(2, &two);
  sim.env(0).Send(1, std::make_shared<Blob>(10'000));  // 80 kbit at 2 Mbit/s: 40 ms on the uplink
  sim.env(0).Send(2, std::make_shared<Blob>(10'000));  // then 10 ms at the uplink's 8 Mbit/s
  sim.RunUntil(Nanos::max());
  REQUIRE(one.arrivals.size() == 1);
  REQUIRE(two.arrivals.size() == 1);
  // 40 ms + 1 + 1 + 7 ms latency + 0.08 ms downlink.
  CHECK(one.arrivals[0] == Nanos(40'000'000 + 9'000'000 + 80'000));
  // Leaves the uplink at 50 ms, 2 ms latency, 0.08 ms downlink.
  CHECK(two.arrivals[0] == Nanos(50'000'000 + 2'000'000 + 80'000));
}

proto::Scenario LinkRun(const std::string& topology) {
  proto::Scenario s;
  s.mutable_spec()->set_dataset("synthetic:blobs");
  s.mutable_spec()->set_model("mlp:64");  // 1,994 parameters: 64 kbit, 64 ms over the WAN
  s.mutable_spec()->set_nodes(32);
  s.mutable_spec()->set_rounds(40);
  s.mutable_spec()->set_eval_every(40);
  s.mutable_spec()->set_lr(0.1);
  s.mutable_spec()->set_compression("none");
  s.mutable_spec()->set_topology(topology);
  s.set_eval_samples(500);
  s.set_links("sites:4:100:1:20");
  return s;
}

TEST_CASE(
    "On sites joined by a 100x slower WAN, link-aware:4 runs D-PSGD's rounds several times faster than "
    "regular:4") {
  auto random = RunScenario(LinkRun("regular:4")).value();
  auto chosen = RunScenario(LinkRun("link-aware:4")).value();
  REQUIRE(random.points.size() == 2);
  REQUIRE(chosen.points.size() == 2);
  const double t_random = random.points.back().virtual_s, t_chosen = chosen.points.back().virtual_s;
  // regular:4 on 4 sites gives each node about 3 WAN neighbours, each holding
  // its uplink for a model at 1 Mbit/s; link-aware:4 crosses the WAN 3 times
  // in all, so a round waits for about one WAN model.
  CHECK(t_random / t_chosen > 2.5);
  CHECK(chosen.points.back().avg_acc > 0.8);
  CHECK(chosen.points.back().avg_acc > random.points.back().avg_acc - 0.05);
  CHECK(chosen.description.find("link-aware:4 (64 edges, slowest") != std::string::npos);

  // The ring all-reduce on the least-cost ring: the same exact mean, sooner.
  auto ring = LinkRun("ring");
  ring.mutable_spec()->set_algorithm("allreduce");
  ring.mutable_spec()->set_rounds(10);
  ring.mutable_spec()->set_eval_every(10);
  auto by_id = RunScenario(ring).value();
  ring.mutable_spec()->set_topology("link-aware-ring");
  auto by_cost = RunScenario(ring).value();
  CHECK(by_id.points.back().virtual_s / by_cost.points.back().virtual_s > 1.5);
  CHECK(by_cost.points.back().avg_acc == doctest::Approx(by_id.points.back().avg_acc).epsilon(0.01));
  CHECK(by_cost.points.back().consensus == doctest::Approx(0).epsilon(1e-6));

  // Hierarchical: a ring inside each site, the group means mixed across the
  // WAN once a round (complete: every node gets the exact mean).
  ring.mutable_spec()->set_topology("ring");
  ring.mutable_spec()->set_groups(4);
  auto hierarchical = RunScenario(ring).value();
  CHECK(hierarchical.description.find("4 groups of 8 (the link model's sites) mixing over complete") !=
        std::string::npos);
  CHECK(by_id.points.back().virtual_s / hierarchical.points.back().virtual_s > 2);
  CHECK(hierarchical.points.back().avg_acc == doctest::Approx(by_id.points.back().avg_acc).epsilon(0.01));
  CHECK(hierarchical.points.back().consensus == doctest::Approx(0).epsilon(1e-6));
  for (auto [groups, topology, why] : {std::tuple{5u, "ring", "must divide nodes"},
                                       std::tuple{4u, "regular:4", "must be ring with groups"}}) {
    ring.mutable_spec()->set_groups(groups);
    ring.mutable_spec()->set_topology(topology);
    CHECK(RunScenario(ring).status().message().find(why) != std::string::npos);
  }
  auto dpsgd = LinkRun("ring");
  dpsgd.mutable_spec()->set_groups(4);
  CHECK(RunScenario(dpsgd).status().message().find("spec field 'groups' applies to allreduce") !=
        std::string::npos);

  // Refused where it cannot mean anything.
  auto uniform = LinkRun("link-aware:4");
  uniform.set_links("uniform");
  CHECK(RunScenario(uniform).status().message().find("would choose among equal links") != std::string::npos);
  auto fed = LinkRun("ring");
  fed.mutable_spec()->set_algorithm("fedavg");
  CHECK(RunScenario(fed).status().message().find("scenario field 'links'") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim
