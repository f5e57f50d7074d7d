#include "membership/messages.h"

#include <doctest/doctest.h>

#include <cmath>

#include "membership/broadcast_queue.h"
#include "membership/lifeguard.h"
#include "membership/signer.h"

namespace murmur::membership {
namespace {

crypto::Identity KeyOf(NodeId node) {
  std::array<std::uint8_t, crypto::kSignSeedSize> seed{};
  seed[0] = static_cast<std::uint8_t>(node);
  seed[1] = 0x5A;
  return crypto::Identity::FromSeed(seed);
}

MembershipMessage Sample(const MembershipSigner& signer) {
  MembershipHeader h{MembershipType::kPingReq, 7, 9, 0x01020304, 11};
  MemberUpdate alive{MemberState::kAlive, 300, 2, 300, "10.0.0.3:7000"};
  alive.statement.fill(0xEE);  // stands for member 300's signature
  alive.credential = {0xC1, 0xC2, 0xC3};
  std::vector<MemberUpdate> u = {{MemberState::kSuspect, 11, 0x1122334455667788ull, 7, ""}, alive};
  return *MembershipMessage::Make(h, u, signer);
}

TEST_CASE("A membership message encodes byte by byte as docs/membership.md lays it out") {
  Ed25519Signer signer(KeyOf(7));
  MembershipMessage m = Sample(signer);
  std::vector<std::uint8_t> b;
  m.EncodeTo(b);
  REQUIRE(b.size() == m.EncodedSize());
  // 19-byte header + (18 + 0) + (18 + 13 + 64 + 2 + 3) + 64-byte signature.
  CHECK(b.size() == 19 + 18 + 100 + 64);
  const std::vector<std::uint8_t> header = {3, 7, 0, 0, 0, 9, 0, 0, 0, 4, 3, 2, 1, 11, 0, 0, 0, 2, 0};
  CHECK(std::vector<std::uint8_t>(b.begin(), b.begin() + 19) == header);
  const std::vector<std::uint8_t> first = {1,    11,   0,    0,    0, 0x88, 0x77, 0x66, 0x55,
                                           0x44, 0x33, 0x22, 0x11, 7, 0,    0,    0,    0};
  CHECK(std::vector<std::uint8_t>(b.begin() + 19, b.begin() + 37) == first);
  CHECK(b[37] == 0);     // alive
  CHECK(b[38] == 0x2C);  // member 300 = 0x012C
  CHECK(b[39] == 0x01);
  CHECK(b[54] == 13);  // address length
  CHECK(std::string(b.begin() + 55, b.begin() + 68) == "10.0.0.3:7000");
  // An alive update is its member's statement: 64 signature bytes, u16 3, the credential.
  CHECK(std::vector<std::uint8_t>(b.begin() + 68, b.begin() + 132) == std::vector<std::uint8_t>(64, 0xEE));
  CHECK(std::vector<std::uint8_t>(b.begin() + 132, b.begin() + 137) ==
        std::vector<std::uint8_t>{3, 0, 0xC1, 0xC2, 0xC3});
  // What member 300 signs: the statement context, state, member, incarnation, address.
  std::vector<std::uint8_t> statement(kMemberStatementContext.begin(), kMemberStatementContext.end());
  for (std::uint8_t x : {0, 0x2C, 0x01, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 13}) statement.push_back(x);
  statement.insert(statement.end(), b.begin() + 55, b.begin() + 68);
  CHECK(StatementBytes(m.updates()[1]) == statement);
  // The message signature covers the context string and the 137 body bytes.
  std::vector<std::uint8_t> signed_bytes(kMembershipSignatureContext.begin(),
                                         kMembershipSignatureContext.end());
  signed_bytes.insert(signed_bytes.end(), b.begin(), b.begin() + 137);
  CHECK(m.SignedBytes() == signed_bytes);
  crypto::Signature sig;
  std::copy(b.begin() + 137, b.end(), sig.begin());
  CHECK(crypto::VerifySignature(KeyOf(7).public_key(), signed_bytes, sig));

  auto back = MembershipMessage::Decode(b, {}).value();
  CHECK(back->header() == m.header());
  CHECK(back->updates() == m.updates());
  CHECK(back->signature() == m.signature());
}

TEST_CASE("The membership decoder refuses every truncation, trailing byte and bad field with a Status") {
  Ed25519Signer signer(KeyOf(7));
  std::vector<std::uint8_t> b;
  Sample(signer).EncodeTo(b);
  for (std::size_t n = 0; n < b.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(MembershipMessage::Decode(std::span(b).first(n), {}).ok());
  }
  auto longer = b;
  longer.push_back(0);
  CHECK(MembershipMessage::Decode(longer, {}).status().code() == StatusCode::kDataLoss);
  auto bad_type = b;
  bad_type[0] = 7;
  CHECK(MembershipMessage::Decode(bad_type, {}).status().message().find("type 7") != std::string::npos);
  bad_type[0] = 0;
  CHECK_FALSE(MembershipMessage::Decode(bad_type, {}).ok());
  auto bad_state = b;
  bad_state[19] = 4;
  CHECK(MembershipMessage::Decode(bad_state, {}).status().message().find("unknown state 4") !=
        std::string::npos);
  auto bad_origin = b;
  bad_origin[50] = 7;  // member 300's alive update with origin 7: not its own statement
  CHECK(MembershipMessage::Decode(bad_origin, {}).status().message().find("own statements") !=
        std::string::npos);
  MembershipDecodeLimits tight;
  tight.max_address_bytes = 12;
  CHECK(MembershipMessage::Decode(b, tight).status().code() == StatusCode::kResourceExhausted);
  tight = {};
  tight.max_credential_bytes = 2;
  CHECK(MembershipMessage::Decode(b, tight).status().message().find("3-byte credential") !=
        std::string::npos);
  tight = {};
  tight.max_updates = 1;
  auto st = MembershipMessage::Decode(b, tight).status();
  CHECK(st.code() == StatusCode::kResourceExhausted);
  CHECK(st.message().find("2 updates, over the limit of 1") != std::string::npos);
}

TEST_CASE("A message of more than 64 updates is refused by default (a SYNC chunk is at most 64)") {
  Ed25519Signer signer(KeyOf(7));
  std::vector<MemberUpdate> many;
  for (NodeId i = 0; i < 65; ++i) many.push_back({MemberState::kSuspect, i, 0, 7, ""});
  std::vector<std::uint8_t> b;
  MembershipMessage::Make({MembershipType::kSync, 7, 9, 0, kNoNode}, many, signer)->EncodeTo(b);
  CHECK(MembershipMessage::Decode(b, {}).status().message().find("65 updates, over the limit of 64") !=
        std::string::npos);
  many.pop_back();
  b.clear();
  MembershipMessage::Make({MembershipType::kSync, 7, 9, 0, kNoNode}, many, signer)->EncodeTo(b);
  CHECK(MembershipMessage::Decode(b, {}).ok());
}

TEST_CASE("A huge update count is refused before anything is reserved for it") {
  // A 19 + 64 byte message that announces 65535 updates: refused by the count
  // limit, and under a permissive limit by the bytes actually present.
  std::vector<std::uint8_t> b(19 + 64, 0);
  b[0] = 1;
  b[17] = 0xFF;
  b[18] = 0xFF;
  CHECK(MembershipMessage::Decode(b, {}).status().code() == StatusCode::kResourceExhausted);
  MembershipDecodeLimits permissive;
  permissive.max_updates = 1 << 20;
  auto st = MembershipMessage::Decode(b, permissive).status();
  CHECK(st.code() == StatusCode::kDataLoss);
  CHECK(st.message().find("65535 updates but has 0 bytes") != std::string::npos);
}

TEST_CASE("Membership signatures: a forged, altered or unsigned message fails, an honest one passes") {
  KeyDirectory keys;
  for (NodeId n : {7u, 8u}) keys.Add(n, KeyOf(n).public_key());
  Ed25519Signer honest(KeyOf(7));
  Ed25519Signer forger(KeyOf(8));  // node 8 signing as node 7
  MembershipMessage good = Sample(honest);
  CHECK(good.Verify(keys));
  CHECK_FALSE(Sample(forger).Verify(keys));
  MembershipMessage unsigned_msg(good.header(), good.updates(), crypto::Signature{});
  CHECK_FALSE(unsigned_msg.Verify(keys));
  auto altered_updates = good.updates();
  altered_updates[0].incarnation += 1;
  CHECK_FALSE(MembershipMessage(good.header(), altered_updates, good.signature()).Verify(keys));
  auto redirected = good.header();
  redirected.receiver = 10;  // replayed to another member
  CHECK_FALSE(MembershipMessage(redirected, good.updates(), good.signature()).Verify(keys));
  KeyDirectory without_7;
  without_7.Add(8, KeyOf(8).public_key());
  CHECK_FALSE(good.Verify(without_7));
}

TEST_CASE("Lifeguard's suspicion timeout follows its formula from Max down to Min") {
  using std::chrono::seconds;
  // Min = alpha * log10(n) * T' with alpha = 5, n = 100, T' = 1 s: 10 s; Max = 6 * Min.
  const Nanos min = SuspicionMinTimeout(5, 100, seconds(1));
  CHECK(min == seconds(10));
  CHECK(SuspicionMinTimeout(5, 5, seconds(1)) == seconds(5));  // log10 floored at 1 for n < 10
  const Nanos max = 6 * min;
  // max - (max - min) * log(C + 1) / log(K + 1), K = 3: 60, 60 - 50/2 = 35, 60 - 50 * log(3)/log(4), 10.
  CHECK(SuspicionTimeout(min, max, 3, 0) == seconds(60));
  CHECK(SuspicionTimeout(min, max, 3, 1) == seconds(35));
  const double c2 = 60.0 - 50.0 * std::log(3.0) / std::log(4.0);
  CHECK(std::abs(std::chrono::duration<double>(SuspicionTimeout(min, max, 3, 2)).count() - c2) < 1e-6);
  CHECK(SuspicionTimeout(min, max, 3, 3) == seconds(10));
  CHECK(SuspicionTimeout(min, max, 3, 9) == seconds(10));
  CHECK(SuspicionTimeout(min, max, 0, 0) == seconds(10));

  Suspicion s(seconds(100), min, max, 3, /*first_origin=*/4);
  CHECK(s.deadline() == seconds(160));
  CHECK_FALSE(s.Confirm(4));  // the first origin does not confirm its own suspicion
  CHECK(s.Confirm(5));
  CHECK_FALSE(s.Confirm(5));  // nor does anyone twice
  CHECK(s.deadline() == seconds(135));
  CHECK(s.Confirm(6));
  CHECK(s.Confirm(7));
  CHECK_FALSE(s.Confirm(8));  // past K nothing changes
  CHECK(s.confirmations() == 3);
  CHECK(s.deadline() == seconds(110));
}

TEST_CASE("The local health multiplier saturates in [1, S] and scales timeouts") {
  LocalHealth h(8);
  CHECK(h.multiplier() == 1);
  h.Apply(-1);
  CHECK(h.score() == 0);
  h.Apply(3);
  CHECK(h.Scale(std::chrono::milliseconds(500)) == std::chrono::milliseconds(2000));
  h.Apply(100);
  CHECK(h.multiplier() == 8);
  LocalHealth off(1);
  off.Apply(5);
  CHECK(off.multiplier() == 1);
}

TEST_CASE("The broadcast queue sends each update exactly `limit` times, least-sent first") {
  BroadcastQueue q;
  for (NodeId m = 0; m < 5; ++m) q.Enqueue({MemberState::kAlive, m, 1, m, ""});
  std::map<NodeId, int> sent;
  int messages = 0;
  while (!q.empty()) {
    std::vector<MemberUpdate> out;
    q.Take(2, /*limit=*/3, {}, &out);
    CHECK(out.size() <= 2);
    for (const auto& u : out) ++sent[u.member];
    ++messages;
    // Least-sent first: no update gets ahead of another by more than one transmission.
    int lo = 99, hi = 0;
    for (NodeId m = 0; m < 5; ++m) {
      lo = std::min(lo, sent[m]);
      hi = std::max(hi, sent[m]);
    }
    CHECK(hi - lo <= 1);
  }
  for (NodeId m = 0; m < 5; ++m) CHECK(sent[m] == 3);
  CHECK(messages == 8);  // 15 transmissions, 2 per message

  // A newer update about a member replaces the queued one, and `exclude` is honoured.
  q.Enqueue({MemberState::kAlive, 1, 1, 1, ""});
  q.Enqueue({MemberState::kSuspect, 1, 1, 2, ""});
  q.Enqueue({MemberState::kAlive, 2, 1, 2, ""});
  std::vector<MemberUpdate> out;
  q.Take(5, 3, {2}, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].state == MemberState::kSuspect);
}

}  // namespace
}  // namespace murmur::membership
