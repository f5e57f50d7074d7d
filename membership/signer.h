// Ed25519 implementations of MembershipSigner and MembershipVerifier.
//
// Ed25519Signer signs with a node's crypto::Identity (its statements carry no
// credential). KeyDirectory maps node ids to Ed25519 public keys, filled by
// the simulator and the tests with keys made by crypto::Identity::FromSeed: a
// message or statement of a node the directory does not know fails
// verification. The daemon's signer and verifier (node/member_keys.h) attach
// and check certificates instead.
//
// Thread-safety: Ed25519Signer is immutable. KeyDirectory is not
// synchronized: add keys and verify on the node's executor.
#pragma once

#include <map>

#include "crypto/identity.h"
#include "membership/messages.h"

namespace murmur::membership {

class Ed25519Signer final : public MembershipSigner {
 public:
  explicit Ed25519Signer(crypto::Identity identity) : identity_(std::move(identity)) {}
  crypto::Signature Sign(std::span<const std::uint8_t> signed_bytes) const override {
    return identity_.Sign(signed_bytes);
  }

 private:
  crypto::Identity identity_;
};

class KeyDirectory final : public MembershipVerifier {
 public:
  // Adds or replaces the key of `node`.
  void Add(NodeId node, const crypto::SignPublicKey& key) { keys_[node] = key; }
  void Remove(NodeId node) { keys_.erase(node); }
  bool Contains(NodeId node) const { return keys_.count(node) != 0; }

  bool Verify(NodeId sender, std::span<const std::uint8_t> signed_bytes,
              const crypto::Signature& signature) const override {
    auto it = keys_.find(sender);
    return it != keys_.end() && crypto::VerifySignature(it->second, signed_bytes, signature);
  }
  StatementVerdict VerifyStatement(const MemberUpdate& u) const override {
    auto it = keys_.find(u.member);
    if (it == keys_.end()) return {StatementCheck::kUnknownKey, {}};
    if (!crypto::VerifySignature(it->second, StatementBytes(u), u.statement))
      return {StatementCheck::kForged, {}};
    return {StatementCheck::kValid, it->second};
  }

 private:
  std::map<NodeId, crypto::SignPublicKey> keys_;
};

}  // namespace murmur::membership
