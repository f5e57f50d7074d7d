// Ed25519 implementations of MembershipSigner and MembershipVerifier.
//
// Ed25519Signer signs with a node's crypto::Identity. KeyDirectory maps node
// ids to Ed25519 public keys: the daemon fills it with the keys of the
// certificates its peers presented (node/transport/transport.h authenticates them), and
// tests fill it with keys made by crypto::Identity::FromSeed. A message from a
// node the directory does not know fails verification.
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

 private:
  std::map<NodeId, crypto::SignPublicKey> keys_;
};

}  // namespace murmur::membership
