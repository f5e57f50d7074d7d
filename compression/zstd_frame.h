// Optional zstd on top of an encoded update. Most updates are already dense in
// information (fp32/fp16 mantissas, delta varints), so zstd rarely pays;
// docs/compression.md has the measured ratios. A transport that wants it
// wraps the encoded bytes with ZstdCompress and unwraps with ZstdDecompress.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace murmur::compression {

// zstd frame of `data` at `level` (1..19), with its content size recorded.
std::vector<std::uint8_t> ZstdCompress(std::span<const std::uint8_t> data, int level = 3);

// The original bytes; DataLoss on a corrupt frame, ResourceExhausted when the
// declared content size exceeds max_size (checked before allocating).
Result<std::vector<std::uint8_t>> ZstdDecompress(std::span<const std::uint8_t> frame, std::size_t max_size);

}  // namespace murmur::compression
