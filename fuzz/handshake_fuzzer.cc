// Fuzzes the parsers of the handshake: certificates (binary and text), the
// credentials payload, and each handshake message as read by the side that
// receives it, after a genuine run up to that point with fixed keys. Any input
// must give a value or a Status; what decodes must re-encode to the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crypto/handshake.h"

namespace {

using namespace murmur::crypto;

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

struct Fixture {
  Identity coordinator = Seeded(100);
  Credentials a = Make(1), b = Make(2);
  TrustPolicy policy{"fleet", coordinator.public_key(), kRoleNode};

  Credentials Make(std::uint8_t who) {
    Identity id = Seeded(who);
    Certificate c;
    c.node_key = id.public_key();
    c.node_id = who;
    c.network_id = "fleet";
    c.roles = kRoleNode;
    c.serial = who;
    c.not_before = kNow - 60;
    c.not_after = kNow + 86400;
    if (!SignCertificate(coordinator, &c).ok()) std::abort();
    auto creds = Credentials::Make(id, c, Dh(who));
    if (!creds.ok()) std::abort();
    return *creds;
  }
};

const Fixture& F() {
  static const Fixture* f = new Fixture();
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 6;
  ByteSpan in(data + 1, size - 1);
  if (mode == 0) {
    auto cert = DecodeCertificate(in);
    if (cert.ok() && EncodeCertificate(*cert) != Bytes(in.begin(), in.end())) std::abort();
    return 0;
  }
  if (mode == 1) {
    auto cert = ParseCertificateText(std::string_view(reinterpret_cast<const char*>(in.data()), in.size()));
    if (cert.ok()) (void)VerifyCertificate(*cert, F().coordinator.public_key(), "fleet", kNow);
    return 0;
  }
  if (mode == 2) {
    auto p = DecodeHandshakePayload(in);
    if (p.ok() && EncodeHandshakePayload(*p) != Bytes(in.begin(), in.end())) std::abort();
    return 0;
  }
  // Modes 3..5: the fuzz input replaces handshake message 1, 2 or 3.
  const int target = mode - 2;
  SecureHandshake init(HandshakeRole::kInitiator, F().a, F().policy, kNow, Dh(11));
  SecureHandshake resp(HandshakeRole::kResponder, F().b, F().policy, kNow, Dh(12));
  for (int i = 1; i <= 3; ++i) {
    SecureHandshake& w = i % 2 == 1 ? init : resp;
    SecureHandshake& r = i % 2 == 1 ? resp : init;
    Bytes msg;
    if (!w.WriteMessage(&msg).ok()) {
      // Once fuzzed input was accepted, writing may legitimately fail: an
      // all-zero or other low-order ephemeral key passes message 1 and makes
      // the responder's DH fail when it writes message 2 (a Status, not a crash).
      if (i > target) return 0;
      std::abort();
    }
    if (i == target) {
      if (!r.ReadMessage(in).ok()) return 0;
      // Accepted input: the handshake continues normally from here.
      continue;
    }
    if (!r.ReadMessage(msg).ok()) return 0;
  }
  return 0;
}
