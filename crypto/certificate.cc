#include "crypto/certificate.h"

#include "crypto/file_io.h"

namespace murmur::crypto {
namespace {

constexpr std::uint8_t kMagic[4] = {'M', 'C', 'R', 'T'};
constexpr std::string_view kTextHeader = "murmur-certificate v1";

bool NetworkIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

Status ValidateFields(const Certificate& cert) {
  if (cert.version != kCertificateVersion && cert.version != kLegacyCertificateVersion)
    return Status::InvalidArgument("certificate version " + std::to_string(cert.version) +
                                   " is not supported");
  MURMUR_RETURN_IF_ERROR(ValidateNetworkId(cert.network_id));
  if (cert.version == kLegacyCertificateVersion && cert.BindsNodeId())
    return Status::InvalidArgument("a version 1 certificate cannot carry a node id");
  if (cert.version == kCertificateVersion && !cert.BindsNodeId() &&
      (cert.roles & (kRoleNode | kRoleAggregator)))
    return Status::InvalidArgument("certificate with roles " + RolesToString(cert.roles) +
                                   " carries no node id (only an operator's may go without one)");
  if ((cert.roles & ~kAllRoles) != 0)
    return Status::InvalidArgument("unknown role bits 0x" + ToHex(std::array<std::uint8_t, 1>{cert.roles}));
  if (cert.not_after <= cert.not_before)
    return Status::InvalidArgument("validity window is empty: not_after " + std::to_string(cert.not_after) +
                                   " <= not_before " + std::to_string(cert.not_before));
  return Status::Ok();
}

}  // namespace

Status ValidateNetworkId(std::string_view network_id) {
  if (network_id.empty() || network_id.size() > kMaxNetworkIdSize)
    return Status::InvalidArgument("network id must have 1 to " + std::to_string(kMaxNetworkIdSize) +
                                   " bytes, got " + std::to_string(network_id.size()));
  for (char c : network_id)
    if (!NetworkIdChar(c)) return Status::InvalidArgument("network id may contain only A-Z a-z 0-9 . _ -");
  return Status::Ok();
}

Bytes CertificateSignedBytes(const Certificate& cert) {
  MURMUR_CHECK(ValidateNetworkId(cert.network_id).ok());
  MURMUR_CHECK(cert.version == kCertificateVersion || cert.version == kLegacyCertificateVersion);
  const bool legacy = cert.version == kLegacyCertificateVersion;
  Bytes out;
  out.reserve(kCertificateFixedSize + cert.network_id.size());
  AppendBytes(&out, kMagic);
  AppendU8(&out, cert.version);
  AppendBytes(&out, cert.node_key);
  if (!legacy) AppendU32(&out, cert.node_id);
  AppendU8(&out, cert.roles);
  AppendU64(&out, cert.serial);
  AppendU64(&out, static_cast<std::uint64_t>(cert.not_before));
  AppendU64(&out, static_cast<std::uint64_t>(cert.not_after));
  AppendU8(&out, static_cast<std::uint8_t>(cert.network_id.size()));
  AppendBytes(&out, AsBytes(cert.network_id));
  return out;
}

Bytes EncodeCertificate(const Certificate& cert) {
  Bytes out = CertificateSignedBytes(cert);
  AppendBytes(&out, cert.signature);
  return out;
}

Result<Certificate> DecodeCertificate(ByteSpan bytes) {
  if (bytes.size() < kLegacyCertificateFixedSize + 1)
    return Status::DataLoss("certificate truncated: " + std::to_string(bytes.size()) + " bytes, at least " +
                            std::to_string(kLegacyCertificateFixedSize + 1) + " needed");
  if (bytes.size() > kMaxCertificateSize)
    return Status::DataLoss("certificate of " + std::to_string(bytes.size()) + " bytes over limit " +
                            std::to_string(kMaxCertificateSize));
  ByteReader r(bytes);
  ByteSpan magic;
  std::uint8_t id_len = 0;
  std::uint64_t not_before = 0, not_after = 0;
  Certificate cert;
  // The size check above guarantees the magic, the version and the key are present.
  MURMUR_CHECK(r.ReadSpan(4, &magic) && r.ReadU8(&cert.version) && r.ReadArray(&cert.node_key));
  if (!ConstantTimeEqual(magic, kMagic)) return Status::InvalidArgument("not a certificate (bad magic)");
  if (cert.version != kCertificateVersion && cert.version != kLegacyCertificateVersion)
    return Status::InvalidArgument("certificate version " + std::to_string(cert.version) +
                                   " is not supported");
  if (cert.version == kCertificateVersion && !r.ReadU32(&cert.node_id))
    return Status::DataLoss("certificate truncated: " + std::to_string(bytes.size()) + " bytes");
  if (!r.ReadU8(&cert.roles) || !r.ReadU64(&cert.serial) || !r.ReadU64(&not_before) ||
      !r.ReadU64(&not_after) || !r.ReadU8(&id_len))
    return Status::DataLoss("certificate truncated: " + std::to_string(bytes.size()) + " bytes");
  if (r.remaining() != static_cast<std::size_t>(id_len) + kSignatureSize)
    return Status::DataLoss("certificate length " + std::to_string(bytes.size()) +
                            " does not match its network id length " + std::to_string(id_len));
  ByteSpan id;
  MURMUR_CHECK(r.ReadSpan(id_len, &id) && r.ReadArray(&cert.signature));
  cert.network_id.assign(id.begin(), id.end());
  cert.not_before = static_cast<std::int64_t>(not_before);
  cert.not_after = static_cast<std::int64_t>(not_after);
  Status s = ValidateFields(cert);
  if (!s.ok()) return s.WithContext("malformed certificate");
  return cert;
}

Status SignCertificate(const Identity& coordinator, Certificate* cert) {
  MURMUR_RETURN_IF_ERROR(ValidateFields(*cert));
  cert->signature = coordinator.Sign(CertificateSignedBytes(*cert));
  return Status::Ok();
}

Status VerifyCertificate(const Certificate& cert, const SignPublicKey& coordinator_key,
                         std::string_view network_id, std::int64_t now) {
  Status fields = ValidateFields(cert);
  if (!fields.ok()) return fields.WithContext("malformed certificate");
  if (!VerifySignature(coordinator_key, CertificateSignedBytes(cert), cert.signature))
    return Status::Unauthenticated("certificate serial " + std::to_string(cert.serial) +
                                   ": bad signature (not signed by this network's coordinator key)");
  if (cert.network_id != network_id)
    return Status::PermissionDenied("certificate is for network '" + cert.network_id + "', expected '" +
                                    std::string(network_id) + "'");
  if (now < cert.not_before)
    return Status::Unauthenticated("certificate not yet valid: valid from " +
                                   std::to_string(cert.not_before) + ", now " + std::to_string(now));
  if (now >= cert.not_after)
    return Status::Unauthenticated("certificate expired at " + std::to_string(cert.not_after) + ", now " +
                                   std::to_string(now));
  return Status::Ok();
}

Status VerifyNodeBinding(const Certificate& cert, std::uint32_t node_id,
                         const std::optional<SignPublicKey>& pinned_key, bool* legacy) {
  if (legacy != nullptr) *legacy = false;
  if (pinned_key.has_value() && *pinned_key != cert.node_key)
    return Status::PermissionDenied(
        "node " + std::to_string(node_id) +
        " presented a certificate for another key than the one configured for it");
  if (cert.BindsNodeId()) {
    if (cert.node_id == node_id) return Status::Ok();
    return Status::PermissionDenied("certificate serial " + std::to_string(cert.serial) + " is for node " +
                                    std::to_string(cert.node_id) + ", not node " + std::to_string(node_id));
  }
  if (!pinned_key.has_value())
    return Status::PermissionDenied(
        "certificate serial " + std::to_string(cert.serial) + " binds no node id and node " +
        std::to_string(node_id) + "'s key is not configured: reissue it with `murmur cert issue --node-id " +
        std::to_string(node_id) + "`, or list the key under 'peers'");
  if (legacy != nullptr) *legacy = true;
  return Status::Ok();
}

std::string RolesToString(std::uint8_t roles) {
  std::string s;
  if (roles & kRoleNode) s += "node,";
  if (roles & kRoleAggregator) s += "aggregator,";
  if (roles & kRoleOperator) s += "operator,";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "none" : s;
}

Result<std::uint8_t> ParseRoles(std::string_view text) {
  std::uint8_t roles = 0;
  while (!text.empty()) {
    std::size_t comma = text.find(',');
    std::string_view name = text.substr(0, comma);
    if (name == "node") {
      roles |= kRoleNode;
    } else if (name == "aggregator") {
      roles |= kRoleAggregator;
    } else if (name == "operator") {
      roles |= kRoleOperator;
    } else {
      return Status::InvalidArgument("unknown role '" + std::string(name) +
                                     "' (roles: node, aggregator, operator)");
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (roles == 0) return Status::InvalidArgument("no role given (roles: node, aggregator, operator)");
  return roles;
}

std::string CertificateText(const Certificate& cert) {
  return std::string(kTextHeader) + "\n" + ToHex(EncodeCertificate(cert)) + "\n";
}

Result<Certificate> ParseCertificateText(std::string_view text) {
  std::size_t nl = text.find('\n');
  if (nl == std::string_view::npos || text.substr(0, nl) != kTextHeader)
    return Status::InvalidArgument("first line is not '" + std::string(kTextHeader) + "'");
  std::string_view hex = text.substr(nl + 1);
  if (!hex.empty() && hex.back() == '\n') hex.remove_suffix(1);
  if (hex.size() > 2 * kMaxCertificateSize)
    return Status::DataLoss("certificate text of " + std::to_string(hex.size()) + " hex digits over limit");
  MURMUR_ASSIGN_OR_RETURN(Bytes bytes, FromHex(hex));
  return DecodeCertificate(bytes);
}

Result<Certificate> LoadCertificateFile(const std::string& path) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, 4096));
  auto cert = ParseCertificateText(text);
  if (!cert.ok()) return cert.status().WithContext(path);
  return cert;
}

Status SaveCertificateFile(const std::string& path, const Certificate& cert) {
  return WriteFileAtomic(path, AsBytes(CertificateText(cert)), 0644);
}

}  // namespace murmur::crypto
