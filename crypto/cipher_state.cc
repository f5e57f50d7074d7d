#include "crypto/cipher_state.h"

#include <sodium.h>

namespace murmur::crypto {

std::array<std::uint8_t, 12> NoiseNonce(std::uint64_t n) {
  std::array<std::uint8_t, 12> nonce{};
  for (int i = 0; i < 8; ++i)
    nonce[4 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  return nonce;
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
  if (n_ == kMaxNonce) return Status::ResourceExhausted("cipher nonce exhausted (2^64-1 messages)");
  const std::size_t start = out->size();
  out->resize(start + plaintext.size() + kTagSize);
  auto nonce = NoiseNonce(n_);
  unsigned long long clen = 0;
  MURMUR_CHECK(crypto_aead_chacha20poly1305_ietf_encrypt(out->data() + start, &clen, plaintext.data(),
                                                         plaintext.size(), ad.data(), ad.size(), nullptr,
                                                         nonce.data(), k_.data()) == 0);
  MURMUR_CHECK(clen == plaintext.size() + kTagSize);
  ++n_;
  return Status::Ok();
}

Status CipherState::DecryptWithAd(ByteSpan ad, ByteSpan ciphertext, Bytes* out) {
  if (!has_key_) {
    AppendBytes(out, ciphertext);
    return Status::Ok();
  }
  if (n_ == kMaxNonce) return Status::ResourceExhausted("cipher nonce exhausted (2^64-1 messages)");
  if (ciphertext.size() < kTagSize)
    return Status::DataLoss("ciphertext of " + std::to_string(ciphertext.size()) +
                            " bytes is shorter than the " + std::to_string(kTagSize) + "-byte tag");
  const std::size_t start = out->size();
  out->resize(start + ciphertext.size() - kTagSize);
  auto nonce = NoiseNonce(n_);
  unsigned long long mlen = 0;
  if (crypto_aead_chacha20poly1305_ietf_decrypt(out->data() + start, &mlen, nullptr, ciphertext.data(),
                                                ciphertext.size(), ad.data(), ad.size(), nonce.data(),
                                                k_.data()) != 0) {
    out->resize(start);
    return Status::Unauthenticated("authentication failed at nonce " + std::to_string(n_) +
                                   " (tampered, replayed, reordered or wrong key)");
  }
  ++n_;
  return Status::Ok();
}

Status CipherState::EncryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer) {
  if (buffer.size() < kTagSize)
    return Status::DataLoss("buffer of " + std::to_string(buffer.size()) + " bytes has no room for the tag");
  if (!has_key_) return Status::FailedPrecondition("in-place encryption needs a key");
  if (n_ == kMaxNonce) return Status::ResourceExhausted("cipher nonce exhausted (2^64-1 messages)");
  auto nonce = NoiseNonce(n_);
  const std::size_t mlen = buffer.size() - kTagSize;
  unsigned long long maclen = 0;
  MURMUR_CHECK(crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                   buffer.data(), buffer.data() + mlen, &maclen, buffer.data(), mlen, ad.data(), ad.size(),
                   nullptr, nonce.data(), k_.data()) == 0);
  ++n_;
  return Status::Ok();
}

Status CipherState::DecryptInPlace(ByteSpan ad, std::span<std::uint8_t> buffer) {
  if (buffer.size() < kTagSize)
    return Status::DataLoss("ciphertext of " + std::to_string(buffer.size()) + " bytes is shorter than the " +
                            std::to_string(kTagSize) + "-byte tag");
  if (!has_key_) return Status::FailedPrecondition("in-place decryption needs a key");
  if (n_ == kMaxNonce) return Status::ResourceExhausted("cipher nonce exhausted (2^64-1 messages)");
  auto nonce = NoiseNonce(n_);
  const std::size_t clen = buffer.size() - kTagSize;
  if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(buffer.data(), nullptr, buffer.data(), clen,
                                                         buffer.data() + clen, ad.data(), ad.size(),
                                                         nonce.data(), k_.data()) != 0) {
    return Status::Unauthenticated("authentication failed at nonce " + std::to_string(n_) +
                                   " (tampered, replayed, reordered or wrong key)");
  }
  ++n_;
  return Status::Ok();
}

void CipherState::Rekey() {
  MURMUR_CHECK(has_key_);
  std::array<std::uint8_t, kCipherKeySize> zeros{};
  std::array<std::uint8_t, kCipherKeySize + kTagSize> ct{};
  auto nonce = NoiseNonce(kMaxNonce);
  unsigned long long clen = 0;
  MURMUR_CHECK(crypto_aead_chacha20poly1305_ietf_encrypt(ct.data(), &clen, zeros.data(), zeros.size(),
                                                         nullptr, 0, nullptr, nonce.data(), k_.data()) == 0);
  std::copy(ct.begin(), ct.begin() + kCipherKeySize, k_.begin());
  sodium_memzero(ct.data(), ct.size());
}

}  // namespace murmur::crypto
