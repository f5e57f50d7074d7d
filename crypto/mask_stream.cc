#include "crypto/mask_stream.h"

#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "crypto/bytes.h"

namespace murmur::crypto {

namespace {

constexpr std::size_t kWordsPerBlock = 16;  // a ChaCha20 block is 64 bytes
constexpr std::size_t kChunkWords = 4096;   // 16 KiB of keystream at a time

}  // namespace

void ChaCha20Words(const MaskSeed& key, const ChaChaNonce& nonce, std::uint64_t first_word,
                   std::span<std::uint32_t> out) {
  EnsureSodium();
  if (out.empty()) return;
  const std::uint64_t first_block = first_word / kWordsPerBlock;
  const std::size_t skip = first_word % kWordsPerBlock;
  const std::uint64_t last_block = (first_word + out.size() - 1) / kWordsPerBlock;
  MURMUR_CHECK(last_block <= 0xFFFFFFFFull);
  std::uint8_t block_bytes[kChunkWords * 4];
  std::size_t done = 0;
  std::uint64_t block = first_block;
  std::size_t offset = skip;  // words to skip in the first chunk
  while (done < out.size()) {
    // Whole chunks end on a block boundary, so the next chunk starts at `block`.
    const std::size_t want = std::min(kChunkWords, offset + (out.size() - done));
    const std::size_t blocks = (want + kWordsPerBlock - 1) / kWordsPerBlock;
    const std::size_t bytes = blocks * kWordsPerBlock * 4;
    std::memset(block_bytes, 0, bytes);
    MURMUR_CHECK(crypto_stream_chacha20_ietf_xor_ic(block_bytes, block_bytes, bytes, nonce.data(),
                                                    static_cast<std::uint32_t>(block), key.data()) == 0);
    const std::size_t n = want - offset;
    for (std::size_t i = 0; i < n; ++i) out[done + i] = LoadU32(block_bytes + 4 * (offset + i));
    done += n;
    block += blocks;
    offset = 0;
  }
  sodium_memzero(block_bytes, sizeof(block_bytes));
}

void ExpandMask(const MaskSeed& seed, std::span<std::uint32_t> out) {
  ChaCha20Words(seed, ChaChaNonce{}, 0, out);
}

void AddMask(const MaskSeed& seed, bool subtract, std::span<std::uint32_t> acc) {
  std::vector<std::uint32_t> chunk(std::min(kChunkWords, acc.size()));
  for (std::size_t start = 0; start < acc.size(); start += kChunkWords) {
    const std::size_t n = std::min(kChunkWords, acc.size() - start);
    ChaCha20Words(seed, ChaChaNonce{}, start, std::span<std::uint32_t>(chunk.data(), n));
    for (std::size_t i = 0; i < n; ++i)
      acc[start + i] = subtract ? acc[start + i] - chunk[i] : acc[start + i] + chunk[i];
  }
  sodium_memzero(chunk.data(), chunk.size() * sizeof(std::uint32_t));
}

}  // namespace murmur::crypto
