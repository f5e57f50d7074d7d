// Vehicles' radio links and contact-aware scheduling (sim/net/radio_links.h,
// sim/vehicles/mobility.h KeepLastingContacts), against closed forms of
// vehicles on straight roads.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "sim/net/radio_links.h"
#include "sim/net/simulator.h"
#include "sim/vehicles/sumo_mobility.h"
#include "tests/sim/messages.h"
#include "tests/sim/straight_roads.h"
#include "tests/sim/temp_file.h"

namespace murmur::sim {
namespace {

using testing::Blob;
using testing::Recorder;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A at 10 t and B at 600 - 10 t on the x axis (in range of each other,
// 150 m, for t in [22.5, 37.5]); an RSU at J1 (300, 0) reaching 225 m.
std::unique_ptr<RadioLinks> HeadOn(double fast_mbps, double slow_mbps) {
  const std::vector<Straight> cars = {{"A", 0, 0, 10, 0, 0, 60}, {"B", 600, 0, -10, 0, 0, 60}};
  const SumoSource source{WriteFile("murmur_radio.fcd.xml", Trace(cars, 60)),
                          WriteFile("murmur_radio.net.xml", kNet), "J1"};
  RadioOptions radio;
  radio.radio_range = 150;
  radio.rsus = 1;
  auto scan = ScanSumo(source, 3, radio);
  REQUIRE(scan.ok());
  auto m = SumoMobility::Open(source, 3, radio, *scan);
  REQUIRE(m.ok());
  return std::make_unique<RadioLinks>(
      std::move(m).value(),
      ParseRadioRate(std::to_string(fast_mbps) + ":" + std::to_string(slow_mbps)).value());
}

TEST_CASE("Radio links: the rate falls geometrically with distance, and there is no link beyond the range") {
  auto links = HeadOn(20, 2);
  // t = 25: 100 m apart, 20 (2 / 20)^(100 / 150) Mbit/s.
  CHECK(links->BpsAt(0, 1, FromSeconds(25)) == doctest::Approx(20e6 * std::pow(0.1, 100.0 / 150)));
  CHECK(links->Up(0, 1, FromSeconds(25)));
  CHECK(links->BpsAt(1, 0, FromSeconds(30)) == doctest::Approx(20e6));  // they pass each other
  CHECK(links->Up(0, 1, FromSeconds(37.4)));
  CHECK(!links->Up(0, 1, FromSeconds(37.6)));  // 152 m
  // A to the RSU at 300 m: 225 m of range; at t = 40, 100 m away.
  CHECK(links->BpsAt(0, 2, FromSeconds(40)) == doctest::Approx(20e6 * std::pow(0.1, 100.0 / 225)));
  CHECK(links->Up(0, 2, FromSeconds(52.4)));
  CHECK(!links->Up(0, 2, FromSeconds(52.6)));
  // A node past the mobility's (a federated top server) is wired.
  CHECK(links->BpsAt(0, 3, FromSeconds(59)) == kInf);
  CHECK(links->Up(2, 3, FromSeconds(59)));
  CHECK(!links->Up(0, 1, FromSeconds(62)));  // the trace is over: nobody is on the road
  CHECK(!ParseRadioRate("2:20").ok());
  CHECK(!ParseRadioRate("20").ok());
  CHECK(!ParseRadioRate("20:0").ok());
  CHECK(ParseRadioRate("20:2")->slow_bps == 2e6);
}

TEST_CASE("A message whose radio contact ends before its last byte is lost, one that ends in time arrives") {
  SimulatorOptions o;
  o.network.links = HeadOn(20, 2);
  DeviceProfile d;
  d.up_bps = d.down_bps = 1e9;  // the radio is the bottleneck
  d.latency = Nanos(1'000'000);
  Simulator sim(o, {d, d, d});
  Recorder a(&sim), b(&sim);
  sim.SetSink(0, &a);
  sim.SetSink(1, &b);
  // At t = 30 (0 m, 20 Mbit/s; the contact lasts until 37.5): 1 MB takes
  // about 0.4 s and arrives; 40 MB would take 16 s, past the contact's end.
  sim.AtNode(0, FromSeconds(30), [&] { sim.env(0).Send(1, std::make_shared<Blob>(1'000'000)); });
  sim.AtNode(1, FromSeconds(30), [&] { sim.env(1).Send(0, std::make_shared<Blob>(40'000'000)); });
  // At t = 45 they are 300 m apart: not even sent.
  sim.AtNode(0, FromSeconds(45), [&] { sim.env(0).Send(1, std::make_shared<Blob>(1'000)); });
  sim.RunUntil(Nanos::max());
  REQUIRE(b.arrivals.size() == 1);
  CHECK(b.arrivals[0] > FromSeconds(30.4));
  CHECK(b.arrivals[0] < FromSeconds(31));
  CHECK(a.arrivals.empty());
  CHECK(sim.Totals().messages_lost == 2);
}

TEST_CASE("Contact-aware: longest contacts first, each kept transfer within its contact and the round") {
  // Node 0 drives +x at 10 m/s; 1 stands 100 m ahead (contact 40 s), 2 drives
  // beside it (never leaves), 3 stands 100 m behind (20 s). 10 Mbit messages
  // at 1 Mbit/s: k kept neighbours take 10 k s each.
  const std::vector<topology::Point2> pos = {{0, 0}, {100, 0}, {0, 50}, {-100, 0}};
  const std::vector<topology::Point2> vel = {{10, 0}, {0, 0}, {10, 0}, {0, 0}};
  const std::vector<topology::Edge> spokes = {{0, 1}, {0, 2}, {0, 3}};
  const auto star = topology::Graph::FromEdgesDedup(4, spokes);
  RadioOptions radio;
  radio.radio_range = 300;
  ContactAware aware;
  aware.message_bits = 10e6;
  aware.up_bps = {1e6, 1e6, 1e6, 1e6};
  auto edges = [](const topology::Graph& g) {
    std::vector<std::pair<NodeId, NodeId>> e;
    for (const topology::Edge& x : g.Edges()) e.emplace_back(std::min(x.u, x.v), std::max(x.u, x.v));
    std::sort(e.begin(), e.end());
    return e;
  };
  // 2 (infinite), then 1 (40 >= 2 x 10), not 3 (20 < 3 x 10).
  CHECK(edges(KeepLastingContacts(star, pos, vel, radio, aware)) ==
        std::vector<std::pair<NodeId, NodeId>>{{0, 1}, {0, 2}});
  // A 15 s round: only one transfer fits.
  aware.round_seconds = 15;
  CHECK(edges(KeepLastingContacts(star, pos, vel, radio, aware)) ==
        std::vector<std::pair<NodeId, NodeId>>{{0, 2}});
  // At 0.1 Mbit/s no transfer fits a contact but the endless one, and none the round.
  aware.round_seconds = 0;
  aware.up_bps = {1e5, 1e5, 1e5, 1e5};
  CHECK(edges(KeepLastingContacts(star, pos, vel, radio, aware)) ==
        std::vector<std::pair<NodeId, NodeId>>{{0, 2}});
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

TEST_CASE(
    "A bounded transmit queue drops a message that would wait longer for the uplink, and only that one") {
  SimulatorOptions o;
  o.network.max_queue = FromSeconds(1);
  DeviceProfile d;
  d.up_bps = 1e6;  // 1 MB: 8 s on the uplink
  d.down_bps = 1e9;
  d.latency = Nanos(0);
  Simulator sim(o, {d, d});
  testing::Recorder r(&sim);
  sim.SetSink(1, &r);
  sim.AtNode(0, FromSeconds(0), [&] { sim.env(0).Send(1, std::make_shared<testing::Blob>(1'000'000)); });
  // At 0.5 s the uplink is busy until about 8 s: 7.5 s > 1 s of queue.
  sim.AtNode(0, FromSeconds(0.5), [&] { sim.env(0).Send(1, std::make_shared<testing::Blob>(1'000)); });
  // At 7.5 s it would wait about 0.5 s: queued and sent.
  sim.AtNode(0, FromSeconds(7.5), [&] { sim.env(0).Send(1, std::make_shared<testing::Blob>(1'000)); });
  sim.RunUntil(Nanos::max());
  REQUIRE(r.arrivals.size() == 2);
  CHECK(r.arrivals[0] > FromSeconds(8));
  CHECK(r.arrivals[1] > r.arrivals[0]);
  CHECK(sim.Totals().messages_lost == 1);
}

}  // namespace
}  // namespace murmur::sim
