// Mask expansion for secure aggregation: a 32-byte seed stretched into a
// stream of ring elements of Z_{2^32} by the ChaCha20 stream cipher.
//
// SecAgg (Bonawitz et al., CCS 2017, section 4) masks a client's input with
// PRG(b_u) (the self mask) and PRG(s_{u,v}) (one pairwise mask per
// neighbour); murmur's PRG is the IETF ChaCha20 keystream (RFC 8439 section
// 2.4, 96-bit nonce, 32-bit block counter starting at 0) of key = seed, read as
// little-endian uint32 words: word i is bytes 4i .. 4i+3 of the keystream. A
// word is uniform in Z_{2^32}, so a masked word is uniform whatever the input.
// One seed expands to at most 2^32 blocks (2^36 words); masks are far shorter.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace murmur::crypto {

inline constexpr std::size_t kMaskSeedSize = 32;
inline constexpr std::size_t kChaChaNonceSize = 12;
using MaskSeed = std::array<std::uint8_t, kMaskSeedSize>;
using ChaChaNonce = std::array<std::uint8_t, kChaChaNonceSize>;

// Writes words first_word .. first_word + out.size() - 1 of the ChaCha20
// keystream of (key, nonce) into `out`. REQUIRES: the words end within 2^32 blocks.
void ChaCha20Words(const MaskSeed& key, const ChaChaNonce& nonce, std::uint64_t first_word,
                   std::span<std::uint32_t> out);

// The mask PRG(seed) (nonce zero), words 0 .. out.size() - 1.
void ExpandMask(const MaskSeed& seed, std::span<std::uint32_t> out);

// acc[i] += PRG(seed)[i] (or -= when `subtract`), modulo 2^32, streaming the
// mask in blocks so that no mask-sized buffer is allocated.
void AddMask(const MaskSeed& seed, bool subtract, std::span<std::uint32_t> acc);

}  // namespace murmur::crypto
