// Certificate: the coordinator's signed statement that a node key belongs to
// a network, under a node id, with roles and a validity window.
//
// Canonical encoding, version 2 (little-endian; docs/protocol.md, "Certificates"):
//
//   offset  size  field
//   0       4     magic "MCRT"
//   4       1     version = 2
//   5       32    node Ed25519 public key
//   37      4     node id (u32); ff ff ff ff: none (an operator's certificate)
//   41      1     roles bitmask: bit 0 node, bit 1 aggregator, bit 2 operator; other bits 0
//   42      8     serial (u64)
//   50      8     not_before (i64, Unix seconds, inclusive)
//   58      8     not_after  (i64, Unix seconds, exclusive), not_after > not_before
//   66      1     network id length L, 1..64
//   67      L     network id (bytes [A-Za-z0-9._-])
//   67+L    64    Ed25519 signature by the coordinator key over bytes [0, 67+L)
//
// The node id is signed with the key, so no peer can claim another node's
// id (VerifyNodeBinding): a certificate with the node or aggregator role
// must carry one. Version 1 (the same without the node id field, 127+L
// bytes) is still decoded; such a legacy certificate binds no node id and is
// accepted for one only where the verifier pins that node's key.
//
// Exactly one encoding exists for each certificate: the decoder rejects any
// other length, unknown role bits, an empty or over-long network id, a
// non-canonical character, a reversed window and a node role without a node id.
//
// Thread-safety: values.
#pragma once

#include <cstdint>
#include <optional>
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
inline constexpr std::uint8_t kCertificateVersion = 2;        // what SignCertificate writes by default
inline constexpr std::uint8_t kLegacyCertificateVersion = 1;  // no node id
inline constexpr std::uint32_t kNoCertifiedNode = 0xFFFFFFFFu;
// Encoded sizes without the network id: version 1, and version 2 (the largest).
inline constexpr std::size_t kLegacyCertificateFixedSize = 63 + kSignatureSize;
inline constexpr std::size_t kCertificateFixedSize = 67 + kSignatureSize;
inline constexpr std::size_t kMaxCertificateSize = kCertificateFixedSize + kMaxNetworkIdSize;

struct Certificate {
  std::uint8_t version = kCertificateVersion;
  SignPublicKey node_key{};
  std::uint32_t node_id = kNoCertifiedNode;  // version 2; always none in version 1
  std::string network_id;
  std::uint8_t roles = 0;
  std::uint64_t serial = 0;
  std::int64_t not_before = 0;
  std::int64_t not_after = 0;
  Signature signature{};

  bool HasRoles(std::uint8_t required) const { return (roles & required) == required; }
  bool BindsNodeId() const { return node_id != kNoCertifiedNode; }
  friend bool operator==(const Certificate&, const Certificate&) = default;
};

// InvalidArgument unless 1..64 bytes of [A-Za-z0-9._-].
Status ValidateNetworkId(std::string_view network_id);

// The signed bytes [0, 67+L) of the encoding ([0, 63+L) for version 1).
// REQUIRES: a valid network id and version.
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

// Whether `cert` (already verified) may speak for node `node_id`. With a
// node id, it must be that one (PermissionDenied "certificate is for node 5,
// not node 3"). A legacy certificate without one is accepted only when
// `pinned_key` (the key the verifier's configuration lists for that node)
// is its key; *legacy is then set, so that the caller can warn. Without a
// pinned key, PermissionDenied naming the fix (a certificate with
// --node-id). A pinned key that differs is PermissionDenied either way.
Status VerifyNodeBinding(const Certificate& cert, std::uint32_t node_id,
                         const std::optional<SignPublicKey>& pinned_key, bool* legacy = nullptr);

// "node,aggregator" <-> bitmask. ParseRoles: InvalidArgument naming an unknown role.
std::string RolesToString(std::uint8_t roles);
Result<std::uint8_t> ParseRoles(std::string_view text);

// Certificate files: "murmur-certificate v1\n" + hex of the encoding + "\n".
std::string CertificateText(const Certificate& cert);
Result<Certificate> ParseCertificateText(std::string_view text);
Result<Certificate> LoadCertificateFile(const std::string& path);
Status SaveCertificateFile(const std::string& path, const Certificate& cert);

}  // namespace murmur::crypto
