// HMAC-BLAKE2b and the Noise HKDF built on it.
//
// Noise (revision 34, section 4.3) defines HMAC by RFC 2104 over HASH, with
// BLOCKLEN 128 for BLAKE2b, and HKDF(chaining_key, input_key_material,
// num_outputs) with HASHLEN 64 outputs:
//   temp_key = HMAC(chaining_key, ikm)
//   output1  = HMAC(temp_key, 0x01)
//   output2  = HMAC(temp_key, output1 || 0x02)
//   output3  = HMAC(temp_key, output2 || 0x03)
// BLAKE2b's own keyed mode is a different function and must not be used here.
// HASH is unkeyed BLAKE2b-512 from libsodium (crypto_generichash).
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "crypto/bytes.h"

namespace murmur::crypto {

inline constexpr std::size_t kHashLen = 64;    // BLAKE2b-512
inline constexpr std::size_t kBlockLen = 128;  // BLAKE2b block

using Hash = std::array<std::uint8_t, kHashLen>;

// BLAKE2b-512 of the concatenation of the parts.
Hash Blake2b(std::initializer_list<ByteSpan> parts);

// A model's digest: the lowercase hex of BLAKE2b-512 over its float32
// parameters as little-endian bytes (what `b2sum` gives for them written
// raw). Two models with the same digest are equal bit for bit.
std::string ModelBlake2b(std::span<const float> params);

// BLAKE2b over bytes that come in pieces (a file read a chunk at a time),
// with an output of 1..64 bytes: Final() of 64 bytes equals Blake2b() of the
// pieces concatenated; a 32-byte output is BLAKE2b-256 (b2sum -l 256).
class Blake2bHasher {
 public:
  explicit Blake2bHasher(std::size_t out_bytes = kHashLen);
  void Update(ByteSpan piece);
  // The digest; the hasher starts over afterwards.
  Bytes Final();

 private:
  std::size_t out_bytes_;
  alignas(64) std::array<std::uint8_t, 384> state_;  // crypto_generichash_state, kept opaque here
};

// HMAC-BLAKE2b (RFC 2104). Keys longer than 128 bytes are hashed first.
Hash HmacBlake2b(ByteSpan key, std::initializer_list<ByteSpan> message_parts);

// Noise HKDF with two or three outputs. REQUIRES: num_outputs is 2 or 3 (out3 may be null for 2).
void NoiseHkdf(const Hash& chaining_key, ByteSpan input_key_material, Hash* out1, Hash* out2, Hash* out3);

}  // namespace murmur::crypto
