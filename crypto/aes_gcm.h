// AES-256-GCM, Noise's AESGCM cipher function (revision 34, section 12.4),
// from OpenSSL's libcrypto (Debian libssl3, 3.0).
//
// Why OpenSSL and not libsodium, murmur's library for every other primitive:
// libsodium 1.0.18 (Debian 12's) has AES-256-GCM on x86-64 only, with
// AES-NI and PCLMUL code that seals 64 KiB at about 1.8 GB/s on the
// machines murmur is measured on, and none on ARMv8, where most edge
// devices are. libcrypto's stitched AES-NI/VAES + carry-less-multiply code
// seals the same at about 2.9 GB/s there, and its ARMv8 crypto-extension
// code runs on the ARM boards murmur targets. libcrypto also computes
// AES-GCM in pieces (the header and the payload of a record sealed where
// they lie), which libsodium's one-shot API cannot. Both libraries implement
// the same standard (NIST SP 800-38D) and tests/crypto check one against the
// other and against the cacophony vectors.
//
// Only CPUs with AES and carry-less multiply instructions run it
// (HardwareAvailable): there libcrypto's code is constant-time; its
// table-driven fallback would not be, so murmur never negotiates AES-GCM
// without them and uses ChaCha20-Poly1305 instead.
//
// Keyed contexts are cached per thread (one for sealing, one for opening):
// the key schedule and GHASH table are computed once per key and thread, not
// once per message. Cached keys are wiped when the thread ends.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "crypto/bytes.h"

struct evp_cipher_ctx_st;  // OpenSSL's EVP_CIPHER_CTX, kept out of this header

namespace murmur::crypto::aes_gcm {

inline constexpr std::size_t kKeySize = 32;
inline constexpr std::size_t kNonceSize = 12;
inline constexpr std::size_t kTagSize = 16;

using Key = std::array<std::uint8_t, kKeySize>;
using Nonce = std::array<std::uint8_t, kNonceSize>;

// Whether this CPU has the instructions murmur requires for AES-GCM: AES and
// PCLMULQDQ on x86-64, the AES and PMULL crypto extensions on aarch64.
bool HardwareAvailable();

// out = the concatenation of `parts` encrypted (as many bytes), tag[0, 16)
// the tag over `ad` and that ciphertext. `out` may equal the start of the
// first part (in place) and must not otherwise overlap the parts.
void Seal(const Key& key, const Nonce& nonce, ByteSpan ad, std::span<const ByteSpan> parts, std::uint8_t* out,
          std::uint8_t* tag);
// m[0, clen) = the decryption of c[0, clen) and true when `tag` verifies;
// false otherwise (m's contents are then unspecified). m may equal c.
bool Open(const Key& key, const Nonce& nonce, ByteSpan ad, const std::uint8_t* c, std::size_t clen,
          const std::uint8_t* tag, std::uint8_t* m);

// Opens one message in pieces, in order: each piece of ciphertext decrypted
// wherever it is to go, the tag checked at the end (Finish), with no
// associated data, in the same single pass of libcrypto's stitched code as
// Open. Until Finish returns true the bytes it produced are unauthenticated:
// a caller may keep them where they are being collected, but must not act
// on them, and must discard them when Finish returns false.
//
// It uses its thread's one streaming context (keyed once per key and thread,
// as Seal and Open are), from construction to Finish: at most one unfinished
// OpenStream per thread at a time (checked).
class OpenStream {
 public:
  OpenStream(const Key& key, const Nonce& nonce);
  ~OpenStream();
  OpenStream(const OpenStream&) = delete;
  OpenStream& operator=(const OpenStream&) = delete;

  // m[0, n) = the decryption of the next n bytes of ciphertext c[0, n). m may equal c.
  // REQUIRES: Finish not called yet.
  void Update(const std::uint8_t* c, std::size_t n, std::uint8_t* m);
  // Whether `tag` is the tag of all the ciphertext given to Update. Once only.
  bool Finish(const std::uint8_t* tag);

 private:
  evp_cipher_ctx_st* ctx_;  // the thread's streaming EVP_CIPHER_CTX
  bool finished_ = false;
};

}  // namespace murmur::crypto::aes_gcm
