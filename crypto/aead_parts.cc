#include "crypto/aead_parts.h"

#include <sodium.h>

#include <algorithm>
#include <array>

#include "crypto/aes_gcm.h"

namespace murmur::crypto {
namespace {

constexpr std::size_t kBlock = 64;  // ChaCha20 block

}  // namespace

AeadSlot::~AeadSlot() { sodium_memzero(key.data(), key.size()); }

void AeadSlot::Xor(std::size_t offset, const std::uint8_t* src, std::size_t len, std::uint8_t* dst) const {
  MURMUR_CHECK(RandomAccess());
  if (len == 0) return;
  const auto iv = NoiseNonce(nonce);
  // Block 0 keys Poly1305; message byte i uses block 1 + i / 64.
  std::uint64_t block = 1 + offset / kBlock;
  const std::size_t skip = offset % kBlock;
  if (skip != 0) {
    // A block entered in its middle: its keystream on the stack.
    std::array<std::uint8_t, kBlock> ks{};
    crypto_stream_chacha20_ietf_xor_ic(ks.data(), ks.data(), kBlock, iv.data(),
                                       static_cast<std::uint32_t>(block), key.data());
    const std::size_t n = std::min(len, kBlock - skip);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(src[i] ^ ks[skip + i]);
    sodium_memzero(ks.data(), ks.size());
    src += n;
    dst += n;
    len -= n;
    ++block;
  }
  if (len == 0) return;
  MURMUR_CHECK(block + (len + kBlock - 1) / kBlock <= (std::uint64_t{1} << 32));
  crypto_stream_chacha20_ietf_xor_ic(dst, src, len, iv.data(), static_cast<std::uint32_t>(block), key.data());
}

void AeadSlot::Tag(ByteSpan ciphertext, std::uint8_t tag[kTagSize]) const {
  const auto iv = NoiseNonce(nonce);
  std::array<std::uint8_t, kBlock> block0{};
  crypto_stream_chacha20_ietf(block0.data(), block0.size(), iv.data(), key.data());
  crypto_onetimeauth_poly1305_state state;
  crypto_onetimeauth_poly1305_init(&state, block0.data());
  static constexpr std::uint8_t kZeros[16] = {};
  crypto_onetimeauth_poly1305_update(&state, ciphertext.data(), ciphertext.size());
  crypto_onetimeauth_poly1305_update(&state, kZeros, (16 - ciphertext.size() % 16) % 16);
  std::uint8_t lengths[16] = {};  // le64(|ad| = 0) || le64(|ciphertext|)
  for (int i = 0; i < 8; ++i)
    lengths[8 + i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(ciphertext.size()) >> (8 * i));
  crypto_onetimeauth_poly1305_update(&state, lengths, sizeof(lengths));
  crypto_onetimeauth_poly1305_final(&state, tag);
  sodium_memzero(block0.data(), block0.size());
  sodium_memzero(&state, sizeof(state));
}

void AeadSlot::SealGather(std::span<const ByteSpan> parts, std::uint8_t* out) const {
  std::size_t n = 0;
  if (cipher == Cipher::kAesGcm) {
    for (ByteSpan p : parts) n += p.size();
    aes_gcm::Seal(key, NoiseNonce(nonce, cipher), {}, parts, out, out + n);
    return;
  }
  for (ByteSpan p : parts) {
    Xor(n, p.data(), p.size(), out + n);
    n += p.size();
  }
  Tag(ByteSpan(out, n), out + n);
}

bool AeadSlot::Open(std::span<std::uint8_t> message) const {
  if (message.size() < kTagSize) return false;
  const std::size_t clen = message.size() - kTagSize;
  if (cipher == Cipher::kAesGcm)
    return AeadOpenDetached(cipher, key, nonce, {}, message.data(), clen, message.data() + clen,
                            message.data());
  if (!Verify(message)) return false;
  Xor(0, message.data(), clen, message.data());
  return true;
}

bool AeadSlot::Verify(ByteSpan message) const {
  MURMUR_CHECK(RandomAccess());
  if (message.size() < kTagSize) return false;
  std::uint8_t tag[kTagSize];
  Tag(message.first(message.size() - kTagSize), tag);
  return crypto_verify_16(tag, message.data() + message.size() - kTagSize) == 0;
}

}  // namespace murmur::crypto
