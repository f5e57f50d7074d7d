// AeadSlot: the AEAD of one Noise transport message, computed in pieces, so
// that a transport can seal a record straight from its header and the
// application's payload into the output buffer, and (ChaChaPoly) open a
// frame straight from the receive buffer into the message being
// reassembled, with no copy of the plaintext in between.
//
// ChaChaPoly (RFC 8439, section 2.8) is computed in pieces here:
// It is libsodium's own construction of crypto_aead_chacha20poly1305_ietf
// spelled out: with the 96-bit nonce 0^32 || le64(n) (Noise, section 12.3),
// the Poly1305 key is the first 32 bytes of ChaCha20 block 0; plaintext byte
// i is XORed with byte i mod 64 of block 1 + i / 64; the tag is Poly1305 over
// pad16(ciphertext) || le64(0) || le64(|ciphertext|) (the associated data is
// empty for transport messages). tests/crypto/aead_parts_test.cc checks
// every function against libsodium's one-shot AEAD.
//
// A slot is the key and nonce of one message, handed out in nonce order by
// SecureChannel (TakeSealSlot, VerifyNext); slots of different messages may
// be used on different threads at the same time.
//
// AESGCM (crypto/aes_gcm.h) seals the parts in pieces too, in one pass of
// libcrypto's stitched AES-CTR and GHASH code; a message is opened whole, in
// place (Open), or in order, piece by piece, wherever each piece goes
// (aes_gcm::OpenStream with the slot's key and nonce), since GCM's tag is
// checked only after the whole ciphertext has passed. Verify and Xor are
// ChaChaPoly's alone (RandomAccess).
//
// Thread-safety: a slot is a value; its const methods may run concurrently.
#pragma once

#include <cstdint>
#include <span>

#include "crypto/bytes.h"
#include "crypto/cipher_state.h"

namespace murmur::crypto {

struct AeadSlot {
  CipherKey key{};
  std::uint64_t nonce = 0;

  AeadSlot() = default;
  Cipher cipher = Cipher::kChaChaPoly;

  AeadSlot(const CipherKey& k, std::uint64_t n, Cipher c = Cipher::kChaChaPoly)
      : key(k), nonce(n), cipher(c) {}
  AeadSlot(const AeadSlot&) = default;
  AeadSlot& operator=(const AeadSlot&) = default;
  ~AeadSlot();

  // out[0, n) = the concatenation of `parts` (n bytes in all) encrypted, and
  // out[n, n + 16) its tag: the same bytes as EncryptWithAd({}, concatenation).
  // `out` must not overlap the parts.
  void SealGather(std::span<const ByteSpan> parts, std::uint8_t* out) const;
  // Opens `message` (ciphertext || 16-byte tag) in place: true, with its
  // first size - 16 bytes the plaintext, when the tag is valid; false (the
  // contents then unspecified) otherwise, and for a message shorter than the tag.
  bool Open(std::span<std::uint8_t> message) const;

  // Whether Verify and Xor may be used: the keystream of any offset (ChaChaPoly).
  bool RandomAccess() const { return cipher == Cipher::kChaChaPoly; }
  // Whether `message` (ciphertext || 16-byte tag) carries a valid tag, in
  // constant time. False for a message shorter than the tag. REQUIRES: RandomAccess().
  bool Verify(ByteSpan message) const;
  // dst[0, len) = src[0, len) XOR the keystream at message offsets
  // [offset, offset + len): encrypts or decrypts those bytes of the message.
  // dst may equal src. REQUIRES: RandomAccess(); offset + len < 2^38 (the IETF block counter).
  void Xor(std::size_t offset, const std::uint8_t* src, std::size_t len, std::uint8_t* dst) const;

 private:
  // The tag of `ciphertext` under this slot.
  void Tag(ByteSpan ciphertext, std::uint8_t tag[kTagSize]) const;
};

}  // namespace murmur::crypto
