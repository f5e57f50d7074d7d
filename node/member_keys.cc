#include "node/member_keys.h"

#include <chrono>

namespace murmur::node {

using membership::StatementCheck;
using membership::StatementVerdict;

CertifiedSigner::CertifiedSigner(crypto::Identity identity, const crypto::Certificate& certificate)
    : identity_(std::move(identity)) {
  SetCertificate(certificate);
}

void CertifiedSigner::SetCertificate(const crypto::Certificate& certificate) {
  certificate_ = crypto::EncodeCertificate(certificate);
}

crypto::Signature CertifiedSigner::Sign(std::span<const std::uint8_t> signed_bytes) const {
  return identity_.Sign(signed_bytes);
}

bool MemberKeys::Verify(NodeId sender, std::span<const std::uint8_t> signed_bytes,
                        const crypto::Signature& signature) const {
  const auto key = transport_->PeerKey(sender);
  return key.has_value() && crypto::VerifySignature(*key, signed_bytes, signature);
}

StatementVerdict MemberKeys::VerifyStatement(const membership::MemberUpdate& u) const {
  const std::optional<crypto::SignPublicKey> pinned = transport_->PinnedKey(u.member);
  std::optional<crypto::SignPublicKey> key;
  if (!u.credential.empty()) {
    auto cert = crypto::DecodeCertificate(u.credential);
    if (!cert.ok()) return {StatementCheck::kForged, {}};
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    // Outside its window: stale news of a member, not a forgery.
    if (now < cert->not_before || now >= cert->not_after) return {StatementCheck::kUnknownKey, {}};
    if (!crypto::VerifyCertificate(*cert, policy_.coordinator_key, policy_.network_id, now).ok() ||
        !cert->HasRoles(crypto::kRoleNode))
      return {StatementCheck::kForged, {}};
    // A version 1 certificate binds no id: only under a pinned key.
    if (!cert->BindsNodeId() && !pinned.has_value()) return {StatementCheck::kUnknownKey, {}};
    if (!crypto::VerifyNodeBinding(*cert, u.member, pinned).ok()) return {StatementCheck::kForged, {}};
    key = cert->node_key;
  } else {
    key = pinned ? pinned : transport_->PeerKey(u.member);
    if (!key) return {StatementCheck::kUnknownKey, {}};
  }
  if (!crypto::VerifySignature(*key, membership::StatementBytes(u), u.statement))
    return {StatementCheck::kForged, {}};
  return {StatementCheck::kValid, *key};
}

}  // namespace murmur::node
