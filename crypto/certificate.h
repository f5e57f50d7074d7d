// Certificate: the coordinator's signed statement that a node key belongs to
// a network, with roles and a validity window.
//
// Canonical encoding (little-endian; docs/protocol.md, "Certificates"):
//
//   offset  size  field
//   0       4     magic "MCRT"
//   4       1     version = 1
//   5       32    node Ed25519 public key
//   37      1     roles bitmask: bit 0 node, bit 1 aggregator, bit 2 operator; other bits 0
//   38      8     serial (u64)
//   46      8     not_before (i64, Unix seconds, inclusive)
//   54      8     not_after  (i64, Unix seconds, exclusive), not_after > not_before
//   62      1     network id length L, 1..64
//   63      L     network id (bytes [A-Za-z0-9._-])
//   63+L    64    Ed25519 signature by the coordinator key over bytes [0, 63+L)
//
// Exactly one encoding exists for each certificate: the decoder rejects any
// other length, unknown role bits, an empty or over-long network id, a
// non-canonical character and a reversed window.
//
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/identity.h"

namespace murmur::crypto {

enum Role : std::uint8_t {
  kRoleNode = 1 << 0,
  kRoleAggregator = 1 << 1,
  kRoleOperator = 1 << 2,
};
inline constexpr std::uint8_t kAllRoles = kRoleNode | kRoleAggregator | kRoleOperator;
inline constexpr std::size_t kMaxNetworkIdSize = 64;
inline constexpr std::size_t kCertificateFixedSize = 63 + kSignatureSize;  // plus the network id
inline constexpr std::size_t kMaxCertificateSize = kCertificateFixedSize + kMaxNetworkIdSize;

struct Certificate {
  SignPublicKey node_key{};
  std::string network_id;
  std::uint8_t roles = 0;
  std::uint64_t serial = 0;
  std::int64_t not_before = 0;
  std::int64_t not_after = 0;
  Signature signature{};

  bool HasRoles(std::uint8_t required) const { return (roles & required) == required; }
  friend bool operator==(const Certificate&, const Certificate&) = default;
};

// InvalidArgument unless 1..64 bytes of [A-Za-z0-9._-].
Status ValidateNetworkId(std::string_view network_id);

// The signed bytes [0, 63+L) of the encoding. REQUIRES: a valid network id.
Bytes CertificateSignedBytes(const Certificate& cert);
// The full canonical encoding, signature included.
Bytes EncodeCertificate(const Certificate& cert);
// Parses a canonical encoding; DataLoss (truncated/trailing) or InvalidArgument (bad field).
// Does not check the signature: see VerifyCertificate.
Result<Certificate> DecodeCertificate(ByteSpan bytes);

// Fills cert->signature with the coordinator's signature. InvalidArgument when
// the fields cannot be encoded (bad network id, unknown roles, empty window).
Status SignCertificate(const Identity& coordinator, Certificate* cert);

// Checks, in this order: the coordinator's signature (Unauthenticated "bad
// signature"), the network (PermissionDenied "for network 'a', expected 'b'"),
// the window (Unauthenticated "not yet valid" / "expired"). `now` is Unix seconds.
Status VerifyCertificate(const Certificate& cert, const SignPublicKey& coordinator_key,
                         std::string_view network_id, std::int64_t now);

// "node,aggregator" <-> bitmask. ParseRoles: InvalidArgument naming an unknown role.
std::string RolesToString(std::uint8_t roles);
Result<std::uint8_t> ParseRoles(std::string_view text);

// Certificate files: "murmur-certificate v1\n" + hex of the encoding + "\n".
std::string CertificateText(const Certificate& cert);
Result<Certificate> ParseCertificateText(std::string_view text);
Result<Certificate> LoadCertificateFile(const std::string& path);
Status SaveCertificateFile(const std::string& path, const Certificate& cert);

}  // namespace murmur::crypto
