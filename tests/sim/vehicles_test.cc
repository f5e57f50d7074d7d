// Vehicles from SUMO traces (sim/vehicles/): the FCD and network readers,
// seats, presence, interpolation and the contact graph, checked against
// closed forms for vehicles on straight roads.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "sim/vehicles/fcd.h"
#include "sim/vehicles/sumo_mobility.h"
#include "sim/vehicles/sumo_net.h"
#include "tests/sim/straight_roads.h"
#include "tests/sim/temp_file.h"

namespace murmur::sim {
namespace {

bool Within(double t, double lo, double hi) { return t >= lo && t <= hi; }

TEST_CASE("ContactSeconds: the closed forms of straight-line motion") {
  using P = topology::Point2;
  // Head on: 100 m apart closing at 20 m/s, range 300: apart again when 100 - 20 t = -300.
  CHECK(ContactSeconds(P{0, 0}, P{10, 0}, P{100, 0}, P{-10, 0}, 300) == doctest::Approx(20));
  // Leaving sideways at 15 m/s from the same point: 300 / 15.
  CHECK(ContactSeconds(P{0, 0}, P{0, 0}, P{0, 0}, P{0, 15}, 300) == doctest::Approx(20));
  // Overtaking on a parallel road 100 m away: |dx| <= sqrt(150^2 - 100^2) = 111.80, dx from -50 at 5 m/s.
  CHECK(ContactSeconds(P{0, 0}, P{10, 0}, P{-50, 100}, P{15, 0}, 150) ==
        doctest::Approx((50 + std::sqrt(12500.0)) / 5));
  CHECK(ContactSeconds(P{0, 0}, P{10, 0}, P{50, 0}, P{10, 0}, 300) ==
        std::numeric_limits<double>::infinity());
  CHECK(ContactSeconds(P{0, 0}, P{0, 0}, P{301, 0}, P{-50, 0}, 300) == 0);
  // On the rim, moving along the tangent: leaving at once.
  CHECK(ContactSeconds(P{0, 0}, P{0, 0}, P{300, 0}, P{0, 10}, 300) == 0);
}

TEST_CASE("A SUMO trace's contact graph is the closed form's, at any time between timesteps") {
  // A and B on the x axis towards each other, C on a parallel road 100 m up,
  // D on the road only from t = 10 to 20; an RSU at junction J1 (300, 0).
  const std::vector<Straight> cars = {{"A", 0, 0, 10, 0, 0, 60},
                                      {"B", 600, 0, -10, 0, 0, 60},
                                      {"C", 50, 100, 5, 0, 0, 60},
                                      {"veh.D", 300, -400, 0, 10, 10, 20}};
  for (bool instruments : {true, false}) {
    CAPTURE(instruments);
    const std::string fcd = WriteFile("murmur_fcd_straight.xml", Trace(cars, 60, instruments));
    const std::string net = WriteFile("murmur_net_straight.net.xml", kNet);
    RadioOptions radio;
    radio.radio_range = 150;
    radio.rsus = 1;  // range 225
    const SumoSource source{fcd, net, "J1"};
    auto scan = ScanSumo(source, 5, radio);
    REQUIRE(scan.ok());
    CHECK(scan->timesteps == 61);
    CHECK(scan->trips == 4);
    CHECK(scan->unseated == 0);
    CHECK(scan->most_at_once == 4);
    REQUIRE(scan->rsus.size() == 1);
    CHECK(scan->rsus[0].id == "J1");
    // D takes seat 3 (A, B, C arrived first, in the file's order): offline at 0, on at 10, off at 21.
    std::vector<Presence> d;
    for (const Presence& p : scan->presence)
      if (p.node == 3) d.push_back(p);
    REQUIRE(d.size() == 3);  // the trace's end does not concern it: it left before
    CHECK((d[0].time == 0 && !d[0].online));
    CHECK((d[1].time == 10 && d[1].online));
    CHECK((d[2].time == 21 && !d[2].online));
    for (const Presence& p : scan->presence)
      if (p.node < 3) CHECK((p.time == 61 && !p.online));  // a step after the last timestep

    auto m = SumoMobility::Open(source, 5, radio, *scan);
    REQUIRE(m.ok());
    Mobility& mob = **m;
    const double sqrt12500 = std::sqrt(12500.0);
    for (int k = 0; k < 119; ++k) {
      const double t = 0.5 * k + 0.13;  // between timesteps, away from every contact's ends
      CAPTURE(t);
      mob.Advance(t);
      const topology::Graph g = mob.ContactGraph();
      auto linked = [&](NodeId u, NodeId v) {
        for (NodeId w : g.Neighbors(u))
          if (w == v) return true;
        return false;
      };
      CHECK(mob.present(3) == Within(t, 10, 21 - 1e-9));
      CHECK(linked(0, 1) == Within(t, 22.5, 37.5));                  // |600 - 20t| <= 150
      CHECK(linked(0, 2) == (std::abs(5 * t - 50) <= sqrt12500));    // dy = 100
      CHECK(linked(1, 2) == (std::abs(550 - 15 * t) <= sqrt12500));  // dy = 100
      CHECK(linked(0, 4) == Within(t, 7.5, 52.5));                   // |10t - 300| <= 225
      CHECK(linked(1, 4) == Within(t, 7.5, 52.5));                   // |300 - 10t| <= 225
      CHECK(linked(2, 4) == (std::abs(5 * t - 250) <= std::sqrt(225.0 * 225 - 100 * 100)));
      CHECK(linked(3, 4) == Within(t, 17.5, 21 - 1e-9));  // D held at (300, -200) after t = 20
      for (NodeId v = 0; v < 3; ++v) CHECK(!linked(3, v));
      // The straight-line prediction is exact for straight roads (without
      // speed and angle in the trace, once a step's displacement is known).
      if (!instruments && t < 1) continue;
      if (Within(t, 22.5, 37.5)) CHECK(mob.PredictedContact(0, 1) == doctest::Approx(37.5 - t));
      if (5 * t - 50 <= sqrt12500)
        CHECK(mob.PredictedContact(0, 2) == doctest::Approx((50 + sqrt12500) / 5 - t));
      if (Within(t, 7.5, 52.5)) CHECK(mob.PredictedContact(0, 4) == doctest::Approx(52.5 - t));
    }
  }
}

TEST_CASE("Seats: the lowest free node, none free and not simulated, and a freed node waits a step") {
  SeatAssigner seats(2);
  std::vector<NodeId> seat_of;
  auto step = [](double t, std::vector<std::string> ids) {
    FcdStep s;
    s.time = t;
    for (auto& id : ids) s.vehicles.push_back({id, 0, 0, 0, 0});
    return s;
  };
  seats.Step(step(0, {"a", "b", "c"}), &seat_of);
  CHECK(seat_of == std::vector<NodeId>{0, 1, kNoSeat});
  seats.Step(step(1, {"c", "b", "d"}), &seat_of);  // a left: its seat is free from the next step
  CHECK(seat_of == std::vector<NodeId>{kNoSeat, 1, kNoSeat});
  seats.Step(step(2, {"c", "b", "d", "e"}), &seat_of);  // c and d stay unsimulated on this trip; e sits
  CHECK(seat_of == std::vector<NodeId>{kNoSeat, 1, kNoSeat, 0});
  seats.Step(step(3, {"e"}), &seat_of);
  seats.Step(step(4, {"a", "e"}), &seat_of);  // a again: a new trip, seated
  CHECK(seat_of == std::vector<NodeId>{1, 0});
  CHECK(seats.trips() == 6);
  CHECK(seats.unseated() == 2);
}

TEST_CASE("RSUs at the busiest junctions, spread apart, from the trace") {
  // Vehicles idle near J1 (300, 0) the whole time; one drives past J0. J2 sees nobody.
  const std::vector<Straight> cars = {
      {"q1", 290, 0, 0, 0, 0, 30}, {"q2", 310, 0, 0, 0, 0, 30}, {"p", -200, 0, 10, 0, 0, 30}};
  const std::string fcd = WriteFile("murmur_fcd_busy.xml", Trace(cars, 30));
  const std::string net = WriteFile("murmur_net_busy.net.xml", kNet);
  RadioOptions radio;
  radio.radio_range = 100;  // RSU range 150: J0 and J1 are 300 m apart
  radio.rsus = 2;
  auto scan = ScanSumo({fcd, net, ""}, 6, radio);
  REQUIRE(scan.ok());
  REQUIRE(scan->rsus.size() == 2);
  CHECK(scan->rsus[0].id == "J1");
  CHECK(scan->rsus[1].id == "J0");
  radio.rsus = 4;
  auto too_many = ScanSumo({fcd, net, ""}, 6, radio);
  REQUIRE(!too_many.ok());
  CHECK(too_many.status().message().find("has 3 junctions") != std::string::npos);
  radio.rsus = 1;
  auto missing = ScanSumo({fcd, net, "J9"}, 6, radio);
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find("junction 'J9' is not in the network") != std::string::npos);
  // Named in a file: one a line, commas, comments.
  radio.rsus = 2;
  const std::string list = WriteFile("murmur_rsus.txt", "# the two RSUs\nJ2\n\n  J0 , # west\n");
  auto named = ScanSumo({fcd, net, "file:" + list}, 6, radio);
  REQUIRE(named.ok());
  REQUIRE(named->rsus.size() == 2);
  CHECK(named->rsus[0].id == "J2");
  CHECK(named->rsus[1].id == "J0");
  CHECK(ScanSumo({fcd, net, "file:/nonexistent/rsus.txt"}, 6, radio).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("A trace that starts late has everyone offline until it does") {
  const std::vector<Straight> cars = {{"a", 0, 0, 1, 0, 5, 8}};
  const std::string fcd = WriteFile("murmur_fcd_late.xml", Trace(cars, 8, true, 5));
  RadioOptions radio;
  auto scan = ScanSumo({fcd, "", ""}, 2, radio);
  REQUIRE(scan.ok());
  CHECK(scan->begin == 5);
  CHECK(scan->end == 8);
  REQUIRE(scan->presence.size() == 4);
  CHECK((scan->presence[0].time == 0 && !scan->presence[0].online && scan->presence[0].node == 0));
  CHECK((scan->presence[1].time == 0 && !scan->presence[1].online && scan->presence[1].node == 1));
  CHECK((scan->presence[2].time == 5 && scan->presence[2].online && scan->presence[2].node == 0));
  CHECK((scan->presence[3].time == 9 && !scan->presence[3].online && scan->presence[3].node == 0));
  auto m = SumoMobility::Open({fcd, "", ""}, 2, radio, *scan);
  REQUIRE(m.ok());
  (*m)->Advance(4.9);
  CHECK(!(*m)->present(0));
  (*m)->Advance(6.5);
  CHECK((*m)->present(0));
  CHECK((*m)->positions()[0].x == doctest::Approx(6.5));
  (*m)->Advance(8.99);
  CHECK((*m)->present(0));
  CHECK((*m)->positions()[0].x == doctest::Approx(8));
  (*m)->Advance(9);
  CHECK(!(*m)->present(0));

  // sumo_begin 6: virtual time 0 is the trace's 6 s, when a is on the road.
  const SumoSource later{fcd, "", "", 6};
  auto shifted = ScanSumo(later, 2, radio);
  REQUIRE(shifted.ok());
  REQUIRE(shifted->presence.size() == 2);
  CHECK((shifted->presence[0].time == 0 && !shifted->presence[0].online && shifted->presence[0].node == 1));
  CHECK((shifted->presence[1].time == 3 && !shifted->presence[1].online && shifted->presence[1].node == 0));
  auto ms = SumoMobility::Open(later, 2, radio, *shifted);
  REQUIRE(ms.ok());
  CHECK((*ms)->present(0));
  CHECK((*ms)->positions()[0].x == doctest::Approx(6));
  (*ms)->Advance(0.5);
  CHECK((*ms)->positions()[0].x == doctest::Approx(6.5));
  CHECK(!ScanSumo({fcd, "", "", 9}, 2, radio).ok());  // after the last timestep
}

TEST_CASE("Broken FCD and network files are refused, naming the file and line") {
  struct Case {
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      {"<fcd-export>\n<timestep time=\"2\">\n</timestep>\n<timestep time=\"1\">\n</timestep></fcd-export>",
       ":4: timestep time 1.000000 after 2.000000"},
      {"<fcd-export>\n<timestep time=\"0\">\n<vehicle id=\"a\" x=\"1\" y=\"2\"/>\n<vehicle id=\"a\" x=\"1\" "
       "y=\"2\"/>\n</timestep></fcd-export>",
       ":4: vehicle a twice in the timestep"},
      {"<fcd-export>\n<vehicle id=\"a\" x=\"1\" y=\"2\"/>\n</fcd-export>",
       ":2: <vehicle> outside a <timestep>"},
      {"<fcd-export>\n<timestep time=\"0\">\n<vehicle id=\"a\" lon=\"13.4\" "
       "lat=\"52.5\"/>\n</timestep></fcd-export>",
       ":3: vehicle positions in lon/lat"},
      {"<fcd-export>\n<timestep time=\"0\">\n<vehicle id=\"a\" x=\"nan\" y=\"2\"/>",
       ":3: <vehicle> attribute x=\"nan\" is not a finite number"},
      {"<fcd-export>\n<timestep time=\"0\">\n<vehicle id=\"a\" x=\"1\" y=\"2\"/>\n", ":4: malformed XML"},
      {"<!DOCTYPE lol [<!ENTITY a \"aaaa\">]>\n<fcd-export></fcd-export>", ":1: a document type declaration"},
      {"<routes>\n</routes>", ":1: root element <routes>: a SUMO FCD file has <fcd-export>"},
      {"<fcd-export>\n<timestep time=\"0\"><timestep time=\"1\"/></timestep></fcd-export>",
       ":2: <timestep> inside another element"},
      {"", "malformed XML"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const std::string path = WriteFile("murmur_fcd_bad.xml", c.text);
    auto r = FcdReader::Open(path);
    REQUIRE(r.ok());
    FcdStep step;
    Status status;
    for (;;) {
      auto got = (*r)->Next(&step);
      if (!got.ok()) {
        status = got.status();
        break;
      }
      if (!*got) break;
    }
    REQUIRE(!status.ok());
    CHECK(status.message().find(path) == 0);
    CHECK(status.message().find(c.says) != std::string::npos);
  }
  CHECK(FcdReader::Open("/nonexistent/murmur.xml").status().code() == StatusCode::kNotFound);
  const std::string bad_net =
      WriteFile("murmur_bad.net.xml", "<net>\n<junction id=\"j\" type=\"priority\" x=\"1\"/>\n</net>");
  auto net = ReadJunctions(bad_net);
  REQUIRE(!net.ok());
  CHECK(net.status().message().find(bad_net + ":2: <junction> without attribute y") != std::string::npos);
  auto junctions = ReadJunctions(WriteFile("murmur_good.net.xml", kNet));
  REQUIRE(junctions.ok());
  REQUIRE(junctions->size() == 3);  // the internal one is not a junction of ours
  CHECK((*junctions)[1].id == "J1");
  CHECK((*junctions)[1].type == "traffic_light");
}

}  // namespace
}  // namespace murmur::sim
