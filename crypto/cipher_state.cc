#include "crypto/cipher_state.h"

#include <sodium.h>

#include "crypto/aes_gcm.h"

namespace murmur::crypto {
namespace {

static_assert(aes_gcm::kNonceSize == 12 && crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12);
static_assert(aes_gcm::kTagSize == kTagSize && crypto_aead_chacha20poly1305_ietf_ABYTES == kTagSize);
static_assert(aes_gcm::kKeySize == kCipherKeySize &&
              crypto_aead_chacha20poly1305_ietf_KEYBYTES == kCipherKeySize);

Status NonceExhausted() { return Status::ResourceExhausted("cipher nonce exhausted (2^64-1 messages)"); }

Status Unauthentic(std::uint64_t n) {
  return Status::Unauthenticated("authentication failed at nonce " + std::to_string(n) +
                                 " (tampered, replayed, reordered or wrong key)");
}

Status ShorterThanTag(std::size_t size) {
  return Status::DataLoss("ciphertext of " + std::to_string(size) + " bytes is shorter than the " +
                          std::to_string(kTagSize) + "-byte tag");
}

}  // namespace

std::string_view CipherName(Cipher cipher) { return cipher == Cipher::kAesGcm ? "AESGCM" : "ChaChaPoly"; }

bool AesGcmAvailable() { return aes_gcm::HardwareAvailable(); }

std::array<std::uint8_t, 12> NoiseNonce(std::uint64_t n, Cipher cipher) {
  std::array<std::uint8_t, 12> nonce{};
  for (std::size_t i = 0; i < 8; ++i) {
    const std::size_t at = cipher == Cipher::kAesGcm ? 11 - i : 4 + i;
    nonce[at] = static_cast<std::uint8_t>(n >> (8 * i));
  }
  return nonce;
}

void AeadSealDetached(Cipher cipher, const CipherKey& key, std::uint64_t n, ByteSpan ad,
                      const std::uint8_t* m, std::size_t mlen, std::uint8_t* c, std::uint8_t* tag) {
  const auto nonce = NoiseNonce(n, cipher);
  if (cipher == Cipher::kAesGcm) {
    const ByteSpan part(m, mlen);
    aes_gcm::Seal(key, nonce, ad, std::span<const ByteSpan>(&part, 1), c, tag);
    return;
  }
  unsigned long long maclen = 0;
  const int rc = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
      c, tag, &maclen, m, mlen, ad.data(), ad.size(), nullptr, nonce.data(), key.data());
  MURMUR_CHECK(rc == 0);
}

bool AeadOpenDetached(Cipher cipher, const CipherKey& key, std::uint64_t n, ByteSpan ad,
                      const std::uint8_t* c, std::size_t clen, const std::uint8_t* tag, std::uint8_t* m) {
  const auto nonce = NoiseNonce(n, cipher);
  if (cipher == Cipher::kAesGcm) return aes_gcm::Open(key, nonce, ad, c, clen, tag, m);
  return crypto_aead_chacha20poly1305_ietf_decrypt_detached(m, nullptr, c, clen, tag, ad.data(), ad.size(),
                                                            nonce.data(), key.data()) == 0;
}

CipherState::CipherState(Cipher cipher) : cipher_(cipher) {
  MURMUR_CHECK(cipher != Cipher::kAesGcm || AesGcmAvailable());
}

CipherState::~CipherState() { sodium_memzero(k_.data(), k_.size()); }

void CipherState::InitializeKey(const CipherKey& key) {
  EnsureSodium();
  k_ = key;
  n_ = 0;
  has_key_ = true;
}

Status CipherState::EncryptWithAd(ByteSpan ad, ByteSpan plaintext, Bytes* out) {
  if (!has_key_) {
    AppendBytes(out, plaintext);
    return Status::Ok();
  }
  if (n_ == kMaxNonce) return NonceExhausted();
  const std::size_t start = out->size();
  out->resize(start + plaintext.size() + kTagSize);
  std::uint8_t* c = out->data() + start;
  AeadSealDetached(cipher_, k_, n_, ad, plaintext.data(), plaintext.size(), c, c + plaintext.size());
  ++n_;
  return Status::Ok();
}

Status CipherState::DecryptWithAd(ByteSpan ad, ByteSpan ciphertext, Bytes* out) {
  if (!has_key_) {
    AppendBytes(out, ciphertext);
    return Status::Ok();
  }
  if (n_ == kMaxNonce) return NonceExhausted();
  if (ciphertext.size() < kTagSize) return ShorterThanTag(ciphertext.size());
  const std::size_t start = out->size(), mlen = ciphertext.size() - kTagSize;
  out->resize(start + mlen);
  if (!AeadOpenDetached(cipher_, k_, n_, ad, ciphertext.data(), mlen, ciphertext.data() + mlen,
                        out->data() + start)) {
    out->resize(start);
    return Unauthentic(n_);
  }
  ++n_;
  return Status::Ok();
}

Status CipherState::EncryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer) {
  if (buffer.size() < kTagSize)
    return Status::DataLoss("buffer of " + std::to_string(buffer.size()) + " bytes has no room for the tag");
  if (!has_key_) return Status::FailedPrecondition("in-place encryption needs a key");
  if (n_ == kMaxNonce) return NonceExhausted();
  const std::size_t mlen = buffer.size() - kTagSize;
  AeadSealDetached(cipher_, k_, n_, ad, buffer.data(), mlen, buffer.data(), buffer.data() + mlen);
  ++n_;
  return Status::Ok();
}

Status CipherState::DecryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer) {
  if (buffer.size() < kTagSize) return ShorterThanTag(buffer.size());
  if (!has_key_) return Status::FailedPrecondition("in-place decryption needs a key");
  if (n_ == kMaxNonce) return NonceExhausted();
  const std::size_t clen = buffer.size() - kTagSize;
  if (!AeadOpenDetached(cipher_, k_, n_, ad, buffer.data(), clen, buffer.data() + clen, buffer.data()))
    return Unauthentic(n_);
  ++n_;
  return Status::Ok();
}

void CipherState::Rekey() {
  MURMUR_CHECK(has_key_);
  std::array<std::uint8_t, kCipherKeySize> zeros{};
  std::array<std::uint8_t, kCipherKeySize + kTagSize> ct{};
  AeadSealDetached(cipher_, k_, kMaxNonce, {}, zeros.data(), zeros.size(), ct.data(),
                   ct.data() + kCipherKeySize);
  std::copy(ct.begin(), ct.begin() + kCipherKeySize, k_.begin());
  sodium_memzero(ct.data(), ct.size());
}

}  // namespace murmur::crypto
