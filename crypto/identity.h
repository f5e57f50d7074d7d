// Identity: a node's (or coordinator's) long-term Ed25519 signing key pair.
//
// The secret is kept as the 32-byte Ed25519 seed (RFC 8032 section 5.1.5);
// the 64-byte libsodium secret key and the public key are derived from it.
// Files (docs/protocol.md, "Identity files") are two lines of text:
//
//   identity.key (mode 0600):  "murmur-ed25519-secret-key v1\n" + 64 hex digits of the seed + "\n"
//   identity.pub:              "murmur-ed25519-public-key v1\n" + 64 hex digits of the key + "\n"
//
// Loading validates the header, the length and every digit, and checks that a
// .pub beside the .key matches it. A secret-key file readable by group or
// others is loaded with a logged warning (as ssh warns about such keys).
//
// Thread-safety: an Identity is an immutable value after construction.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "crypto/bytes.h"

namespace murmur::crypto {

inline constexpr std::size_t kSignPublicKeySize = 32;
inline constexpr std::size_t kSignSeedSize = 32;
inline constexpr std::size_t kSignatureSize = 64;

using SignPublicKey = std::array<std::uint8_t, kSignPublicKeySize>;
using Signature = std::array<std::uint8_t, kSignatureSize>;

inline constexpr const char* kIdentityKeyFile = "identity.key";
inline constexpr const char* kIdentityPubFile = "identity.pub";

class Identity {
 public:
  // A fresh key pair from the system's randomness.
  static Identity Generate();
  // The key pair of a given seed (deterministic; used by tests).
  static Identity FromSeed(const std::array<std::uint8_t, kSignSeedSize>& seed);

  const SignPublicKey& public_key() const { return public_key_; }
  std::string PublicKeyHex() const { return ToHex(public_key_); }

  // Ed25519 signature of `message` (RFC 8032, pure Ed25519).
  Signature Sign(ByteSpan message) const;

  // Writes dir/identity.key (0600) and dir/identity.pub atomically. The
  // directory must exist. AlreadyExists when identity.key is there and
  // overwrite is false.
  Status Save(const std::string& dir, bool overwrite = false) const;
  // Loads a secret-key file (and checks dir/identity.pub beside it, if present).
  static Result<Identity> LoadKeyFile(const std::string& key_path);

  // The text of the two files (exposed for tests and the CLI).
  std::string SecretKeyText() const;
  std::string PublicKeyText() const;

 private:
  Identity() = default;
  std::array<std::uint8_t, kSignSeedSize> seed_{};
  std::array<std::uint8_t, 64> secret_key_{};
  SignPublicKey public_key_{};
};

// Checks an Ed25519 signature; true when it is valid for (message, key).
bool VerifySignature(const SignPublicKey& key, ByteSpan message, const Signature& signature);

// Parses an "identity.pub" text, or a bare 64-digit hex public key.
Result<SignPublicKey> ParsePublicKeyText(std::string_view text);
// Reads a public key file (identity.pub format, or bare hex).
Result<SignPublicKey> LoadPublicKeyFile(const std::string& path);
// A key given on a command line or in a config: 64 hex digits, else the path
// of a public key file.
Result<SignPublicKey> PublicKeyFromArg(const std::string& text);

}  // namespace murmur::crypto
