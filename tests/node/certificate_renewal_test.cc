// Certificate renewal without a restart (node/certificate_reload.h,
// Transport::SetCredentials, docs/daemon.md "Certificate renewal"): the
// checks a renewal must pass, sessions that outlive the old certificate in
// either direction, a peer refusing a renewal it cannot verify, and a node cut
// off by an expired certificate coming back once it has a renewed one.
// Certificates count whole Unix seconds: one valid for S seconds from now
// expires between S - 1 and S seconds later, and each side checks expiry every
// 500 ms, so "past the old not_after" below means one whole second after it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "crypto/certificate.h"
#include "gossip/messages.h"
#include "node/certificate_reload.h"
#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

namespace fs = std::filesystem;
using testing::Creds;
using testing::Endpoint;
using testing::Policy;
using testing::Seeded;
using testing::UnixNow;
using testing::WaitFor;

std::shared_ptr<const gossip::GossipMessage> Model(std::uint64_t round) {
  std::vector<float> v(16, static_cast<float>(round));
  compression::ValueCoding f32;
  auto u = std::make_shared<const compression::Update>(
      compression::Update::Dense(v.size(), compression::PackValues(v, {}, f32, 0)));
  return std::make_shared<gossip::GossipMessage>(gossip::Channel::kModel, round, 0.5, u);
}

struct RenewalSpec {
  const crypto::Identity* signer = nullptr;  // the coordinator that signs it
  std::uint8_t who = 1;                      // the node key's seed
  std::string network = "fleet";
  std::int64_t not_before = -7200;  // relative to now
  std::int64_t not_after = 3600;
  std::uint8_t roles = crypto::kRoleNode;
  std::uint64_t serial = 1000;
};

crypto::Certificate Certificate(const RenewalSpec& s) {
  crypto::Certificate c;
  c.node_key = Seeded(s.who).public_key();
  if (s.roles & (crypto::kRoleNode | crypto::kRoleAggregator)) c.node_id = s.who;
  c.network_id = s.network;
  c.roles = s.roles;
  c.serial = s.serial;
  c.not_before = UnixNow() + s.not_before;
  c.not_after = UnixNow() + s.not_after;
  REQUIRE(crypto::SignCertificate(*s.signer, &c).ok());
  return c;
}

// `current`'s identity and Noise static key with `cert`.
crypto::Credentials With(const crypto::Credentials& current, const crypto::Certificate& cert) {
  auto made = crypto::Credentials::Make(current.identity, cert, current.static_key);
  REQUIRE_MESSAGE(made.ok(), made.status().ToString());
  return *made;
}

// Sleeps until the wall clock is a whole second past `not_after`.
void SleepPast(std::int64_t not_after) {
  while (UnixNow() < not_after + 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST_CASE(
    "A renewal is refused unless it is the coordinator's, for this network, key and roles, and valid now") {
  const auto coordinator = Seeded(100);
  const auto other = Seeded(101);
  const fs::path dir =
      fs::temp_directory_path() / std::string("murmur_renewal_").append(std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const crypto::Credentials current = Creds(coordinator, 1, "fleet", 600);
  const crypto::TrustPolicy policy = Policy(coordinator);

  struct Case {
    const char* name;
    RenewalSpec spec;
    StatusCode code;
    const char* says;
  };
  const Case cases[] = {
      {"another coordinator", {.signer = &other}, StatusCode::kUnauthenticated, "bad signature"},
      {"another network",
       {.signer = &coordinator, .network = "lab"},
       StatusCode::kPermissionDenied,
       "network 'lab'"},
      {"another node key", {.signer = &coordinator, .who = 9}, StatusCode::kPermissionDenied, "node key"},
      {"expired", {.signer = &coordinator, .not_after = -10}, StatusCode::kUnauthenticated, "expired"},
      {"not yet valid",
       {.signer = &coordinator, .not_before = 600, .not_after = 7200},
       StatusCode::kUnauthenticated,
       "not yet valid"},
      {"other roles",
       {.signer = &coordinator, .roles = crypto::kRoleNode | crypto::kRoleAggregator},
       StatusCode::kPermissionDenied,
       "keeps the roles"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string path = (dir / "bad.cert").string();
    REQUIRE(crypto::SaveCertificateFile(path, Certificate(c.spec)).ok());
    auto r = LoadRenewedCredentials(path, current, policy, UnixNow());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == c.code);
    CHECK(r.status().message().find(c.says) != std::string::npos);
    CHECK(r.status().message().find(path) != std::string::npos);
  }
  // Files that are no certificate: missing, garbage, a key file.
  {
    const std::string missing = (dir / "missing.cert").string();
    auto r = LoadRenewedCredentials(missing, current, policy, UnixNow());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kNotFound);
    CHECK(r.status().message().find(missing) != std::string::npos);
    const std::string garbage = (dir / "garbage.cert").string();
    std::ofstream(garbage) << "murmur-certificate v1\nzz\n";
    r = LoadRenewedCredentials(garbage, current, policy, UnixNow());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(garbage) != std::string::npos);
  }
  // A good renewal: the same identity and Noise static key, the new certificate.
  const crypto::Certificate good = Certificate({.signer = &coordinator, .not_after = 7200});
  const std::string path = (dir / "node.cert").string();
  REQUIRE(crypto::SaveCertificateFile(path, good).ok());
  auto r = LoadRenewedCredentials(path, current, policy, UnixNow());
  REQUIRE_MESSAGE(r.ok(), r.status().ToString());
  CHECK(r->certificate == good);
  CHECK(r->identity.public_key() == current.identity.public_key());
  CHECK(r->static_key.public_key == current.static_key.public_key);
  CHECK(crypto::VerifySignature(good.node_key,
                                crypto::StaticKeyBindingBytes("fleet", r->static_key.public_key),
                                r->static_key_signature));
  fs::remove_all(dir);
}

TEST_CASE("A renewed certificate carries a session past the old not_after, in either direction") {
  // Node 1 dials node 5. Either the dialer's or the listener's certificate
  // expires 2-3 s from now and is renewed once the session is up: the session
  // (the first and only one on both sides) goes on past the old not_after,
  // messages flow both ways, and the peer holds the new certificate.
  const auto coordinator = Seeded(100);
  for (const bool dialer_renews : {true, false}) {
    CAPTURE(dialer_renews);
    const crypto::Credentials short_lived1 = Creds(coordinator, 1, "fleet", dialer_renews ? 3 : 3600);
    const crypto::Credentials short_lived5 = Creds(coordinator, 5, "fleet", dialer_renews ? 3600 : 3);
    Endpoint b(5, short_lived5, Policy(coordinator));
    REQUIRE(b.start_status().ok());
    TransportOptions o;
    o.peers = {{5, "127.0.0.1", b.port(), std::nullopt}};
    Endpoint a(1, short_lived1, Policy(coordinator), o);
    REQUIRE(WaitFor([&] { return a.Connected(5) && b.Connected(1); }));
    Endpoint& renewing = dialer_renews ? a : b;
    Endpoint& peer = dialer_renews ? b : a;
    const NodeId renewing_id = dialer_renews ? 1 : 5;
    const crypto::Credentials& old = dialer_renews ? short_lived1 : short_lived5;
    std::optional<crypto::Certificate> seen;
    peer.Do([&] { seen = peer.transport().PeerCertificate(renewing_id); });
    REQUIRE(seen.has_value());
    CHECK(seen->not_after == old.certificate.not_after);

    const crypto::Certificate renewed =
        Certificate({.signer = &coordinator, .who = static_cast<std::uint8_t>(renewing_id)});
    Status set;
    renewing.Do([&] { set = renewing.transport().SetCredentials(With(old, renewed)); });
    REQUIRE_MESSAGE(set.ok(), set.ToString());
    REQUIRE(UnixNow() < old.certificate.not_after);  // renewed before the old one expired
    CHECK(WaitFor([&] {
      std::optional<crypto::Certificate> c;
      peer.Do([&] { c = peer.transport().PeerCertificate(renewing_id); });
      return c.has_value() && *c == renewed;
    }));
    SleepPast(old.certificate.not_after);
    CHECK(a.transport().stats().sessions_expired == 0);
    CHECK(b.transport().stats().sessions_expired == 0);
    CHECK(a.transport().stats().sessions_opened == 1);
    CHECK(b.transport().stats().sessions_opened == 1);
    CHECK(renewing.transport().stats().certificates_presented == 1);
    CHECK(peer.transport().stats().certificate_updates == 1);
    CHECK(peer.transport().stats().certificate_updates_refused == 0);
    CHECK(a.Connected(5));
    a.Send(5, Model(1));
    b.Send(1, Model(2));
    CHECK(WaitFor([&] { return a.sink().Count() == 1 && b.sink().Count() == 1; }));
  }
}

TEST_CASE("A renewal the peer cannot verify is refused there, and the session keeps the old certificate") {
  const auto coordinator = Seeded(100);
  const auto other = Seeded(101);
  // Each bad renewal is followed at once by the good certificate again, so
  // the peer takes one update and refuses one per case.
  const crypto::Credentials creds1 = Creds(coordinator, 1);
  Endpoint b(5, Creds(coordinator, 5), Policy(coordinator));
  TransportOptions o;
  o.peers = {{5, "127.0.0.1", b.port(), std::nullopt}};
  Endpoint a(1, creds1, Policy(coordinator), o);
  REQUIRE(WaitFor([&] { return a.Connected(5); }));
  struct Case {
    const char* name;
    RenewalSpec spec;
  };
  const Case cases[] = {
      {"another coordinator", {.signer = &other}},
      {"another network", {.signer = &coordinator, .network = "lab"}},
      {"expired", {.signer = &coordinator, .not_after = -10}},
      {"without the node role", {.signer = &coordinator, .roles = crypto::kRoleOperator}},
  };
  std::uint64_t sent = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    // The Transport takes what it is given (the daemon checks first); the
    // peer checks again. The good certificate goes straight after it (an
    // expired one would end the session at this side's next tick).
    Status bad, good;
    a.Do([&] {
      bad = a.transport().SetCredentials(With(creds1, Certificate(c.spec)));
      good = a.transport().SetCredentials(creds1);
    });
    REQUIRE(bad.ok());
    REQUIRE(good.ok());
    ++sent;
    CHECK(WaitFor([&] {
      return b.transport().stats().certificate_updates_refused == sent &&
             b.transport().stats().certificate_updates == sent;
    }));
    std::optional<crypto::Certificate> seen;
    b.Do([&] { seen = b.transport().PeerCertificate(1); });
    REQUIRE(seen.has_value());
    CHECK(*seen == creds1.certificate);
  }
  // Another identity's credentials are not a renewal: refused locally, nothing changes.
  Status st;
  a.Do([&] { st = a.transport().SetCredentials(Creds(coordinator, 9)); });
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(a.transport().stats().certificates_presented == 2 * sent);
  CHECK(a.transport().stats().sessions_opened == 1);
  CHECK(a.transport().stats().sessions_expired + b.transport().stats().sessions_expired == 0);
  a.Send(5, Model(3));
  CHECK(WaitFor([&] { return b.sink().Count() == 1; }));
}

TEST_CASE("A node cut off by its expired certificate is back within the redial backoff once renewed") {
  // Node 1's certificate expires 1-2 s from now: its session closes and each
  // redial fails its handshake. Given a renewed certificate, the next redial
  // (at most reconnect_max = 400 ms later) succeeds and the peer holds the new one.
  const auto coordinator = Seeded(100);
  Endpoint b(5, Creds(coordinator, 5), Policy(coordinator));
  TransportOptions o;
  o.reconnect_initial = std::chrono::milliseconds(100);
  o.reconnect_max = std::chrono::milliseconds(400);
  o.peers = {{5, "127.0.0.1", b.port(), std::nullopt}};
  const crypto::Credentials old = Creds(coordinator, 1, "fleet", 2);
  Endpoint a(1, old, Policy(coordinator), o);
  REQUIRE(WaitFor([&] { return a.Connected(5); }));
  REQUIRE(WaitFor(
      [&] { return a.transport().stats().sessions_expired + b.transport().stats().sessions_expired >= 1; },
      std::chrono::seconds(4)));
  const auto failures = b.transport().stats().handshake_failures.load();
  REQUIRE(WaitFor([&] { return b.transport().stats().handshake_failures >= failures + 1; }));
  CHECK_FALSE(a.Connected(5));
  const crypto::Certificate renewed = Certificate({.signer = &coordinator});
  const auto start = std::chrono::steady_clock::now();
  a.Do([&] { REQUIRE(a.transport().SetCredentials(With(old, renewed)).ok()); });
  REQUIRE(WaitFor([&] { return a.Connected(5) && b.Connected(1); }, std::chrono::seconds(3)));
  const double back = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("reconnected " << back << " s after the renewal");
  CHECK(back < 0.4 + 0.5);  // reconnect_max plus a handshake on loopback
  std::optional<crypto::Certificate> seen;
  b.Do([&] { seen = b.transport().PeerCertificate(1); });
  REQUIRE(seen.has_value());
  CHECK(*seen == renewed);
  a.Send(5, Model(4));
  CHECK(WaitFor([&] { return b.sink().Count() == 1; }));
}

}  // namespace
}  // namespace murmur::node
