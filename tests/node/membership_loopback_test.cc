// membership::Membership hosted the way a daemon hosts it: on an AsioEnv over the
// secure Transport, real handshakes on loopback, each node's membership
// messages signed with the Ed25519 key its certificate names.
#include <doctest/doctest.h>

#include "loopback.h"
#include "membership/membership.h"
#include "membership/signer.h"

namespace murmur::node {
namespace {

using std::chrono::milliseconds;
using testing::Creds;
using testing::Endpoint;
using testing::Policy;
using testing::Seeded;
using testing::WaitFor;

// One daemon's membership: created, started and read on the endpoint's io thread.
struct Hosted {
  Hosted(Endpoint& ep, NodeId id, const membership::KeyDirectory& keys, std::vector<NodeId> seeds)
      : endpoint(ep), signer(Seeded(static_cast<std::uint8_t>(id))) {
    membership::MembershipOptions o;
    o.probe_interval = milliseconds(100);
    o.probe_timeout = milliseconds(50);
    o.seeds = std::move(seeds);
    o.address = "127.0.0.1:" + std::to_string(ep.port());
    ep.Do([&] {
      m = membership::Membership::Create(ep.env(), o, signer, keys).value();
      ep.env().RegisterDecoder(membership::kMembershipMessageKind, membership::MembershipDecoder());
      ep.env().SetSink(m.get());
      m->Start();
    });
  }
  ~Hosted() {
    if (!m) return;
    endpoint.Do([&] {
      endpoint.env().SetSink(nullptr);
      m.reset();
    });
  }
  std::vector<NodeId> Alive() {
    std::vector<NodeId> v;
    endpoint.Do([&] { v = m->AliveMembers(); });
    return v;
  }
  std::optional<membership::Member> Find(NodeId id) {
    std::optional<membership::Member> f;
    endpoint.Do([&] { f = m->Find(id); });
    return f;
  }

  Endpoint& endpoint;
  membership::Ed25519Signer signer;
  std::unique_ptr<membership::Membership> m;
};

TEST_CASE("Three daemons on loopback join through a seed, then detect one that is killed") {
  crypto::Identity coordinator = Seeded(200);
  membership::KeyDirectory keys;  // the certified keys (read-only once the nodes run)
  for (NodeId i = 1; i <= 3; ++i) keys.Add(i, Seeded(static_cast<std::uint8_t>(i)).public_key());
  Endpoint a(1, Creds(coordinator, 1), Policy(coordinator));
  Endpoint b(2, Creds(coordinator, 2), Policy(coordinator));
  auto c = std::make_unique<Endpoint>(3, Creds(coordinator, 3), Policy(coordinator));
  REQUIRE(a.start_status().ok());
  // Every node can reach every other (in a daemon, OnMemberAlive's address would feed AddPeer).
  a.AddPeer({2, "127.0.0.1", b.port(), std::nullopt});
  a.AddPeer({3, "127.0.0.1", c->port(), std::nullopt});
  b.AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  b.AddPeer({3, "127.0.0.1", c->port(), std::nullopt});
  c->AddPeer({1, "127.0.0.1", a.port(), std::nullopt});
  c->AddPeer({2, "127.0.0.1", b.port(), std::nullopt});

  Hosted ha(a, 1, keys, {});
  Hosted hb(b, 2, keys, {1});
  auto hc = std::make_unique<Hosted>(*c, 3, keys, std::vector<NodeId>{1});
  CHECK(WaitFor([&] {
    return ha.Alive() == std::vector<NodeId>{2, 3} && hb.Alive() == std::vector<NodeId>{1, 3} &&
           hc->Alive() == std::vector<NodeId>{1, 2};
  }));
  CHECK(hb.Find(3)->address == "127.0.0.1:" + std::to_string(c->port()));
  CHECK(a.env().undecodable() == 0);

  // Kill node 3 (no leave). Three members: Lifeguard's K drops to 0, so the
  // timeout is Min = 5 * 100 ms after the suspicion.
  hc.reset();
  c->Shutdown();
  CHECK(WaitFor([&] {
    auto fa = ha.Find(3), fb = hb.Find(3);
    return fa && fb && fa->state == membership::MemberState::kDead &&
           fb->state == membership::MemberState::kDead;
  }));
  CHECK(ha.Alive() == std::vector<NodeId>{2});
}

}  // namespace
}  // namespace murmur::node
