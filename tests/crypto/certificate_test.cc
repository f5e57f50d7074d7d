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

Certificate MakeCert(const Identity& coordinator, const Identity& node,
                     std::uint8_t version = kCertificateVersion) {
  Certificate c;
  c.version = version;
  c.node_key = node.public_key();
  if (version == kCertificateVersion) c.node_id = 0x0A0B0C0D;
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
  REQUIRE(b.size() == 67 + 7 + 64);
  std::string hex = ToHex(b);
  CHECK(hex.substr(0, 10) == "4d43525402");                 // "MCRT", version 2
  CHECK(hex.substr(10, 64) == node.PublicKeyHex());         // node key
  CHECK(hex.substr(74, 8) == "0d0c0b0a");                   // node id, little-endian
  CHECK(hex.substr(82, 2) == "03");                         // roles node|aggregator
  CHECK(hex.substr(84, 16) == "8877665544332211");          // serial, little-endian
  CHECK(hex.substr(100, 16) == "e803000000000000");         // not_before 1000
  CHECK(hex.substr(116, 16) == "d007000000000000");         // not_after 2000
  CHECK(hex.substr(132, 2) == "07");                        // network id length
  CHECK(hex.substr(134, 14) == ToHex(AsBytes("fleet-7")));  // network id
  // The signature is plain Ed25519 over everything before it, the node id included.
  CHECK(VerifySignature(coord.public_key(), ByteSpan(b).first(b.size() - 64), c.signature));
  auto back = DecodeCertificate(b);
  REQUIRE(back.ok());
  CHECK(*back == c);
  auto text = ParseCertificateText(CertificateText(c));
  REQUIRE(text.ok());
  CHECK(*text == c);
  // Another node id under the same signature is a forgery.
  Certificate claimed = c;
  claimed.node_id = 3;
  CHECK(VerifyCertificate(claimed, coord.public_key(), "fleet-7", 1500).message().find("bad signature") !=
        std::string::npos);
}

TEST_CASE("a version 1 certificate (no node id) still decodes, byte for byte as before") {
  Identity coord = Seeded(1), node = Seeded(2);
  Certificate c = MakeCert(coord, node, kLegacyCertificateVersion);
  Bytes b = EncodeCertificate(c);
  REQUIRE(b.size() == 63 + 7 + 64);
  std::string hex = ToHex(b);
  CHECK(hex.substr(0, 10) == "4d43525401");
  CHECK(hex.substr(10, 64) == node.PublicKeyHex());
  CHECK(hex.substr(74, 2) == "03");
  CHECK(hex.substr(76, 16) == "8877665544332211");
  CHECK(hex.substr(124, 2) == "07");
  auto back = DecodeCertificate(b);
  REQUIRE(back.ok());
  CHECK(*back == c);
  CHECK_FALSE(back->BindsNodeId());
  CHECK(VerifyCertificate(*back, coord.public_key(), "fleet-7", 1500).ok());
  // A version 1 certificate cannot carry one; a version 2 node certificate must.
  Certificate bad = c;
  bad.node_id = 4;
  CHECK(SignCertificate(coord, &bad).message().find("cannot carry a node id") != std::string::npos);
  Certificate unbound;
  unbound.network_id = "fleet-7";
  unbound.roles = kRoleNode;
  unbound.not_after = 1;
  CHECK(SignCertificate(coord, &unbound).message().find("carries no node id") != std::string::npos);
  unbound.roles = kRoleOperator;  // an operator's needs none
  CHECK(SignCertificate(coord, &unbound).ok());
}

TEST_CASE("VerifyNodeBinding takes the certified id only, and a legacy certificate only under a pinned key") {
  Identity coord = Seeded(1), node = Seeded(2), other = Seeded(3);
  const Certificate c = MakeCert(coord, node);
  bool legacy = true;
  CHECK(VerifyNodeBinding(c, 0x0A0B0C0D, std::nullopt, &legacy).ok());
  CHECK_FALSE(legacy);
  Status takeover = VerifyNodeBinding(c, 3, std::nullopt);
  CHECK(takeover.code() == StatusCode::kPermissionDenied);
  CHECK(takeover.message().find("is for node 168496141, not node 3") != std::string::npos);
  CHECK(VerifyNodeBinding(c, 0x0A0B0C0D, other.public_key()).code() == StatusCode::kPermissionDenied);

  const Certificate old = MakeCert(coord, node, kLegacyCertificateVersion);
  Status unpinned = VerifyNodeBinding(old, 3, std::nullopt);
  CHECK(unpinned.code() == StatusCode::kPermissionDenied);
  CHECK(unpinned.message().find("murmur cert issue --node-id 3") != std::string::npos);
  CHECK(VerifyNodeBinding(old, 3, node.public_key(), &legacy).ok());
  CHECK(legacy);
  CHECK(VerifyNodeBinding(old, 3, other.public_key()).code() == StatusCode::kPermissionDenied);
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
  b[4] = 3;
  CHECK(DecodeCertificate(b).status().message().find("version") != std::string::npos);
  b = good;
  b[4] = 1;  // a version 2 encoding read as version 1 does not add up
  CHECK_FALSE(DecodeCertificate(b).ok());
  b = good;
  b[41] = 0x08;  // unknown role bit
  CHECK(DecodeCertificate(b).status().message().find("role") != std::string::npos);
  b = good;
  for (int i = 0; i < 4; ++i) b[37 + i] = 0xFF;  // a node certificate without a node id
  CHECK(DecodeCertificate(b).status().message().find("carries no node id") != std::string::npos);
  b = good;
  b[66] = 6;  // network id length disagrees with the size
  CHECK(DecodeCertificate(b).status().code() == StatusCode::kDataLoss);
  b = good;
  b[67] = ' ';  // a character outside the network id alphabet
  CHECK(DecodeCertificate(b).status().code() == StatusCode::kInvalidArgument);
  b = good;
  for (int i = 0; i < 8; ++i) b[58 + i] = 0;  // not_after 0 < not_before
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
