#include "crypto/hmac.h"

#include <sodium.h>

#include <bit>

namespace murmur::crypto {

Hash Blake2b(std::initializer_list<ByteSpan> parts) {
  EnsureSodium();
  crypto_generichash_state st;
  MURMUR_CHECK(crypto_generichash_init(&st, nullptr, 0, kHashLen) == 0);
  for (ByteSpan p : parts) MURMUR_CHECK(crypto_generichash_update(&st, p.data(), p.size()) == 0);
  Hash out{};
  MURMUR_CHECK(crypto_generichash_final(&st, out.data(), out.size()) == 0);
  return out;
}

Blake2bHasher::Blake2bHasher(std::size_t out_bytes) : out_bytes_(out_bytes) {
  static_assert(sizeof(crypto_generichash_state) <= sizeof(state_));
  MURMUR_CHECK(out_bytes >= 1 && out_bytes <= kHashLen);
  EnsureSodium();
  MURMUR_CHECK(crypto_generichash_init(reinterpret_cast<crypto_generichash_state*>(state_.data()), nullptr, 0,
                                       out_bytes_) == 0);
}

void Blake2bHasher::Update(ByteSpan piece) {
  MURMUR_CHECK(crypto_generichash_update(reinterpret_cast<crypto_generichash_state*>(state_.data()),
                                         piece.data(), piece.size()) == 0);
}

Bytes Blake2bHasher::Final() {
  auto* st = reinterpret_cast<crypto_generichash_state*>(state_.data());
  Bytes out(out_bytes_);
  MURMUR_CHECK(crypto_generichash_final(st, out.data(), out.size()) == 0);
  MURMUR_CHECK(crypto_generichash_init(st, nullptr, 0, out_bytes_) == 0);
  return out;
}

Hash HmacBlake2b(ByteSpan key, std::initializer_list<ByteSpan> message_parts) {
  std::array<std::uint8_t, kBlockLen> k0{};  // the key, zero-padded to one block
  if (key.size() > kBlockLen) {
    Hash hk = Blake2b({key});
    std::copy(hk.begin(), hk.end(), k0.begin());
  } else {
    std::copy(key.begin(), key.end(), k0.begin());
  }
  std::array<std::uint8_t, kBlockLen> ipad{}, opad{};
  for (std::size_t i = 0; i < kBlockLen; ++i) {
    ipad[i] = static_cast<std::uint8_t>(k0[i] ^ 0x36);
    opad[i] = static_cast<std::uint8_t>(k0[i] ^ 0x5c);
  }
  EnsureSodium();
  crypto_generichash_state st;
  MURMUR_CHECK(crypto_generichash_init(&st, nullptr, 0, kHashLen) == 0);
  MURMUR_CHECK(crypto_generichash_update(&st, ipad.data(), ipad.size()) == 0);
  for (ByteSpan p : message_parts) MURMUR_CHECK(crypto_generichash_update(&st, p.data(), p.size()) == 0);
  Hash inner{};
  MURMUR_CHECK(crypto_generichash_final(&st, inner.data(), inner.size()) == 0);
  Hash out = Blake2b({opad, inner});
  sodium_memzero(k0.data(), k0.size());
  sodium_memzero(ipad.data(), ipad.size());
  sodium_memzero(opad.data(), opad.size());
  return out;
}

void NoiseHkdf(const Hash& chaining_key, ByteSpan input_key_material, Hash* out1, Hash* out2, Hash* out3) {
  MURMUR_CHECK(out1 != nullptr && out2 != nullptr);
  Hash temp_key = HmacBlake2b(chaining_key, {input_key_material});
  static constexpr std::uint8_t kOne[1] = {0x01}, kTwo[1] = {0x02}, kThree[1] = {0x03};
  *out1 = HmacBlake2b(temp_key, {kOne});
  *out2 = HmacBlake2b(temp_key, {*out1, kTwo});
  if (out3 != nullptr) *out3 = HmacBlake2b(temp_key, {*out2, kThree});
  sodium_memzero(temp_key.data(), temp_key.size());
}

std::string ModelBlake2b(std::span<const float> params) {
  static_assert(std::endian::native == std::endian::little, "murmur's wire and digests are little-endian");
  return ToHex(
      Blake2b({ByteSpan(reinterpret_cast<const std::uint8_t*>(params.data()), params.size_bytes())}));
}

}  // namespace murmur::crypto
