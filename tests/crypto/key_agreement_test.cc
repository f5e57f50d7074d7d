// Key agreement for secure aggregation: X25519 against RFC 7748 section 6.1,
// the seed derivation against BLAKE2b-256 computed independently (Python's
// hashlib.blake2b over the same bytes), and the share encryption against
// ChaCha20-Poly1305 from an independent implementation (Python cryptography).
#include <doctest/doctest.h>

#include "crypto/key_agreement.h"

namespace murmur::crypto {
namespace {

DhKeyPair Pair(std::string_view secret_hex) {
  auto s = FromHexFixed<32>(secret_hex, "secret");
  REQUIRE(s.ok());
  return DhKeyPairFromSecret(*s);
}

TEST_CASE("X25519 key pairs and agreement match RFC 7748 section 6.1, the seed is symmetric") {
  DhKeyPair alice = Pair("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  DhKeyPair bob = Pair("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
  CHECK(ToHex(alice.public_key) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
  CHECK(ToHex(bob.public_key) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
  auto a = AgreeSeed(alice, bob.public_key, 7, kMaskSeedLabel);
  auto b = AgreeSeed(bob, alice.public_key, 7, kMaskSeedLabel);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // blake2b(label + shared 4a5d9d5b...1742 + min pk + max pk + u64le(7), digest_size=32)
  CHECK(ToHex(*a) == "4dd8560f2cc6defe5f743da5d18e34dba8e64093269c6bd0d7e9b9d480a4bf0b");
  CHECK(*a == *b);
  auto other_round = AgreeSeed(alice, bob.public_key, 8, kMaskSeedLabel);
  auto other_label = AgreeSeed(alice, bob.public_key, 7, kShareKeyLabel);
  CHECK(*other_round != *a);
  CHECK(*other_label != *a);
}

TEST_CASE("A low-order peer key is refused") {
  DhKeyPair alice = Pair("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  auto r = AgreeSeed(alice, DhPublicKey{}, 1, kMaskSeedLabel);  // the point 0 has order 4
  CHECK_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Sealed shares are ChaCha20-Poly1305 with nonce (from, to, 0) and the round as data") {
  MaskSeed key{};
  for (int i = 0; i < 32; ++i) key[i] = static_cast<std::uint8_t>(i);
  Bytes sealed = SealShares(key, 3, 9, 7, AsBytes("shares"));
  CHECK(ToHex(sealed) == "6335b3504fdffcc707f7c91acdf99c6ac58517ec745c");
  auto opened = OpenShares(key, 3, 9, 7, sealed);
  REQUIRE(opened.ok());
  CHECK(std::string(opened->begin(), opened->end()) == "shares");
  CHECK_FALSE(OpenShares(key, 9, 3, 7, sealed).ok());  // other direction
  CHECK_FALSE(OpenShares(key, 3, 9, 8, sealed).ok());  // other round
  sealed[0] ^= 1;
  auto bad = OpenShares(key, 3, 9, 7, sealed);
  CHECK(bad.status().code() == StatusCode::kUnauthenticated);
  CHECK_FALSE(OpenShares(key, 3, 9, 7, Bytes(5)).ok());
}

}  // namespace
}  // namespace murmur::crypto
