#include "crypto/cipher_state.h"

#include <sodium.h>

namespace murmur::crypto {
namespace {

// libsodium's two detached AEADs have the same signatures.
using SealFn = int (*)(unsigned char*, unsigned char*, unsigned long long*, const unsigned char*,
                       unsigned long long, const unsigned char*, unsigned long long, const unsigned char*,
                       const unsigned char*, const unsigned char*);
using OpenFn = int (*)(unsigned char*, unsigned char*, const unsigned char*, unsigned long long,
                       const unsigned char*, const unsigned char*, unsigned long long, const unsigned char*,
                       const unsigned char*);

SealFn SealOf(Cipher cipher) {
  return cipher == Cipher::kAesGcm ? crypto_aead_aes256gcm_encrypt_detached
                                   : crypto_aead_chacha20poly1305_ietf_encrypt_detached;
}
OpenFn OpenOf(Cipher cipher) {
  return cipher == Cipher::kAesGcm ? crypto_aead_aes256gcm_decrypt_detached
                                   : crypto_aead_chacha20poly1305_ietf_decrypt_detached;
}

static_assert(crypto_aead_aes256gcm_NPUBBYTES == 12 && crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12);
static_assert(crypto_aead_aes256gcm_ABYTES == kTagSize &&
              crypto_aead_chacha20poly1305_ietf_ABYTES == kTagSize);
static_assert(crypto_aead_aes256gcm_KEYBYTES == kCipherKeySize);

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

bool AesGcmAvailable() {
  EnsureSodium();
  return crypto_aead_aes256gcm_is_available() == 1;
}

std::array<std::uint8_t, 12> NoiseNonce(std::uint64_t n, Cipher cipher) {
  std::array<std::uint8_t, 12> nonce{};
  for (std::size_t i = 0; i < 8; ++i) {
    const std::size_t at = cipher == Cipher::kAesGcm ? 11 - i : 4 + i;
    nonce[at] = static_cast<std::uint8_t>(n >> (8 * i));
  }
  return nonce;
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
  const auto nonce = NoiseNonce(n_, cipher_);
  unsigned long long maclen = 0;
  MURMUR_CHECK(SealOf(cipher_)(c, c + plaintext.size(), &maclen, plaintext.data(), plaintext.size(),
                               ad.data(), ad.size(), nullptr, nonce.data(), k_.data()) == 0);
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
  const auto nonce = NoiseNonce(n_, cipher_);
  if (OpenOf(cipher_)(out->data() + start, nullptr, ciphertext.data(), mlen, ciphertext.data() + mlen,
                      ad.data(), ad.size(), nonce.data(), k_.data()) != 0) {
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
  const auto nonce = NoiseNonce(n_, cipher_);
  const std::size_t mlen = buffer.size() - kTagSize;
  unsigned long long maclen = 0;
  MURMUR_CHECK(SealOf(cipher_)(buffer.data(), buffer.data() + mlen, &maclen, buffer.data(), mlen, ad.data(),
                               ad.size(), nullptr, nonce.data(), k_.data()) == 0);
  ++n_;
  return Status::Ok();
}

Status CipherState::DecryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer) {
  if (buffer.size() < kTagSize) return ShorterThanTag(buffer.size());
  if (!has_key_) return Status::FailedPrecondition("in-place decryption needs a key");
  if (n_ == kMaxNonce) return NonceExhausted();
  const auto nonce = NoiseNonce(n_, cipher_);
  const std::size_t clen = buffer.size() - kTagSize;
  if (OpenOf(cipher_)(buffer.data(), nullptr, buffer.data(), clen, buffer.data() + clen, ad.data(), ad.size(),
                      nonce.data(), k_.data()) != 0)
    return Unauthentic(n_);
  ++n_;
  return Status::Ok();
}

void CipherState::Rekey() {
  MURMUR_CHECK(has_key_);
  std::array<std::uint8_t, kCipherKeySize> zeros{};
  std::array<std::uint8_t, kCipherKeySize + kTagSize> ct{};
  const auto nonce = NoiseNonce(kMaxNonce, cipher_);
  unsigned long long maclen = 0;
  MURMUR_CHECK(SealOf(cipher_)(ct.data(), ct.data() + kCipherKeySize, &maclen, zeros.data(), zeros.size(),
                               nullptr, 0, nullptr, nonce.data(), k_.data()) == 0);
  std::copy(ct.begin(), ct.begin() + kCipherKeySize, k_.begin());
  sodium_memzero(ct.data(), ct.size());
}

}  // namespace murmur::crypto
