#include "crypto/key_agreement.h"

#include <sodium.h>

#include <algorithm>

#include "core/check.h"

namespace murmur::crypto {

namespace {

std::array<std::uint8_t, crypto_aead_chacha20poly1305_ietf_NPUBBYTES> NonceOf(std::uint32_t from,
                                                                              std::uint32_t to) {
  static_assert(crypto_aead_chacha20poly1305_ietf_NPUBBYTES == 12);
  std::array<std::uint8_t, 12> n{};
  for (int i = 0; i < 4; ++i) {
    n[i] = static_cast<std::uint8_t>(from >> (8 * i));
    n[4 + i] = static_cast<std::uint8_t>(to >> (8 * i));
  }
  return n;
}

std::array<std::uint8_t, 8> RoundBytes(std::uint64_t round) {
  std::array<std::uint8_t, 8> b{};
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(round >> (8 * i));
  return b;
}

}  // namespace

void FillRandom(std::span<std::uint8_t> out) {
  EnsureSodium();
  randombytes_buf(out.data(), out.size());
}

MaskSeed RandomSeed() {
  EnsureSodium();
  MaskSeed s{};
  randombytes_buf(s.data(), s.size());
  return s;
}

DhKeyPair DhKeyPairFromSecret(const DhSecretKey& secret) {
  EnsureSodium();
  DhKeyPair kp;
  kp.secret_key = secret;
  MURMUR_CHECK(crypto_scalarmult_base(kp.public_key.data(), kp.secret_key.data()) == 0);
  return kp;
}

Result<MaskSeed> AgreeSeed(const DhKeyPair& mine, const DhPublicKey& theirs, std::uint64_t round,
                           std::string_view label) {
  EnsureSodium();
  std::array<std::uint8_t, crypto_scalarmult_BYTES> shared{};
  if (crypto_scalarmult(shared.data(), mine.secret_key.data(), theirs.data()) != 0) {
    return Status::InvalidArgument("key agreement: the peer's X25519 key is a low-order point");
  }
  const bool mine_first = std::lexicographical_compare(mine.public_key.begin(), mine.public_key.end(),
                                                       theirs.begin(), theirs.end());
  const DhPublicKey& lo = mine_first ? mine.public_key : theirs;
  const DhPublicKey& hi = mine_first ? theirs : mine.public_key;
  const auto r = RoundBytes(round);
  crypto_generichash_state st;
  MaskSeed seed{};
  MURMUR_CHECK(crypto_generichash_init(&st, nullptr, 0, seed.size()) == 0);
  MURMUR_CHECK(
      crypto_generichash_update(&st, reinterpret_cast<const std::uint8_t*>(label.data()), label.size()) == 0);
  MURMUR_CHECK(crypto_generichash_update(&st, shared.data(), shared.size()) == 0);
  MURMUR_CHECK(crypto_generichash_update(&st, lo.data(), lo.size()) == 0);
  MURMUR_CHECK(crypto_generichash_update(&st, hi.data(), hi.size()) == 0);
  MURMUR_CHECK(crypto_generichash_update(&st, r.data(), r.size()) == 0);
  MURMUR_CHECK(crypto_generichash_final(&st, seed.data(), seed.size()) == 0);
  sodium_memzero(shared.data(), shared.size());
  return seed;
}

Bytes SealShares(const MaskSeed& key, std::uint32_t from, std::uint32_t to, std::uint64_t round,
                 ByteSpan plaintext) {
  EnsureSodium();
  Bytes out(plaintext.size() + kSealOverhead);
  const auto nonce = NonceOf(from, to);
  const auto ad = RoundBytes(round);
  unsigned long long len = 0;
  MURMUR_CHECK(crypto_aead_chacha20poly1305_ietf_encrypt(out.data(), &len, plaintext.data(), plaintext.size(),
                                                         ad.data(), ad.size(), nullptr, nonce.data(),
                                                         key.data()) == 0);
  MURMUR_CHECK(len == out.size());
  return out;
}

Result<Bytes> OpenShares(const MaskSeed& key, std::uint32_t from, std::uint32_t to, std::uint64_t round,
                         ByteSpan ciphertext) {
  EnsureSodium();
  if (ciphertext.size() < kSealOverhead) return Status::DataLoss("sealed shares: shorter than the tag");
  Bytes out(ciphertext.size() - kSealOverhead);
  const auto nonce = NonceOf(from, to);
  const auto ad = RoundBytes(round);
  unsigned long long len = 0;
  if (crypto_aead_chacha20poly1305_ietf_decrypt(out.data(), &len, nullptr, ciphertext.data(),
                                                ciphertext.size(), ad.data(), ad.size(), nonce.data(),
                                                key.data()) != 0) {
    return Status::Unauthenticated("sealed shares from node " + std::to_string(from) +
                                   ": authentication failed");
  }
  return out;
}

}  // namespace murmur::crypto
