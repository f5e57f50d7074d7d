#include "crypto/symmetric_state.h"

#include <sodium.h>

#include <algorithm>

namespace murmur::crypto {
namespace {

CipherKey Truncate(const Hash& h) {
  CipherKey k{};
  std::copy(h.begin(), h.begin() + kCipherKeySize, k.begin());
  return k;
}

}  // namespace

SymmetricState::SymmetricState(std::string_view protocol_name, Cipher cipher) : cipher_(cipher) {
  if (protocol_name.size() <= kHashLen) {
    std::copy(protocol_name.begin(), protocol_name.end(), h_.begin());
  } else {
    h_ = Blake2b({AsBytes(protocol_name)});
  }
  ck_ = h_;
}

SymmetricState::~SymmetricState() { sodium_memzero(ck_.data(), ck_.size()); }

void SymmetricState::MixKey(ByteSpan input_key_material) {
  Hash new_ck{}, temp_k{};
  NoiseHkdf(ck_, input_key_material, &new_ck, &temp_k, nullptr);
  ck_ = new_ck;
  cipher_.InitializeKey(Truncate(temp_k));
  sodium_memzero(temp_k.data(), temp_k.size());
  sodium_memzero(new_ck.data(), new_ck.size());
}

void SymmetricState::MixHash(ByteSpan data) { h_ = Blake2b({h_, data}); }

Status SymmetricState::EncryptAndHash(ByteSpan plaintext, Bytes* out) {
  const std::size_t start = out->size();
  MURMUR_RETURN_IF_ERROR(cipher_.EncryptWithAd(h_, plaintext, out));
  MixHash(ByteSpan(*out).subspan(start));
  return Status::Ok();
}

Status SymmetricState::DecryptAndHash(ByteSpan ciphertext, Bytes* out) {
  MURMUR_RETURN_IF_ERROR(cipher_.DecryptWithAd(h_, ciphertext, out));
  MixHash(ciphertext);
  return Status::Ok();
}

std::pair<CipherState, CipherState> SymmetricState::Split() const {
  Hash k1{}, k2{};
  NoiseHkdf(ck_, {}, &k1, &k2, nullptr);
  std::pair<CipherState, CipherState> out{CipherState(cipher_.cipher()), CipherState(cipher_.cipher())};
  out.first.InitializeKey(Truncate(k1));
  out.second.InitializeKey(Truncate(k2));
  sodium_memzero(k1.data(), k1.size());
  sodium_memzero(k2.data(), k2.size());
  return out;
}

}  // namespace murmur::crypto
