// Reachability on loopback (node/transport/transport.h, "Who dials"): a node
// the smaller id cannot reach dials it itself, the session carries both
// directions, two sessions dialled from both ends settle on the same one at
// both ends, and a peer no dial reaches is reported with its reason.
#include <doctest/doctest.h>

#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

using testing::ClosedPort;
using testing::Creds;
using testing::DenseModel;
using testing::Endpoint;
using testing::Policy;
using testing::Seeded;
using testing::WaitFor;

TransportOptions Quick() {
  TransportOptions o;
  o.reverse_dial_after = std::chrono::milliseconds(300);
  o.unconnected_report_after = std::chrono::milliseconds(600);
  return o;
}

std::optional<PeerOutage> Outage(Endpoint& e, NodeId peer) {
  std::optional<PeerOutage> out;
  e.Do([&] { out = e.transport().Unconnected(peer); });
  return out;
}

TEST_CASE("A node the smaller id cannot reach dials it, and the session carries both directions") {
  auto coordinator = Seeded(100);
  Endpoint a(1, Creds(coordinator, 1), Policy(coordinator), Quick());
  Endpoint b(2, Creds(coordinator, 2), Policy(coordinator), Quick());
  a.AddPeer({2, "127.0.0.1", ClosedPort(), std::nullopt});  // node 2 as if behind a NAT
  b.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  // Before reverse_dial_after, node 2 waits for node 1's dial, and says so.
  REQUIRE(Outage(b, 1).has_value());
  CHECK(Outage(b, 1)->reason.find("waiting for it to dial") == 0);
  REQUIRE(WaitFor([&] { return a.Connected(2) && b.Connected(1); }, std::chrono::seconds(5)));
  CHECK(b.transport().stats().reverse_dials >= 1);
  CHECK(a.transport().stats().connect_failures >= 1);
  CHECK_FALSE(Outage(a, 2).has_value());
  a.Send(2, DenseModel(1, 1000));
  b.Send(1, DenseModel(2, 1000));
  REQUIRE(WaitFor([&] { return a.sink().Count() == 1 && b.sink().Count() == 1; }));
  // Node 1 stops dialling once the session is up: no more failures pile up.
  const std::uint64_t failures = a.transport().stats().connect_failures;
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  CHECK(a.transport().stats().connect_failures == failures);
  CHECK(a.transport().stats().sessions_opened == 1);
}

TEST_CASE("Two nodes that dial each other at once end with the same single session at both ends") {
  auto coordinator = Seeded(100);
  TransportOptions o = Quick();
  o.reverse_dial_after = Nanos(0);  // both dial at once
  for (int attempt = 0; attempt < 3; ++attempt) {
    CAPTURE(attempt);
    Endpoint a(1, Creds(coordinator, 1), Policy(coordinator), o);
    Endpoint b(2, Creds(coordinator, 2), Policy(coordinator), o);
    a.AddPeer({2, "127.0.0.1", b.port(), std::nullopt});
    b.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
    REQUIRE(WaitFor([&] { return a.Connected(2) && b.Connected(1); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const std::uint64_t opened_a = a.transport().stats().sessions_opened;
    const std::uint64_t opened_b = b.transport().stats().sessions_opened;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // Settled: no session opened since, and each duplicate was closed at both ends.
    CHECK(a.transport().stats().sessions_opened == opened_a);
    CHECK(b.transport().stats().sessions_opened == opened_b);
    CHECK(a.Connected(2));
    CHECK(b.Connected(1));
    a.Send(2, DenseModel(1, 1000));
    b.Send(1, DenseModel(2, 1000));
    CHECK(WaitFor([&] { return a.sink().Count() == 1 && b.sink().Count() == 1; }));
  }
}

TEST_CASE("A peer that no dial reaches is reported with the reason, and cleared when it comes") {
  auto coordinator = Seeded(100);
  Endpoint a(1, Creds(coordinator, 1), Policy(coordinator), Quick());
  const std::uint16_t port = ClosedPort();
  a.AddPeer({2, "127.0.0.1", port, std::nullopt});
  CHECK(a.transport().stats().peers_unconnected == 0);
  REQUIRE(WaitFor([&] { return a.transport().stats().peers_unconnected == 1; }, std::chrono::seconds(3)));
  std::optional<PeerOutage> out = Outage(a, 2);
  REQUIRE(out.has_value());
  CHECK(out->reason.find("refused") == 0);
  CHECK(out->duration >= std::chrono::milliseconds(600));
  // Node 2 comes up where node 1 looks for it.
  TransportOptions o = Quick();
  o.listen_port = port;
  Endpoint b(2, Creds(coordinator, 2), Policy(coordinator), o);
  REQUIRE(b.start_status().ok());
  REQUIRE(WaitFor([&] { return a.Connected(2); }));
  CHECK_FALSE(Outage(a, 2).has_value());
  CHECK(WaitFor([&] { return a.transport().stats().peers_unconnected == 0; }, std::chrono::seconds(3)));
}

TransportOptions Probing() {
  TransportOptions o = Quick();
  o.probe_first = std::chrono::milliseconds(300);
  o.probe_interval = std::chrono::seconds(1);
  return o;
}

std::string Detail(Endpoint& e) {
  std::string out;
  e.Do([&] { out = e.transport().reachability_detail(); });
  return out;
}

TEST_CASE("Probes: a node its peers dial back is reachable, and one they cannot is not and says why") {
  auto coordinator = Seeded(100);
  Endpoint a(1, Creds(coordinator, 1), Policy(coordinator), Probing());
  Endpoint b(2, Creds(coordinator, 2), Policy(coordinator), Probing());
  Endpoint c(3, Creds(coordinator, 3), Policy(coordinator), Probing());
  Endpoint d(4, Creds(coordinator, 4), Policy(coordinator), Probing());
  CHECK(a.transport().reachability() == Reachability::kUnknown);
  a.AddPeer({2, "127.0.0.1", b.port(), std::nullopt});
  b.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  // Node 1 knows node 3 at a closed port (as if behind a NAT that refuses),
  // and node 4 at another address than the one it connects from.
  const std::uint16_t closed = ClosedPort();
  a.AddPeer({3, "127.0.0.1", closed, std::nullopt});
  c.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  a.AddPeer({4, "127.0.0.2", d.port(), std::nullopt});
  d.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  REQUIRE(WaitFor(
      [&] {
        return b.transport().reachability() == Reachability::kReachable &&
               c.transport().reachability() == Reachability::kUnreachable &&
               d.transport().reachability() == Reachability::kUnreachable;
      },
      std::chrono::seconds(15)));
  CHECK(Detail(b) == "dialled back by node 1");
  CHECK(b.transport().stats().probe_dialbacks >= 1);
  CHECK(Detail(c) ==
        "node 1: dial back to 127.0.0.1:" + std::to_string(closed) + ": refused (nothing listens there)");
  // Node 1 never dials 127.0.0.2 for node 4's probe: not where node 4 connects from.
  CHECK(Detail(d) == "node 1: its address 127.0.0.2:" + std::to_string(d.port()) +
                         " is not where it connects from (127.0.0.1): behind NAT");
  CHECK(a.transport().stats().probes_refused >= 1);
  CHECK(a.transport().stats().probes_served >= 2);  // node 2's and node 3's
}

}  // namespace
}  // namespace murmur::node
