// MemberKeys: which key a member's own signed statement is checked with
// (docs/membership.md "Signed statements"). The certificate it carries binds
// the node id to a key; only the config's `public_key` pins one. A gossiped
// member enters the transport's address book without a pin, so a node the
// coordinator certified again under a new key is believed on its next
// statement instead of having its relays booked for forgery.
#include "node/member_keys.h"

#include <doctest/doctest.h>

#include "tests/node/loopback.h"

namespace murmur::node {
namespace {

using membership::MemberState;
using membership::MemberUpdate;
using membership::StatementCheck;
using testing::Creds;
using testing::LegacyCreds;
using testing::Policy;
using testing::Seeded;

// Member `member`'s alive statement signed by `creds`, carrying its certificate.
MemberUpdate Statement(const crypto::Credentials& creds, NodeId member, std::uint64_t incarnation) {
  MemberUpdate u;
  u.state = MemberState::kAlive;
  u.member = member;
  u.origin = member;
  u.incarnation = incarnation;
  u.address = "127.0.0.1:7000";
  u.credential = crypto::EncodeCertificate(creds.certificate);
  u.statement = creds.identity.Sign(membership::StatementBytes(u));
  return u;
}

TEST_CASE(
    "A statement is checked with the key its certificate binds to the member, and only a config pin "
    "overrides it") {
  auto coordinator = Seeded(100);
  asio::io_context io;
  TransportOptions o;
  o.peers = {{5, "127.0.0.1", 9, Seeded(5).public_key()}};  // the config pins node 5's key
  Transport transport(io, Creds(coordinator, 9), Policy(coordinator), o, [](NodeId, ReceivedMessage) {});
  const MemberKeys keys(&transport, Policy(coordinator));
  // Node 4, learned through gossip: in the address book, nothing pinned (as the daemon adds it).
  transport.AddPeer(PeerAddress{4, "127.0.0.1", 7000, std::nullopt});

  const auto first = keys.VerifyStatement(Statement(Creds(coordinator, 4), 4, 1));
  CHECK(first.check == StatementCheck::kValid);
  CHECK(first.key == Seeded(4).public_key());
  // Re-keyed: the coordinator certifies node 4 under identity 44's key.
  const auto rekeyed =
      keys.VerifyStatement(Statement(Creds(coordinator, 44, "fleet", 3600, crypto::kRoleNode, 4), 4, 2));
  CHECK(rekeyed.check == StatementCheck::kValid);
  CHECK(rekeyed.key == Seeded(44).public_key());
  // Had the address book pinned the first key, the new one would read as a forgery.
  transport.AddPeer(PeerAddress{4, "127.0.0.1", 7000, Seeded(4).public_key()});
  CHECK(keys.VerifyStatement(Statement(Creds(coordinator, 44, "fleet", 3600, crypto::kRoleNode, 4), 4, 3))
            .check == StatementCheck::kForged);

  // A certificate for another node id, or under another coordinator: forged.
  CHECK(keys.VerifyStatement(Statement(Creds(coordinator, 7), 6, 1)).check == StatementCheck::kForged);
  CHECK(keys.VerifyStatement(Statement(Creds(Seeded(101), 6), 6, 1)).check == StatementCheck::kForged);
  // A signature by a key other than the certificate's: forged.
  MemberUpdate resigned = Statement(Creds(coordinator, 6), 6, 1);
  resigned.statement = Seeded(7).Sign(membership::StatementBytes(resigned));
  CHECK(keys.VerifyStatement(resigned).check == StatementCheck::kForged);
  // An expired certificate: stale news, ignored.
  CHECK(keys.VerifyStatement(Statement(Creds(coordinator, 6, "fleet", -60), 6, 1)).check ==
        StatementCheck::kUnknownKey);

  // Version 1 certificates bind no id: taken only under the config's pin.
  CHECK(keys.VerifyStatement(Statement(LegacyCreds(coordinator, 6), 6, 1)).check ==
        StatementCheck::kUnknownKey);
  const auto pinned = keys.VerifyStatement(Statement(LegacyCreds(coordinator, 5), 5, 1));
  CHECK(pinned.check == StatementCheck::kValid);
  CHECK(pinned.key == Seeded(5).public_key());
  CHECK(keys.VerifyStatement(Statement(LegacyCreds(coordinator, 6), 5, 1)).check == StatementCheck::kForged);
}

}  // namespace
}  // namespace murmur::node
