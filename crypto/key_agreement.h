// Key agreement and share encryption for secure aggregation.
//
// Each SecAgg client makes two X25519 key pairs per round (Bonawitz et al.
// 2017, round 0): (c^PK, c^SK) to encrypt the Shamir shares it sends its
// neighbours, and (s^PK, s^SK) for its pairwise masks. Two clients u, v agree
// on a 32-byte seed
//
//   seed = BLAKE2b-256(label || X25519(sk_u, pk_v) || min(pk_u, pk_v) || max(pk_u, pk_v) || round)
//
// (min/max bytewise, round as u64 little-endian), which both compute alike
// and which is fresh per round and per purpose. Hashing both public keys in
// (as libsodium's crypto_kx does) binds the seed to the pair. Shares travel as
// ChaCha20-Poly1305 (IETF, RFC 8439) ciphertexts under the "share" seed, with
// nonce (from u32, to u32, 0 u32) and associated data (round u64): a key is
// used once per direction, so a nonce never repeats under a key.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/handshake_state.h"
#include "crypto/mask_stream.h"

namespace murmur::crypto {

inline constexpr std::size_t kDhKeySize = 32;
inline constexpr std::size_t kSealOverhead = 16;  // the Poly1305 tag
using DhPublicKey = std::array<std::uint8_t, kDhKeySize>;
using DhSecretKey = std::array<std::uint8_t, kDhKeySize>;

inline constexpr std::string_view kMaskSeedLabel = "murmur secagg pairwise mask v1";
inline constexpr std::string_view kShareKeyLabel = "murmur secagg share key v1";

// DhKeyPair: the X25519 key pair of crypto/handshake_state.h (one type for
// both uses, so that headers including both agree on it).

// 32 bytes from the system's randomness (libsodium randombytes_buf).
MaskSeed RandomSeed();
// Fills `out` from the system's randomness (a relay circuit's tokens).
void FillRandom(std::span<std::uint8_t> out);

// The X25519 key pair whose secret is `secret` (RFC 7748; clamping happens in
// the scalar multiplication, so any 32 bytes will do).
DhKeyPair DhKeyPairFromSecret(const DhSecretKey& secret);

// The seed described above. InvalidArgument when `theirs` is a low-order
// point (the shared secret would be all zero and known to anyone).
Result<MaskSeed> AgreeSeed(const DhKeyPair& mine, const DhPublicKey& theirs, std::uint64_t round,
                           std::string_view label);

// ChaCha20-Poly1305 with the nonce and associated data described above;
// the output is plaintext.size() + kSealOverhead bytes.
Bytes SealShares(const MaskSeed& key, std::uint32_t from, std::uint32_t to, std::uint64_t round,
                 ByteSpan plaintext);
// Checks and decrypts; Unauthenticated when the tag does not match.
Result<Bytes> OpenShares(const MaskSeed& key, std::uint32_t from, std::uint32_t to, std::uint64_t round,
                         ByteSpan ciphertext);

}  // namespace murmur::crypto
