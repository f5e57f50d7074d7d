// Relay circuits on loopback (node/transport/relay.h, docs/protocol.md
// section 7.2): two nodes that cannot dial each other meet through a relay
// that forwards only ciphertext; the relay refuses past its bounds and says
// why; it holds each node to its byte rate; the nodes move to another relay
// when theirs dies; an invitation from a node that is not one's relay, and a
// preface with a token no circuit holds, are refused and counted.
#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>

#include "node/transport/preface.h"
#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

using testing::ClosedPort;
using testing::Creds;
using testing::DenseModel;
using testing::Endpoint;
using testing::Policy;
using testing::RawPeer;
using testing::Seeded;
using testing::WaitFor;

TransportOptions Quick() {
  TransportOptions o;
  o.reverse_dial_after = std::chrono::milliseconds(200);
  o.unconnected_report_after = std::chrono::milliseconds(600);
  o.reconnect_max = std::chrono::milliseconds(500);
  return o;
}

TransportOptions Relaying(RelayOptions r = {}) {
  TransportOptions o = Quick();
  r.serve = true;
  o.relay = r;
  return o;
}

TransportOptions Behind(std::vector<NodeId> relays) {
  TransportOptions o = Quick();
  o.relays = std::move(relays);
  return o;
}

std::optional<NodeId> RelayOf(Endpoint& e, NodeId peer) {
  std::optional<NodeId> out;
  e.Do([&] { out = e.transport().RelayOf(peer); });
  return out;
}

std::string Reason(Endpoint& e, NodeId peer) {
  std::string out;
  e.Do([&] {
    if (auto o = e.transport().Unconnected(peer)) out = o->reason;
  });
  return out;
}

// Nodes `nated` reach relay `relay` (which has no address for them: it
// cannot dial them) and each other only at a closed port, through relays `via`.
void Wire(Endpoint& relay, std::initializer_list<std::pair<NodeId, Endpoint*>> nated,
          std::vector<NodeId> via) {
  for (const auto& [id, e] : nated) {
    e->AddPeer({relay.transport().self(), "127.0.0.1", relay.port(), std::nullopt});
    for (const auto& [other, o] : nated)
      if (other != id) e->AddPeer({other, "127.0.0.1", ClosedPort(), std::nullopt, via});
  }
}

TEST_CASE("Two nodes that cannot dial each other meet through a relay, which forwards only ciphertext") {
  auto coordinator = Seeded(100);
  Endpoint relay(1, Creds(coordinator, 1), Policy(coordinator), Relaying());
  std::mutex mu;
  crypto::Bytes seen;  // every byte the relay forwarded
  relay.Do([&] {
    relay.transport().relay().SetTap([&](crypto::ByteSpan b) {
      std::lock_guard<std::mutex> lock(mu);
      seen.insert(seen.end(), b.begin(), b.end());
    });
  });
  Endpoint a(2, Creds(coordinator, 2), Policy(coordinator), Behind({1}));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  Wire(relay, {{2, &a}, {3, &b}}, {1});
  REQUIRE(WaitFor([&] { return a.Connected(3) && b.Connected(2); }, std::chrono::seconds(10)));
  CHECK(RelayOf(a, 3) == std::optional<NodeId>(1));
  CHECK(RelayOf(b, 2) == std::optional<NodeId>(1));
  CHECK_FALSE(RelayOf(a, 1).has_value());  // the relay itself: direct

  const auto model = DenseModel(7, 200000);  // 800 kB of values
  a.Send(3, model);
  b.Send(2, DenseModel(8, 1000));
  REQUIRE(WaitFor([&] { return b.sink().Count() == 1 && a.sink().Count() == 1; }));
  crypto::Bytes plain;
  model->EncodeTo(plain);
  const auto got = b.sink().Got().front().second;
  crypto::Bytes received;
  got->EncodeTo(received);
  CHECK(received == plain);

  const RelayStats& rs = relay.transport().relay().stats();
  CHECK(rs.circuits_spliced >= 1);
  CHECK(rs.bytes_forwarded >= plain.size());
  CHECK(a.transport().stats().relayed_sessions >= 1);
  CHECK(a.transport().stats().relay_invites + b.transport().stats().relay_invites >= 1);
  CHECK(a.transport().stats().relayed_bytes_sent + b.transport().stats().relayed_bytes_sent >= plain.size());
  // What the relay saw holds no 32-byte run of the message; the same runs
  // are in the plaintext (the check can fail).
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(seen.size() >= plain.size());
  int found = 0;
  for (std::size_t at = plain.size() / 8; at + 32 <= plain.size(); at += plain.size() / 8) {
    const auto run = crypto::ByteSpan(plain).subspan(at, 32);
    CHECK(std::search(plain.begin(), plain.end(), run.begin(), run.end()) != plain.end());
    found += std::search(seen.begin(), seen.end(), run.begin(), run.end()) != seen.end();
  }
  CHECK(found == 0);
}

TEST_CASE("A relay refuses circuits past its per-node share, and the node says why") {
  auto coordinator = Seeded(100);
  RelayOptions one;
  one.max_circuits_per_node = 1;
  Endpoint relay(1, Creds(coordinator, 1), Policy(coordinator), Relaying(one));
  Endpoint a(2, Creds(coordinator, 2), Policy(coordinator), Behind({1}));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  Endpoint c(4, Creds(coordinator, 4), Policy(coordinator), Behind({1}));
  Wire(relay, {{2, &a}, {3, &b}}, {1});
  REQUIRE(WaitFor([&] { return a.Connected(3) && b.Connected(2); }, std::chrono::seconds(10)));
  // Node 4 wants node 3, which holds its one circuit.
  c.AddPeer({1, "127.0.0.1", relay.port(), std::nullopt});
  c.AddPeer({3, "127.0.0.1", ClosedPort(), std::nullopt, {1}});
  REQUIRE(WaitFor([&] { return c.transport().stats().relay_refusals >= 1; }, std::chrono::seconds(10)));
  CHECK(relay.transport().relay().stats().circuits_refused >= 1);
  CHECK(relay.transport().relay().CircuitsOf(3) <= 1);
  REQUIRE(WaitFor([&] { return Reason(c, 3).find("relay 1 refused") == 0; }, std::chrono::seconds(5)));
  CHECK(Reason(c, 3).find("node 3 holds its limit of 1 circuits") != std::string::npos);
  CHECK_FALSE(c.Connected(3));
  CHECK(a.Connected(3));  // the circuit that fits carries on
}

TEST_CASE("A node that does not relay refuses every circuit") {
  auto coordinator = Seeded(100);
  Endpoint plain(1, Creds(coordinator, 1), Policy(coordinator), Quick());
  Endpoint a(2, Creds(coordinator, 2), Policy(coordinator), Behind({1}));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  Wire(plain, {{2, &a}, {3, &b}}, {1});
  REQUIRE(WaitFor([&] { return Reason(a, 3).find("relay 1 refused: node 1 does not relay") == 0; },
                  std::chrono::seconds(10)));
  CHECK_FALSE(a.Connected(3));
  CHECK(plain.transport().relay().stats().bytes_forwarded == 0);
}

TEST_CASE("A relay holds each node to its bytes per second") {
  auto coordinator = Seeded(100);
  RelayOptions slow;
  slow.bytes_per_second_per_node = 1 << 20;
  slow.burst_bytes_per_node = 256 << 10;
  Endpoint relay(1, Creds(coordinator, 1), Policy(coordinator), Relaying(slow));
  Endpoint a(2, Creds(coordinator, 2), Policy(coordinator), Behind({1}));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  Wire(relay, {{2, &a}, {3, &b}}, {1});
  REQUIRE(WaitFor([&] { return a.Connected(3) && b.Connected(2); }, std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the bucket refills to its burst
  const auto start = std::chrono::steady_clock::now();
  a.Send(3, DenseModel(1, 750000));  // 3 MB
  REQUIRE(WaitFor([&] { return b.sink().Count() == 1; }, std::chrono::seconds(20)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // (3 MB - 256 KiB burst) at 1 MiB/s: at least 2.6 s, however fast the machine.
  CHECK(seconds >= 2.5);
  CHECK(relay.transport().relay().stats().rate_limited_waits > 0);
}

TEST_CASE("When their relay dies, two nodes move to another within seconds") {
  auto coordinator = Seeded(100);
  auto first = std::make_unique<Endpoint>(1, Creds(coordinator, 1), Policy(coordinator), Relaying());
  Endpoint second(4, Creds(coordinator, 4), Policy(coordinator), Relaying());
  Endpoint a(2, Creds(coordinator, 2), Policy(coordinator), Behind({1, 4}));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1, 4}));
  for (Endpoint* e : {&a, &b}) e->AddPeer({4, "127.0.0.1", second.port(), std::nullopt});
  Wire(*first, {{2, &a}, {3, &b}}, {1, 4});
  REQUIRE(WaitFor([&] { return a.Connected(3) && b.Connected(2) && a.Connected(4) && b.Connected(4); },
                  std::chrono::seconds(10)));
  const NodeId was = RelayOf(a, 3).value_or(kNoNode);
  REQUIRE((was == 1 || was == 4));
  Endpoint* survivor = was == 1 ? &second : first.get();
  if (was == 1) {
    first.reset();
  } else {
    second.Shutdown();
  }
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(WaitFor(
      [&] {
        auto r = RelayOf(a, 3);
        return r.has_value() && *r != was && b.Connected(2);
      },
      std::chrono::seconds(10)));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("moved from relay " << was << " in " << seconds << " s");
  CHECK(seconds < 8);
  a.Send(3, DenseModel(5, 1000));
  CHECK(WaitFor([&] { return b.sink().Count() == 1; }));
  CHECK(survivor->transport().relay().stats().circuits_spliced >= 1);
}

TEST_CASE("An invitation from a node that is not one's relay, and a preface no circuit holds, are refused") {
  auto coordinator = Seeded(100);
  Endpoint relay(1, Creds(coordinator, 1), Policy(coordinator), Relaying());
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  // Node 5 (not a relay of node 3) invites node 3 to a circuit.
  RawPeer raw(b.port());
  REQUIRE(raw.Handshake(Creds(coordinator, 5), Policy(coordinator)).ok());
  raw.WriteFrame(raw.Seal(HelloRecord(5)));
  RelayToken token{};
  token.fill(7);
  raw.WriteFrame(raw.Seal(RelayRecord(RecordType::kRelayInvite, 2, token)));
  CHECK(WaitFor([&] { return b.transport().stats().relay_invites_refused == 1; }, std::chrono::seconds(5)));
  CHECK(b.transport().stats().relay_invites == 0);
  // A preface whose token no circuit holds waits kOrphanWait, then is closed.
  RawPeer stranger(relay.port());
  stranger.Write(PrefaceBytes(token));
  CHECK(stranger.ClosedByPeer(std::chrono::seconds(5)));
  CHECK(relay.transport().relay().stats().prefaces_unknown == 1);
  // A preface of another version is a failed handshake.
  RawPeer future(relay.port());
  crypto::Bytes bad = PrefaceBytes(token);
  bad[4] = 2;
  future.Write(bad);
  CHECK(future.ClosedByPeer(std::chrono::seconds(5)));
  CHECK(WaitFor([&] { return relay.transport().stats().handshake_failures >= 1; }));
}

TEST_CASE("A node that asks a relay for a hundred circuits makes it invite the target at most its share") {
  auto coordinator = Seeded(100);
  RelayOptions r;
  r.pair_timeout = std::chrono::seconds(1);
  Endpoint relay(1, Creds(coordinator, 1), Policy(coordinator), Relaying(r));
  Endpoint b(3, Creds(coordinator, 3), Policy(coordinator), Behind({1}));
  b.AddPeer({1, "127.0.0.1", relay.port(), std::nullopt});
  REQUIRE(WaitFor([&] { return b.Connected(1); }, std::chrono::seconds(5)));
  // Certified node 5 asks for 100 circuits to node 3 and never comes to any.
  RawPeer attacker(relay.port());
  REQUIRE(attacker.Handshake(Creds(coordinator, 5), Policy(coordinator)).ok());
  attacker.WriteFrame(attacker.Seal(HelloRecord(5)));
  for (int i = 0; i < 100; ++i) {
    RelayToken token{};
    token.fill(static_cast<std::uint8_t>(i));
    attacker.WriteFrame(attacker.Seal(RelayRecord(RecordType::kRelayConnect, 3, token)));
  }
  const RelayStats& rs = relay.transport().relay().stats();
  REQUIRE(
      WaitFor([&] { return rs.circuits_refused + rs.circuits_unpaired == 100; }, std::chrono::seconds(10)));
  // 16 circuits (the per-node share) at most; each invited node 3 once, and
  // none paired, so each was dropped at the pair timeout.
  CHECK(rs.circuits_refused == 100 - r.max_circuits_per_node);
  CHECK(rs.circuits_unpaired == r.max_circuits_per_node);
  CHECK(rs.circuits_spliced == 0);
  const TransportStats& bs = b.transport().stats();
  CHECK(bs.relay_invites + bs.relay_invites_refused == r.max_circuits_per_node);
  CHECK(bs.relay_invites <= r.max_circuits_per_node);
  CHECK(WaitFor([&] { return rs.circuits_open == 0; }));
  CHECK(b.Connected(1));  // the target's session with its relay carries on
}

}  // namespace
}  // namespace murmur::node
