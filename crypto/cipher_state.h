// CipherState: the Noise CipherState (revision 34, section 5.1) for one of
// Noise's two cipher functions (section 12):
//   - ChaChaPoly: IETF ChaCha20-Poly1305 (RFC 8439) from libsodium; the
//     96-bit nonce is 4 zero bytes followed by the 64-bit counter n,
//     little-endian (12.3);
//   - AESGCM: AES-256-GCM with a 128-bit tag from OpenSSL's libcrypto
//     (crypto/aes_gcm.h says why); the nonce is 4 zero bytes followed by n
//     big-endian (12.4). It runs only on CPUs with AES and carry-less
//     multiply instructions (AesGcmAvailable): AES-NI and PCLMULQDQ on
//     x86-64, the AES and PMULL crypto extensions on aarch64.
// n counts up by one per successful operation
// and never wraps: the value 2^64-1 is reserved for Rekey, and an operation
// at that value fails (Noise: "the application must delete the CipherState
// and terminate the session").
//
// Thread-safety: a CipherState is a value used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "crypto/bytes.h"

namespace murmur::crypto {

inline constexpr std::size_t kCipherKeySize = 32;
inline constexpr std::size_t kTagSize = 16;
inline constexpr std::uint64_t kMaxNonce = ~std::uint64_t{0};  // reserved for Rekey

using CipherKey = std::array<std::uint8_t, kCipherKeySize>;

// Noise's cipher functions. The values are the identifiers of murmur's
// cipher offer (crypto/handshake.h, docs/protocol.md section 3).
enum class Cipher : std::uint8_t { kChaChaPoly = 1, kAesGcm = 2 };

// The cipher's name in Noise protocol names: "ChaChaPoly" or "AESGCM".
std::string_view CipherName(Cipher cipher);
// Whether this CPU runs murmur's AES-256-GCM (crypto/aes_gcm.h).
bool AesGcmAvailable();

// The 96-bit nonce of Noise's 64-bit counter n: four zero bytes, then n
// little-endian for ChaChaPoly (section 12.3), big-endian for AESGCM (12.4).
std::array<std::uint8_t, 12> NoiseNonce(std::uint64_t n, Cipher cipher = Cipher::kChaChaPoly);

// The cipher's AEAD with the Noise nonce of counter n and a detached tag:
// c[0, mlen) = the encryption of m[0, mlen), tag[0, 16) its tag. c may equal m.
void AeadSealDetached(Cipher cipher, const CipherKey& key, std::uint64_t n, ByteSpan ad,
                      const std::uint8_t* m, std::size_t mlen, std::uint8_t* c, std::uint8_t* tag);
// m[0, clen) = the decryption of c[0, clen) when `tag` verifies (true); m may equal c.
bool AeadOpenDetached(Cipher cipher, const CipherKey& key, std::uint64_t n, ByteSpan ad,
                      const std::uint8_t* c, std::size_t clen, const std::uint8_t* tag, std::uint8_t* m);

class CipherState {
 public:
  CipherState() = default;
  // REQUIRES: AesGcmAvailable() for Cipher::kAesGcm.
  explicit CipherState(Cipher cipher);
  ~CipherState();
  CipherState(const CipherState&) = default;
  CipherState& operator=(const CipherState&) = default;

  // InitializeKey(k): sets the key and n = 0.
  void InitializeKey(const CipherKey& key);
  bool HasKey() const { return has_key_; }
  Cipher cipher() const { return cipher_; }
  std::uint64_t nonce() const { return n_; }
  // SetNonce(n), for tests and for peers that skip ahead; never moves n back in normal use.
  void SetNonce(std::uint64_t n) { n_ = n; }
  // The key, for AEAD computed in pieces (crypto/aead_parts.h). REQUIRES: HasKey().
  const CipherKey& key() const { return k_; }

  // EncryptWithAd: appends ENCRYPT(k, n++, ad, plaintext) (plaintext plus a
  // 16-byte tag) to *out; without a key appends the plaintext unchanged.
  // ResourceExhausted when n has reached 2^64-1.
  Status EncryptWithAd(ByteSpan ad, ByteSpan plaintext, Bytes* out);
  // DecryptWithAd: appends the plaintext to *out. Unauthenticated when the
  // tag does not verify (n is then left unchanged and *out untouched).
  Status DecryptWithAd(ByteSpan ad, ByteSpan ciphertext, Bytes* out);

  // In-place variants for the transport's hot path (both ciphers allow the
  // message and ciphertext to share memory). EncryptInPlace: `buffer` holds
  // the plaintext in its first size - 16 bytes; on return it holds the
  // ciphertext and tag. DecryptInPlace: `buffer` holds a ciphertext and tag;
  // on return its first size - 16 bytes are the plaintext. Same nonce rules
  // and errors as the appending variants (DataLoss when `buffer` is shorter
  // than the tag; on Unauthenticated the contents are unspecified).
  Status EncryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer);
  Status DecryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer);

  // Rekey(): k = the first 32 bytes of ENCRYPT(k, 2^64-1, empty, 32 zero bytes). n is unchanged.
  // REQUIRES: HasKey().
  void Rekey();

 private:
  CipherKey k_{};
  Cipher cipher_ = Cipher::kChaChaPoly;
  std::uint64_t n_ = 0;
  bool has_key_ = false;
};

}  // namespace murmur::crypto
