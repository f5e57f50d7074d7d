// The daemon's signer and verifier for membership (membership/messages.h).
//
// CertifiedSigner signs with the daemon's identity and attaches its
// certificate to its own alive and left statements, so that a member that
// has never talked to this daemon can check, through any relay, that the
// statement is this node's: the certificate binds the node id to the key
// (docs/protocol.md section 2).
//
// MemberKeys verifies a membership message with the key of the certificate
// its sender presented on the session it came on (node/transport/transport.h),
// and a member's statement with the key its attached certificate binds to
// that member's id, checked against the network's coordinator key, network
// id and clock, or, without one, with the key the config pins for the member
// or its session's. A certificate for another node id, for another network,
// under another coordinator, or a signature that does not verify, is a
// forgery (its relay is booked); an expired certificate or a version 1 one
// for an unpinned node only leaves the statement unverified (ignored).
//
// Thread-safety: the daemon's io thread. The Transport must outlive both.
#pragma once

#include <vector>

#include "crypto/handshake.h"
#include "membership/messages.h"
#include "node/transport/transport.h"

namespace murmur::node {

class CertifiedSigner final : public membership::MembershipSigner {
 public:
  CertifiedSigner(crypto::Identity identity, const crypto::Certificate& certificate);
  // The certificate to attach from now on (a renewal).
  void SetCertificate(const crypto::Certificate& certificate);
  crypto::Signature Sign(std::span<const std::uint8_t> signed_bytes) const override;
  std::vector<std::uint8_t> Credential() const override { return certificate_; }

 private:
  crypto::Identity identity_;
  std::vector<std::uint8_t> certificate_;  // its encoding
};

class MemberKeys final : public membership::MembershipVerifier {
 public:
  // `policy`: the network id and coordinator key statements' certificates must match.
  MemberKeys(const Transport* transport, crypto::TrustPolicy policy)
      : transport_(transport), policy_(std::move(policy)) {}
  bool Verify(NodeId sender, std::span<const std::uint8_t> signed_bytes,
              const crypto::Signature& signature) const override;
  membership::StatementVerdict VerifyStatement(const membership::MemberUpdate& u) const override;

 private:
  const Transport* transport_;
  crypto::TrustPolicy policy_;
};

}  // namespace murmur::node
