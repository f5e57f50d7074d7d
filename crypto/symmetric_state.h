// SymmetricState: the Noise SymmetricState (revision 34, section 5.2) with
// HASH = BLAKE2b-512 and the HKDF of crypto/hmac.h.
//
// Thread-safety: a value used by one thread at a time.
#pragma once

#include <string_view>
#include <utility>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/cipher_state.h"
#include "crypto/hmac.h"

namespace murmur::crypto {

class SymmetricState {
 public:
  // InitializeSymmetric(protocol_name): h = name zero-padded to 64 bytes (or
  // HASH(name) when longer), ck = h, no cipher key. `cipher` is the name's
  // cipher function, used by EncryptAndHash, DecryptAndHash and Split.
  explicit SymmetricState(std::string_view protocol_name, Cipher cipher = Cipher::kChaChaPoly);
  ~SymmetricState();
  SymmetricState(const SymmetricState&) = default;
  SymmetricState& operator=(const SymmetricState&) = default;

  // (ck, temp_k) = HKDF(ck, ikm, 2); InitializeKey(temp_k[0:32]).
  void MixKey(ByteSpan input_key_material);
  // h = HASH(h || data).
  void MixHash(ByteSpan data);
  // Appends the ciphertext (or plaintext before any key) to *out and mixes it into h.
  Status EncryptAndHash(ByteSpan plaintext, Bytes* out);
  // Appends the plaintext to *out and mixes the ciphertext into h. Unauthenticated on a bad tag.
  Status DecryptAndHash(ByteSpan ciphertext, Bytes* out);
  // (c1, c2) from HKDF(ck, empty, 2): c1 for initiator -> responder, c2 for responder -> initiator.
  std::pair<CipherState, CipherState> Split() const;

  const Hash& handshake_hash() const { return h_; }
  bool HasKey() const { return cipher_.HasKey(); }

 private:
  CipherState cipher_;
  Hash ck_{};
  Hash h_{};
};

}  // namespace murmur::crypto
