// murmur's certificate-carrying Noise XX handshake: success, determinism with
// injected keys, and each rejection the issue lists (wrong network, forged or
// expired certificate, unsigned static key, missing role).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "crypto/handshake.h"
#include "tests/crypto/aes_here.h"

namespace murmur::crypto {
namespace {

constexpr std::int64_t kNow = 1'700'000'000;

Identity Seeded(std::uint8_t b) {
  std::array<std::uint8_t, 32> seed{};
  seed.fill(b);
  return Identity::FromSeed(seed);
}

DhKeyPair Dh(std::uint8_t b) {
  std::array<std::uint8_t, 32> secret{};
  secret.fill(b);
  return DhKeyPair::FromSecret(secret);
}

Certificate Cert(const Identity& coordinator, const Identity& node, std::string network,
                 std::uint8_t roles = kRoleNode, std::int64_t not_after = kNow + 86400) {
  Certificate c;
  c.node_key = node.public_key();
  if (roles & (kRoleNode | kRoleAggregator)) c.node_id = node.public_key()[0];
  c.network_id = std::move(network);
  c.roles = roles;
  c.serial = node.public_key()[0];
  c.not_before = kNow - 60;
  c.not_after = not_after;
  REQUIRE(SignCertificate(coordinator, &c).ok());
  return c;
}

Credentials Creds(const Identity& coordinator, std::uint8_t who, std::string network = "fleet",
                  std::uint8_t roles = kRoleNode, std::int64_t not_after = kNow + 86400) {
  Identity id = Seeded(who);
  auto c = Credentials::Make(id, Cert(coordinator, id, std::move(network), roles, not_after), Dh(who));
  REQUIRE(c.ok());
  return *c;
}

TrustPolicy Policy(const Identity& coordinator, std::string network = "fleet") {
  return TrustPolicy{std::move(network), coordinator.public_key(), kRoleNode};
}

struct Outcome {
  Status status;      // the first failure, or OK
  int failed_at = 0;  // 1-based message number whose reading failed
  Bytes msg2;         // what the responder sent in message 2
};

Outcome Run(SecureHandshake& init, SecureHandshake& resp) {
  Outcome out;
  for (int i = 0; i < 3; ++i) {
    SecureHandshake& w = i % 2 == 0 ? init : resp;
    SecureHandshake& r = i % 2 == 0 ? resp : init;
    Bytes msg;
    Status s = w.WriteMessage(&msg);
    if (!s.ok()) {
      out.status = s;
      out.failed_at = -(i + 1);
      return out;
    }
    if (i == 1) out.msg2 = msg;
    s = r.ReadMessage(msg);
    if (!s.ok()) {
      out.status = s;
      out.failed_at = i + 1;
      return out;
    }
  }
  return out;
}

TEST_CASE("two certified nodes complete the handshake and talk over the channel") {
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1), b = Creds(coord, 2);
  SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow);
  Outcome o = Run(init, resp);
  REQUIRE(o.status.ok());
  REQUIRE(init.IsComplete());
  REQUIRE(resp.IsComplete());
  CHECK(init.peer().certificate.node_key == b.identity.public_key());
  CHECK(resp.peer().certificate.node_key == a.identity.public_key());
  CHECK(init.peer().static_key == b.static_key.public_key);
  CHECK(init.peer().handshake_hash == resp.peer().handshake_hash);
  // Message 2 is e (32) || enc(s) (48) || enc(payload) (1 + 2 + cert + 64 + 16).
  CHECK(o.msg2.size() == 32 + 48 + 3 + EncodeCertificate(b.certificate).size() + 64 + 16);
  // The certificate travels encrypted: the node key does not appear in message 2.
  const auto& key = b.identity.public_key();
  CHECK(std::search(o.msg2.begin(), o.msg2.end(), key.begin(), key.end()) == o.msg2.end());

  SecureChannel ca = init.MakeChannel(), cb = resp.MakeChannel();
  Bytes ct, pt;
  REQUIRE(ca.Seal(AsBytes("model update"), &ct).ok());
  REQUIRE(cb.Open(ct, &pt).ok());
  CHECK(std::string(pt.begin(), pt.end()) == "model update");
  ct.clear();
  pt.clear();
  REQUIRE(cb.Seal(AsBytes("ack"), &ct).ok());
  REQUIRE(ca.Open(ct, &pt).ok());
  CHECK(std::string(pt.begin(), pt.end()) == "ack");
}

TEST_CASE("with injected keys the handshake is deterministic") {
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1), b = Creds(coord, 2);
  Bytes first[3], second[3];
  for (Bytes* out : {first, second}) {
    SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord), kNow, Dh(11));
    SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow, Dh(12));
    for (int i = 0; i < 3; ++i) {
      SecureHandshake& w = i % 2 == 0 ? init : resp;
      SecureHandshake& r = i % 2 == 0 ? resp : init;
      REQUIRE(w.WriteMessage(&out[i]).ok());
      REQUIRE(r.ReadMessage(out[i]).ok());
    }
  }
  for (int i = 0; i < 3; ++i) CHECK(first[i] == second[i]);
  const DhPublicKey e = Dh(11).public_key;
  // Message 1 is e, then the cipher offer (AESGCM, ChaChaPoly) where this CPU runs AES-GCM.
  Bytes m1(e.begin(), e.end());
  if (AesGcmAvailable()) m1.insert(m1.end(), {1, 2, 2, 1});
  CHECK(first[0] == m1);
}

TEST_CASE("a peer of another network fails at message 2 and learns nothing") {
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1, "other"), b = Creds(coord, 2);
  SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord, "other"), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 2);  // the prologues differ, so the initiator cannot decrypt the responder's s
  CHECK(o.status.code() == StatusCode::kUnauthenticated);
  // The error names the network this side speaks, the likely cause.
  CHECK_MESSAGE(
      o.status.message().find("handshake message 2 does not authenticate: the peer is not in network "
                              "'other'") != std::string::npos,
      o.status.ToString());
  CHECK_FALSE(init.IsMyTurn());
  Bytes msg;
  CHECK(init.WriteMessage(&msg).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("a certificate for another network is refused by name") {
  Identity coord = Seeded(100);
  // The initiator speaks the right prologue but holds a certificate for another network.
  Identity id = Seeded(1);
  Certificate other_net = Cert(coord, id, "other");
  Credentials a{id, other_net, Dh(1), id.Sign(StaticKeyBindingBytes("fleet", Dh(1).public_key))};
  Credentials b = Creds(coord, 2);
  SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 3);
  CHECK(o.status.code() == StatusCode::kPermissionDenied);
  CHECK(o.status.message().find("network 'other'") != std::string::npos);
  CHECK_FALSE(resp.IsComplete());
}

TEST_CASE("a forged certificate is refused, and the initiator then keeps its own identity") {
  Identity coord = Seeded(100), rogue = Seeded(66);
  Credentials a = Creds(coord, 1);
  Credentials forged_by_rogue = Creds(rogue, 2);  // signed by a key that is not the coordinator's
  SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, forged_by_rogue, Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 2);
  CHECK(o.status.message().find("bad signature") != std::string::npos);
  // The initiator never sends message 3, so its certificate never leaves it.
  CHECK_FALSE(init.IsMyTurn());

  // A certificate altered after signing (roles widened).
  Credentials tampered = Creds(coord, 3);
  tampered.certificate.roles |= kRoleOperator;
  SecureHandshake init2(HandshakeRole::kInitiator, tampered, Policy(coord), kNow);
  SecureHandshake resp2(HandshakeRole::kResponder, Creds(coord, 4), Policy(coord), kNow);
  Outcome o2 = Run(init2, resp2);
  CHECK(o2.failed_at == 3);
  CHECK(o2.status.code() == StatusCode::kUnauthenticated);
}

TEST_CASE("an expired or not-yet-valid certificate is refused") {
  Identity coord = Seeded(100);
  Credentials expired = Creds(coord, 1, "fleet", kRoleNode, kNow - 1);
  SecureHandshake init(HandshakeRole::kInitiator, expired, Policy(coord), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 3);
  CHECK(o.status.message().find("expired") != std::string::npos);

  // The same certificates checked by a responder whose clock is before not_before.
  SecureHandshake init2(HandshakeRole::kInitiator, Creds(coord, 3), Policy(coord), kNow - 3600);
  SecureHandshake resp2(HandshakeRole::kResponder, Creds(coord, 4), Policy(coord), kNow);
  Outcome o2 = Run(init2, resp2);
  CHECK(o2.failed_at == 2);
  CHECK(o2.status.message().find("not yet valid") != std::string::npos);
}

TEST_CASE("a static key not signed by the certified identity is refused") {
  Identity coord = Seeded(100);
  Credentials stolen = Creds(coord, 1);
  // Someone replays node 1's certificate and binding signature with their own X25519 key.
  stolen.static_key = Dh(77);
  SecureHandshake init(HandshakeRole::kInitiator, stolen, Policy(coord), kNow);
  SecureHandshake resp(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 3);
  CHECK(o.status.code() == StatusCode::kUnauthenticated);
  CHECK(o.status.message().find("static key") != std::string::npos);
}

TEST_CASE("a missing role is refused and Credentials::Make checks the key") {
  Identity coord = Seeded(100);
  TrustPolicy needs_aggregator = Policy(coord);
  needs_aggregator.required_roles = kRoleAggregator;
  SecureHandshake init(HandshakeRole::kInitiator, Creds(coord, 1), needs_aggregator, kNow);
  SecureHandshake resp(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  Outcome o = Run(init, resp);
  CHECK(o.failed_at == 2);
  CHECK(o.status.code() == StatusCode::kPermissionDenied);

  Identity id = Seeded(1);
  CHECK(Credentials::Make(Seeded(2), Cert(coord, id, "fleet")).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("handshake payloads decode only in their exact form") {
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1);
  Bytes good = EncodeHandshakePayload({a.certificate, a.static_key_signature});
  auto back = DecodeHandshakePayload(good);
  REQUIRE(back.ok());
  CHECK(back->certificate == a.certificate);
  for (std::size_t n = 0; n < good.size(); ++n)
    CHECK_FALSE(DecodeHandshakePayload(ByteSpan(good).first(n)).ok());
  Bytes b = good;
  b[0] = 2;
  CHECK(DecodeHandshakePayload(b).status().message().find("version") != std::string::npos);
  b = good;
  b[1] = 0xff;
  b[2] = 0xff;
  CHECK(DecodeHandshakePayload(b).status().code() == StatusCode::kDataLoss);
  b = good;
  b.push_back(0);
  CHECK(DecodeHandshakePayload(b).status().code() == StatusCode::kDataLoss);
  // Message 1 carries a cipher offer or nothing: a responder refuses other bytes there.
  SecureHandshake resp(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  Bytes m1(32 + 5, 0x42);
  CHECK(resp.ReadMessage(m1).code() == StatusCode::kInvalidArgument);
}

// Cipher negotiation (crypto/handshake.h): which cipher two policies agree
// on, what an attacker who edits the offer gets, and what an initiator
// written against plain Noise (HandshakeState with a chosen protocol name)
// meets.

using testing::AesGcmRunsHere;

TrustPolicy ChaChaOnly(const Identity& coordinator) {
  TrustPolicy p = Policy(coordinator);
  p.allow_aes_gcm = false;
  return p;
}

// Runs the handshake with `edit` applied to message 1 on the wire.
Outcome RunEdited(SecureHandshake& init, SecureHandshake& resp, const std::function<void(Bytes*)>& edit) {
  Outcome out;
  Bytes msg;
  REQUIRE(init.WriteMessage(&msg).ok());
  edit(&msg);
  for (int i = 0; i < 3; ++i) {
    SecureHandshake& r = i % 2 == 0 ? resp : init;
    if (i > 0) {
      SecureHandshake& w = i % 2 == 0 ? init : resp;
      REQUIRE(w.WriteMessage(&msg).ok());
    }
    if (Status s = r.ReadMessage(msg); !s.ok()) {
      out.status = s;
      out.failed_at = i + 1;
      return out;
    }
  }
  return out;
}

TEST_CASE("AES-GCM where both sides may run it, ChaCha20-Poly1305 where either may not, and channels agree") {
  if (!AesGcmRunsHere()) return;
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1), b = Creds(coord, 2);
  struct Case {
    bool init_aes, resp_aes;
    Cipher expected;
  };
  for (Case c : {Case{true, true, Cipher::kAesGcm}, Case{true, false, Cipher::kChaChaPoly},
                 Case{false, true, Cipher::kChaChaPoly}, Case{false, false, Cipher::kChaChaPoly}}) {
    CAPTURE(c.init_aes);
    CAPTURE(c.resp_aes);
    SecureHandshake init(HandshakeRole::kInitiator, a, c.init_aes ? Policy(coord) : ChaChaOnly(coord), kNow);
    SecureHandshake resp(HandshakeRole::kResponder, b, c.resp_aes ? Policy(coord) : ChaChaOnly(coord), kNow);
    Bytes m1;
    Outcome o = RunEdited(init, resp, [&](Bytes* m) { m1 = *m; });
    REQUIRE(o.status.ok());
    // Message 1: e, then the offer, or nothing when it is ChaChaPoly alone (as before the offer).
    CHECK(m1.size() == (c.init_aes ? 32u + 4u : 32u));
    if (c.init_aes) CHECK(Bytes(m1.begin() + 32, m1.end()) == Bytes{1, 2, 2, 1});
    CHECK(init.peer().cipher == c.expected);
    CHECK(resp.peer().cipher == c.expected);
    CHECK(init.peer().handshake_hash == resp.peer().handshake_hash);
    SecureChannel ca = init.MakeChannel(), cb = resp.MakeChannel();
    CHECK(ca.cipher() == c.expected);
    Bytes ct, pt;
    REQUIRE(ca.Seal(AsBytes("model update"), &ct).ok());
    REQUIRE(cb.Open(ct, &pt).ok());
    CHECK(std::string(pt.begin(), pt.end()) == "model update");
  }
}

TEST_CASE(
    "an attacker who edits the cipher offer to force ChaCha20-Poly1305 fails the handshake at message 2") {
  if (!AesGcmRunsHere()) return;
  Identity coord = Seeded(100);
  Credentials a = Creds(coord, 1), b = Creds(coord, 2);
  const std::vector<std::pair<const char*, std::function<void(Bytes*)>>> edits = {
      {"offer stripped (as an initiator without AES)", [](Bytes* m) { m->resize(32); }},
      {"offer of ChaChaPoly alone",
       [](Bytes* m) {
         *m = Bytes(m->begin(), m->begin() + 32), m->insert(m->end(), {1, 1, 1});
       }},
      {"AESGCM replaced by an unknown id", [](Bytes* m) { (*m)[34] = 9; }},
      {"offer reordered", [](Bytes* m) { std::swap((*m)[34], (*m)[35]); }},
  };
  for (const auto& [what, edit] : edits) {
    CAPTURE(what);
    SecureHandshake init(HandshakeRole::kInitiator, a, Policy(coord), kNow);
    SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow);
    Outcome o = RunEdited(init, resp, edit);
    // The responder answers (its pick is ChaChaPoly, or AESGCM over an edited offer);
    // no candidate of the initiator's hashed the edited offer, so none authenticates.
    CHECK(o.failed_at == 2);
    CHECK(o.status.code() == StatusCode::kUnauthenticated);
    CHECK_FALSE(init.IsComplete());
  }
}

TEST_CASE(
    "plain Noise initiators: an empty payload or an offer with unknown ids gets ChaChaPoly, AESGCM alone "
    "gets AESGCM") {
  if (!AesGcmRunsHere()) return;
  Identity coord = Seeded(100);
  Credentials b = Creds(coord, 2);
  const Bytes prologue = MakePrologue("fleet");
  struct Case {
    Bytes offer;
    Cipher cipher;  // the protocol name the plain initiator runs
  };
  for (const Case& c : {Case{{}, Cipher::kChaChaPoly}, Case{{1, 3, 7, 1, 200}, Cipher::kChaChaPoly},
                        Case{{1, 1, 2}, Cipher::kAesGcm}}) {
    CAPTURE(c.offer.size());
    HandshakeState plain(HandshakeRole::kInitiator, prologue, Dh(1), std::nullopt, c.cipher);
    SecureHandshake resp(HandshakeRole::kResponder, b, Policy(coord), kNow);
    Bytes m1, m2, payload;
    REQUIRE(plain.WriteMessage(c.offer, &m1).ok());
    REQUIRE(resp.ReadMessage(m1).ok());
    REQUIRE(resp.WriteMessage(&m2).ok());
    REQUIRE(plain.ReadMessage(m2, &payload).ok());  // authenticates under the initiator's protocol name
    auto creds = DecodeHandshakePayload(payload);
    REQUIRE(creds.ok());
    CHECK(creds->certificate == b.certificate);
  }
}

TEST_CASE(
    "cipher offers decode only in their exact form, and an offer without a known cipher is refused by name") {
  CHECK(*DecodeCipherOffer({}) == std::vector<Cipher>{Cipher::kChaChaPoly});
  CHECK(*DecodeCipherOffer(Bytes{1, 2, 2, 1}) == std::vector<Cipher>{Cipher::kAesGcm, Cipher::kChaChaPoly});
  CHECK(EncodeCipherOffer({Cipher::kChaChaPoly}).empty());
  CHECK(EncodeCipherOffer({Cipher::kAesGcm, Cipher::kChaChaPoly}) == Bytes{1, 2, 2, 1});
  CHECK(DecodeCipherOffer(Bytes{1}).status().code() == StatusCode::kDataLoss);
  CHECK(DecodeCipherOffer(Bytes{2, 1, 1}).status().message().find("version 2") != std::string::npos);
  CHECK(DecodeCipherOffer(Bytes{1, 0}).status().code() == StatusCode::kInvalidArgument);
  CHECK(DecodeCipherOffer(Bytes{1, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1}).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(DecodeCipherOffer(Bytes{1, 2, 1}).status().code() == StatusCode::kDataLoss);
  CHECK(DecodeCipherOffer(Bytes{1, 1, 1, 1}).status().code() == StatusCode::kDataLoss);
  Identity coord = Seeded(100);
  CHECK(PickCipher({}, Policy(coord)).status().message().find("no cipher in common") != std::string::npos);
  CHECK(*PickCipher({Cipher::kAesGcm, Cipher::kChaChaPoly}, ChaChaOnly(coord)) == Cipher::kChaChaPoly);
  CHECK_FALSE(PickCipher({Cipher::kAesGcm}, ChaChaOnly(coord)).ok());
  // A responder meeting an offer of unknown ciphers alone says so and ends the handshake.
  SecureHandshake resp(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  Bytes m1(32, 0x42);
  m1.insert(m1.end(), {1, 1, 77});
  Status s = resp.ReadMessage(m1);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("no cipher in common") != std::string::npos);
  CHECK(resp.failed());
  SecureHandshake short_one(HandshakeRole::kResponder, Creds(coord, 2), Policy(coord), kNow);
  CHECK(short_one.ReadMessage(Bytes(31, 1)).code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace murmur::crypto
