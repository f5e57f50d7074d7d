// Certificates: the canonical encoding byte by byte, signing, and each
// failure VerifyCertificate names.
#include <doctest/doctest.h>

#include <string>

#include "crypto/certificate.h"

namespace murmur::crypto {
namespace {

Identity Seeded(std::uint8_t b) {
  std::array<std::uint8_t, 32> seed{};
  seed.fill(b);
  return Identity::FromSeed(seed);
}

Certificate MakeCert(const Identity& coordinator, const Identity& node) {
  Certificate c;
  c.node_key = node.public_key();
  c.network_id = "fleet-7";
  c.roles = kRoleNode | kRoleAggregator;
  c.serial = 0x1122334455667788ULL;
  c.not_before = 1000;
  c.not_after = 2000;
  REQUIRE(SignCertificate(coordinator, &c).ok());
  return c;
}

TEST_CASE("the certificate encoding is the documented byte layout") {
  Identity coord = Seeded(1), node = Seeded(2);
  Certificate c = MakeCert(coord, node);
  Bytes b = EncodeCertificate(c);
  REQUIRE(b.size() == 63 + 7 + 64);
  std::string hex = ToHex(b);
  CHECK(hex.substr(0, 10) == "4d43525401");                 // "MCRT", version 1
  CHECK(hex.substr(10, 64) == node.PublicKeyHex());         // node key
  CHECK(hex.substr(74, 2) == "03");                         // roles node|aggregator
  CHECK(hex.substr(76, 16) == "8877665544332211");          // serial, little-endian
  CHECK(hex.substr(92, 16) == "e803000000000000");          // not_before 1000
  CHECK(hex.substr(108, 16) == "d007000000000000");         // not_after 2000
  CHECK(hex.substr(124, 2) == "07");                        // network id length
  CHECK(hex.substr(126, 14) == ToHex(AsBytes("fleet-7")));  // network id
  // The signature is plain Ed25519 over everything before it.
  CHECK(VerifySignature(coord.public_key(), ByteSpan(b).first(b.size() - 64), c.signature));
  auto back = DecodeCertificate(b);
  REQUIRE(back.ok());
  CHECK(*back == c);
  auto text = ParseCertificateText(CertificateText(c));
  REQUIRE(text.ok());
  CHECK(*text == c);
}

TEST_CASE("VerifyCertificate accepts a good certificate and names each failure") {
  Identity coord = Seeded(1), node = Seeded(2), other = Seeded(3);
  Certificate c = MakeCert(coord, node);
  CHECK(VerifyCertificate(c, coord.public_key(), "fleet-7", 1500).ok());
  CHECK(VerifyCertificate(c, coord.public_key(), "fleet-7", 1000).ok());  // not_before inclusive

  Status wrong_net = VerifyCertificate(c, coord.public_key(), "fleet-8", 1500);
  CHECK(wrong_net.code() == StatusCode::kPermissionDenied);
  CHECK(wrong_net.message().find("for network 'fleet-7', expected 'fleet-8'") != std::string::npos);

  Status expired = VerifyCertificate(c, coord.public_key(), "fleet-7", 2000);  // not_after exclusive
  CHECK(expired.code() == StatusCode::kUnauthenticated);
  CHECK(expired.message().find("expired") != std::string::npos);

  Status early = VerifyCertificate(c, coord.public_key(), "fleet-7", 999);
  CHECK(early.code() == StatusCode::kUnauthenticated);
  CHECK(early.message().find("not yet valid") != std::string::npos);

  Status wrong_key = VerifyCertificate(c, other.public_key(), "fleet-7", 1500);
  CHECK(wrong_key.code() == StatusCode::kUnauthenticated);
  CHECK(wrong_key.message().find("bad signature") != std::string::npos);

  // A forged certificate: any signed field changed after signing.
  Certificate forged = c;
  forged.roles |= kRoleOperator;
  CHECK(VerifyCertificate(forged, coord.public_key(), "fleet-7", 1500).message().find("bad signature") !=
        std::string::npos);
  forged = c;
  forged.not_after = 1LL << 40;
  CHECK(VerifyCertificate(forged, coord.public_key(), "fleet-7", 1500).code() ==
        StatusCode::kUnauthenticated);
  // Signed by the node itself instead of the coordinator.
  Certificate self_signed = c;
  REQUIRE(SignCertificate(node, &self_signed).ok());
  CHECK(VerifyCertificate(self_signed, coord.public_key(), "fleet-7", 1500).code() ==
        StatusCode::kUnauthenticated);

  Certificate malformed = c;
  malformed.network_id = "bad id";
  CHECK(VerifyCertificate(malformed, coord.public_key(), "bad id", 1500).message().find("malformed") !=
        std::string::npos);
}

TEST_CASE("DecodeCertificate rejects every malformed encoding with a Status") {
  Certificate c = MakeCert(Seeded(1), Seeded(2));
  const Bytes good = EncodeCertificate(c);
  for (std::size_t n = 0; n < good.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(DecodeCertificate(ByteSpan(good).first(n)).ok());
  }
  Bytes longer = good;
  longer.push_back(0);
  CHECK(DecodeCertificate(longer).status().code() == StatusCode::kDataLoss);
  Bytes b = good;
  b[0] = 'X';
  CHECK(DecodeCertificate(b).status().message().find("magic") != std::string::npos);
  b = good;
  b[4] = 2;
  CHECK(DecodeCertificate(b).status().message().find("version") != std::string::npos);
  b = good;
  b[37] = 0x08;  // unknown role bit
  CHECK(DecodeCertificate(b).status().message().find("role") != std::string::npos);
  b = good;
  b[62] = 6;  // network id length disagrees with the size
  CHECK(DecodeCertificate(b).status().code() == StatusCode::kDataLoss);
  b = good;
  b[63] = ' ';  // a character outside the network id alphabet
  CHECK(DecodeCertificate(b).status().code() == StatusCode::kInvalidArgument);
  b = good;
  for (int i = 0; i < 8; ++i) b[54 + i] = 0;  // not_after 0 < not_before
  CHECK(DecodeCertificate(b).status().message().find("window") != std::string::npos);
  CHECK(DecodeCertificate(Bytes(100000, 0)).status().code() == StatusCode::kDataLoss);
  CHECK_FALSE(ParseCertificateText("murmur-certificate v1\nzz\n").ok());
  CHECK_FALSE(ParseCertificateText("hello\n").ok());
}

TEST_CASE("roles parse and print") {
  CHECK(*ParseRoles("node,aggregator") == (kRoleNode | kRoleAggregator));
  CHECK(*ParseRoles("operator") == kRoleOperator);
  CHECK(RolesToString(kAllRoles) == "node,aggregator,operator");
  CHECK(ParseRoles("node,admin").status().message().find("'admin'") != std::string::npos);
  CHECK_FALSE(ParseRoles("").ok());
  Certificate c;
  c.roles = kRoleNode;
  CHECK(c.HasRoles(kRoleNode));
  CHECK_FALSE(c.HasRoles(kRoleNode | kRoleAggregator));
  CHECK(ValidateNetworkId(std::string(64, 'a')).ok());
  CHECK_FALSE(ValidateNetworkId(std::string(65, 'a')).ok());
  CHECK_FALSE(ValidateNetworkId("").ok());
}

}  // namespace
}  // namespace murmur::crypto
