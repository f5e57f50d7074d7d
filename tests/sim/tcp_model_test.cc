// The simulator's TCP links (sim/net/tcp_model.h, transport tcp) against closed
// forms: slow start's round count, the loss-limited window against the
// bed's measurement it was fitted to, recovery times on scripted losses,
// Linux's idle restart, and whole deliveries in the Simulator worked out by
// hand.
#include "sim/net/tcp_model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "sim/net/simulator.h"
#include "sim/run/scenario.h"
#include "tests/sim/messages.h"

namespace murmur::sim {
namespace {

TEST_CASE("TCP framing: 1448 payload bytes per 1514-byte frame") {
  CHECK(TcpModel::WireBytes(0) == 0);
  CHECK(TcpModel::WireBytes(1448) == 1514);
  CHECK(TcpModel::WireBytes(1449) == 1514 + 1 + 66);
  CHECK(TcpModel::WireBytes(1e6) == 690 * 1514 + 880 + 66);  // 1e6 = 690 x 1448 + 880
}

TEST_CASE("Slow start costs ceil(log2(pipe / window)) round trips, then the rest goes at the rate") {
  // 10 Mbit/s (1.25e6 B/s), 100 ms: a pipe of 125,000 bytes. From 10 segments
  // (14,480 bytes) the window doubles 4 times before it covers the pipe
  // (14,480 x 2^3 = 115,840 < 125,000 <= 231,680), having sent 14,480 x 15.
  const auto t = TcpModel::Send(1e6, TcpModel::kInitialWindow, 1.25e6, 0.1, TcpModel::kMaxWindow);
  CHECK(t.seconds == doctest::Approx(4 * 0.1 + (1e6 - 14480.0 * 15) / 1.25e6).epsilon(1e-12));
  CHECK(t.window == doctest::Approx(14480.0 * 16 + (1e6 - 14480.0 * 15)));
  // A window that fills the pipe sends at the rate from the start.
  CHECK(TcpModel::Send(1e6, 2e5, 1.25e6, 0.1, TcpModel::kMaxWindow).seconds == doctest::Approx(0.8));
  // A small message inside the first window: its bytes at the rate, no round trip.
  CHECK(TcpModel::Send(8000, TcpModel::kInitialWindow, 1.25e6, 0.1, TcpModel::kMaxWindow).seconds ==
        doctest::Approx(8000 / 1.25e6));
  // A window held at 50,000 bytes below the pipe: 50,000 bytes a round trip.
  CHECK(TcpModel::Send(1e6, 50000, 1.25e6, 0.1, 50000).seconds == doctest::Approx(19 * 0.1 + 50000 / 1.25e6));
}

TEST_CASE("Under packet loss q a connection carries kLossWindow / q segments per round trip") {
  CHECK(TcpModel::LossLimitedRate(0.1, 0.04) == doctest::Approx(6.5 / 0.04 * 1448 / 0.1));
  CHECK(TcpModel::LossLimitedRate(0.2, 0.01) == doctest::Approx(6.5 / 0.01 * 1448 / 0.2));
  CHECK(std::isinf(TcpModel::LossLimitedRate(0.1, 0)));
  // The bed's measurements it was fitted to (docs/netbed.md "Packet loss"):
  // iperf3's TCP goodput between two namespaces, Mbit/s, at link rate R
  // Mbit/s, round trip T s and path loss q; the model (the loss-limited rate,
  // or the line's goodput when lower) is within a factor 2 of each, where
  // Padhye et al.'s formula is 8 to 100 times too low at the larger T x q.
  struct Measured {
    double rate, rtt, loss, mbps;
  };
  for (const Measured m : {Measured{20, 0.04, 0.009975, 18.5},
                           {20, 0.04, 0.0975, 15.6},
                           {100, 0.04, 0.0396, 85.1},
                           {100, 0.1, 0.009975, 81.6},
                           {100, 0.1, 0.0396, 19.5},
                           {100, 0.2, 0.009975, 43.8},
                           {100, 0.2, 0.0396, 6.06},
                           {20, 0.2, 0.009975, 13.0},
                           {20, 0.2, 0.0396, 13.4},
                           {5, 0.04, 0.0396, 4.52},
                           {5, 0.2, 0.009975, 4.24},
                           {100, 0.4, 0.009975, 11.8},
                           {100, 0.4, 0.0396, 6.76},
                           {100, 0.1, 0.0024984, 84.6},
                           {50, 0.2, 0.0199, 32.7}}) {
    const double model = std::min(m.rate * 1448 / 1514, TcpModel::LossLimitedRate(m.rtt, m.loss) * 8 / 1e6);
    INFO("R ", m.rate, " T ", m.rtt, " q ", m.loss, ": measured ", m.mbps, ", model ", model);
    CHECK(model < 2 * m.mbps);
    CHECK(model > m.mbps / 2);
  }
}

TEST_CASE("A lost segment costs one round trip, a lost tail two, a lost resend one more") {
  // Scripted draws: the calls listed lose their segment (or resend); every other call keeps it.
  auto losing = [](std::vector<int> calls) {
    return [calls, n = 0]() mutable {
      ++n;
      return std::find(calls.begin(), calls.end(), n) != calls.end() ? 0.0 : 0.5;
    };
  };
  const double rtt = 0.05;
  // A message whose bytes leave at once (transfer 0): whole round trips.
  CHECK(TcpModel::RecoverySeconds(10, 0, rtt, 0.1, losing({})) == 0);
  CHECK(TcpModel::RecoverySeconds(10, 0, rtt, 0.1, losing({1})) == rtt);         // segment 0
  CHECK(TcpModel::RecoverySeconds(10, 0, rtt, 0.1, losing({8})) == 2 * rtt);     // segment 7 of 10
  CHECK(TcpModel::RecoverySeconds(10, 0, rtt, 0.1, losing({1, 2})) == 2 * rtt);  // its resend lost too
  CHECK(TcpModel::RecoverySeconds(10, 0, rtt, 0, losing({1, 2})) == 0);
  // A transfer of 1 s: segment 0's resend is in long before the end; segment
  // 5's (leaving at 0.5 s) too; segment 9's (the tail, at 0.9 s) ends 0.9 +
  // 2 rtt, past the end by 2 rtt - 0.1.
  CHECK(TcpModel::RecoverySeconds(10, 1, rtt, 0.1, losing({1})) == 0);
  CHECK(TcpModel::RecoverySeconds(10, 1, rtt, 0.1, losing({6})) == 0);
  CHECK(TcpModel::RecoverySeconds(10, 1, 0.2, 0.1, losing({10})) == doctest::Approx(0.9 + 0.4 - 1));
  // Drawn: a one-segment message needs recovery with probability q (5 sigma).
  Rng rng(7, 0, RngPurpose::kNetwork);
  int recovered = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    recovered += TcpModel::RecoverySeconds(1, 0, rtt, 0.1, [&] { return rng.Uniform(); }) > 0;
  CHECK(std::abs(recovered - 0.1 * n) < 5 * std::sqrt(n * 0.1 * 0.9));
}

TEST_CASE("An idle connection halves its window once per timeout, down to the initial window") {
  const double w = 16 * TcpModel::kInitialWindow, rtt = 0.05, rto = 0.25;
  CHECK(TcpModel::RestartWindow(w, 0.9 * rto, rtt, true) == w);
  CHECK(TcpModel::RestartWindow(w, 2.5 * rto, rtt, true) == w / 4);  // idle - rto = 1.5 rto: two halvings
  CHECK(TcpModel::RestartWindow(w, 100, rtt, true) == TcpModel::kInitialWindow);
  CHECK(TcpModel::RestartWindow(w, 100, rtt, false) == w);
  CHECK(TcpModel::RestartWindow(5000, 100, rtt, true) == 5000);  // never raised
}

using testing::Blob;
using testing::Recorder;
DeviceProfile Link(double up_bps, double down_bps, double latency_ms) {
  return testing::Profile(up_bps, down_bps, latency_ms);
}

SimulatorOptions Tcp(bool idle_restart = true, double packet_loss = 0) {
  SimulatorOptions o;
  o.network.transport = LinkTransport::kTcp;
  o.network.tcp_idle_restart = idle_restart;
  o.network.packet_loss = packet_loss;
  return o;
}

double Seconds(Nanos t) { return static_cast<double>(t.count()) * 1e-9; }

TEST_CASE("A TCP link delivers 1 MB after slow start, the uplink's rate and the path's latency") {
  // 10 Mbit/s up, 100 Mbit/s down, 25 + 25 ms: round trip 100 ms, bottleneck 1.25e6 B/s.
  Simulator sim(Tcp(), {Link(10e6, 1e9, 25), Link(1e9, 100e6, 25)});
  Recorder rec(&sim);
  sim.SetSink(1, &rec);
  sim.env(0).Send(1, std::make_shared<Blob>(1'000'000));
  sim.RunUntil(Nanos::max());
  REQUIRE(rec.arrivals.size() == 1);
  const double wire = 690 * 1514 + 880 + 66;
  const double want = 4 * 0.1 + (wire - 14480.0 * 15) / 1.25e6 + 0.05;  // downlink cut through: no extra
  CHECK(Seconds(rec.arrivals[0]) == doctest::Approx(want).epsilon(1e-8));
}

TEST_CASE("TCP links: the slower of uplink and downlink sets the pace, not their sum") {
  // 20 Mbit/s both ways, 0.5 ms each end: a 400 kB model takes wire / rate
  // (plus slow start's few 2 ms round trips), where store and forward takes twice that.
  for (auto transport : {LinkTransport::kTcp, LinkTransport::kIdeal}) {
    SimulatorOptions o = Tcp();
    o.network.transport = transport;
    Simulator sim(o, {Link(20e6, 20e6, 0.5), Link(20e6, 20e6, 0.5)});
    Recorder rec(&sim);
    sim.SetSink(1, &rec);
    sim.env(0).Send(1, std::make_shared<Blob>(400'000));
    sim.RunUntil(Nanos::max());
    REQUIRE(rec.arrivals.size() == 1);
    const double t = Seconds(rec.arrivals[0]);
    if (transport == LinkTransport::kIdeal) {
      CHECK(t == doctest::Approx(2 * 400'000 * 8 / 20e6 + 0.001));
    } else {
      const double line = TcpModel::WireBytes(400'000) * 8 / 20e6;  // 0.167 s
      CHECK(t > line);
      CHECK(t < line + 0.02);
    }
  }
}

TEST_CASE("Messages a node sends together share its uplink and arrive together") {
  // Node 0 sends 400 kB to nodes 1 and 2 at once over a 20 Mbit/s uplink
  // (fast downlinks, 0.5 ms each end): as two TCP connections, both end
  // after 2 x wire / rate; FIFO would deliver one at half that time.
  // Node 0 sends `to_1` bytes to node 1, then `to_2` to node 2, in one event: their arrival times.
  auto together = [](std::size_t to_1, std::size_t to_2) {
    Simulator sim(Tcp(), {Link(20e6, 20e6, 0.5), Link(20e6, 1e9, 0.5), Link(20e6, 1e9, 0.5)});
    Recorder one(&sim), two(&sim);
    sim.SetSink(1, &one);
    sim.SetSink(2, &two);
    sim.env(0).Send(1, std::make_shared<Blob>(to_1));
    sim.env(0).Send(2, std::make_shared<Blob>(to_2));
    sim.RunUntil(Nanos::max());
    REQUIRE(one.arrivals.size() == 1);
    REQUIRE(two.arrivals.size() == 1);
    return std::pair(Seconds(one.arrivals[0]), Seconds(two.arrivals[0]));
  };
  const double both = 2 * TcpModel::WireBytes(400'000) * 8 / 20e6 + 0.001;
  auto [one, two] = together(400'000, 400'000);
  CHECK(one == doctest::Approx(both).epsilon(1e-6));
  CHECK(two == doctest::Approx(both).epsilon(1e-6));
  // A 20 kB and a 400 kB message: the small one ends after 2 x its own time.
  auto [small, large] = together(20'000, 400'000);
  const double a = TcpModel::WireBytes(20'000) * 8 / 20e6, b = TcpModel::WireBytes(400'000) * 8 / 20e6;
  CHECK(small == doctest::Approx(2 * a + 0.001).epsilon(1e-6));
  CHECK(large == doctest::Approx(a + b + 0.001).epsilon(1e-6));
}

TEST_CASE("Two messages into one TCP downlink share it: both are in after both their bytes") {
  // Nodes 0 and 1 each send 400 kB to node 2 (20 Mbit/s downlink, fast
  // uplinks): the downlink is the bottleneck, 2 x wire / rate for the pair.
  Simulator sim(Tcp(), {Link(1e9, 1e9, 0.5), Link(1e9, 1e9, 0.5), Link(1e9, 20e6, 0.5)});
  Recorder rec(&sim);
  sim.SetSink(2, &rec);
  sim.env(0).Send(2, std::make_shared<Blob>(400'000));
  sim.env(1).Send(2, std::make_shared<Blob>(400'000));
  sim.RunUntil(Nanos::max());
  REQUIRE(rec.arrivals.size() == 2);
  const double line = TcpModel::WireBytes(400'000) * 8 / 20e6;
  CHECK(Seconds(rec.arrivals[0]) == doctest::Approx(line + 0.001).epsilon(1e-3));
  CHECK(Seconds(rec.arrivals[1]) == doctest::Approx(2 * line + 0.001).epsilon(1e-3));
}

TEST_CASE("An idle TCP connection pays slow start again unless the hosts keep the window") {
  // Two 1 MB messages 10 s apart on the path of the 1 MB case.
  for (bool restart : {true, false}) {
    Simulator sim(Tcp(restart), {Link(10e6, 1e9, 25), Link(1e9, 100e6, 25)});
    Recorder rec(&sim);
    sim.SetSink(1, &rec);
    sim.env(0).Send(1, std::make_shared<Blob>(1'000'000));
    sim.At(Nanos(10'000'000'000), [&] { sim.env(0).Send(1, std::make_shared<Blob>(1'000'000)); });
    sim.RunUntil(Nanos::max());
    REQUIRE(rec.arrivals.size() == 2);
    const double first = Seconds(rec.arrivals[0]), second = Seconds(rec.arrivals[1]) - 10;
    if (restart) {
      CHECK(second == doctest::Approx(first).epsilon(1e-8));
    } else {
      const double wire = 690 * 1514 + 880 + 66;
      CHECK(second == doctest::Approx(wire / 1.25e6 + 0.05).epsilon(1e-8));
    }
  }
}

TEST_CASE("Packet loss costs TCP rate and recovery time, never a message") {
  // 2% on each access link (3.96% on the path), 100 Mbit/s, 20 + 20 ms: the
  // loss-limited rate (below the line) sets the time of 50 messages of 100
  // kB on one connection, plus at most 3 round trips each.
  Simulator sim(Tcp(true, 0.02), {Link(100e6, 100e6, 20), Link(100e6, 100e6, 20)});
  Recorder rec(&sim);
  sim.SetSink(1, &rec);
  for (int i = 0; i < 50; ++i) sim.env(0).Send(1, std::make_shared<Blob>(100'000));
  sim.RunUntil(Nanos::max());
  CHECK(rec.arrivals.size() == 50);
  CHECK(sim.traffic(1).messages_lost == 0);
  const double rate = TcpModel::LossLimitedRate(0.08, 1 - 0.98 * 0.98) * 1514 / 1448;  // link bytes/s
  REQUIRE(rate < 12.5e6);
  const double bulk = 50 * TcpModel::WireBytes(100'000) / rate;
  const double last = Seconds(rec.arrivals.back());
  CHECK(last > bulk + 0.04);
  CHECK(last < bulk + 0.04 + 50 * 3 * 0.08);
  // The same without loss: the line rate, no recovery.
  Simulator clean(Tcp(), {Link(100e6, 100e6, 20), Link(100e6, 100e6, 20)});
  Recorder got(&clean);
  clean.SetSink(1, &got);
  for (int i = 0; i < 50; ++i) clean.env(0).Send(1, std::make_shared<Blob>(100'000));
  clean.RunUntil(Nanos::max());
  CHECK(Seconds(got.arrivals.back()) < last);
}

}  // namespace
}  // namespace murmur::sim

namespace murmur::sim {
namespace {

TEST_CASE("Scenario fields say which loss: message_loss, packet_loss, and the old loss with a warning") {
  proto::Scenario s;
  s.set_packet_loss(0.01);
  CHECK(ValidateScenario(s).ok());
  CHECK(ScenarioNetwork(s).transport == LinkTransport::kTcp);
  CHECK(ScenarioNetwork(s).packet_loss == 0.01);
  CHECK(ScenarioWarnings(s).empty());
  s.set_transport("ideal");
  CHECK(ValidateScenario(s).message().find("'packet_loss' needs transport tcp") != std::string::npos);
  s.set_transport("udp");
  CHECK(ValidateScenario(s).message().find("'transport' 'udp' is not one of tcp, ideal") !=
        std::string::npos);
  proto::Scenario old;
  old.set_loss(0.1);
  REQUIRE(ValidateScenario(old).ok());
  CHECK(ScenarioNetwork(old).message_loss == 0.1);  // read as message loss
  REQUIRE(ScenarioWarnings(old).size() == 1);
  CHECK(ScenarioWarnings(old)[0].find("set packet_loss (--packet-loss)") != std::string::npos);
  old.set_message_loss(0.1);
  CHECK(ValidateScenario(old).message().find("set one of them, not both") != std::string::npos);
  s.set_transport("tcp");
  s.set_packet_loss(0.6);
  CHECK(ValidateScenario(s).message().find("'packet_loss' must be in [0, 0.5]") != std::string::npos);
}

}  // namespace
}  // namespace murmur::sim
