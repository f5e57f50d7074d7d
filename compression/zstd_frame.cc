#include "compression/zstd_frame.h"

#include <string>

#include <zstd.h>

namespace murmur::compression {

std::vector<std::uint8_t> ZstdCompress(std::span<const std::uint8_t> data, int level) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(data.size()));
  std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), level);
  MURMUR_CHECK(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

Result<std::vector<std::uint8_t>> ZstdDecompress(std::span<const std::uint8_t> frame, std::size_t max_size) {
  unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    return Status::DataLoss("zstd frame without a valid content size");
  if (size > max_size)
    return Status::ResourceExhausted("zstd content size " + std::to_string(size) + " over limit " +
                                     std::to_string(max_size));
  std::vector<std::uint8_t> out(size);
  std::size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != size) return Status::DataLoss("corrupt zstd frame");
  return out;
}

}  // namespace murmur::compression
