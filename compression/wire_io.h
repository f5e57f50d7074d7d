// Little-endian byte writers and bounds-checked readers for the update wire
// format (docs/compression.md). Internal to murmur::compression.
//
// ByteReader never reads past its span: every Read* returns false instead, and
// the caller turns that into a Status naming the field.
//
// Thread-safety: values owned by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace murmur::compression::internal {

// Bytes of the LEB128 encoding of v (1 to 10).
inline std::size_t VarintSize(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

inline void PutVarint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

inline void PutBytes(std::vector<std::uint8_t>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

inline void PutU64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> data) : data_(data) {}

  std::size_t remaining() const { return data_.size() - pos_; }
  std::size_t position() const { return pos_; }

  bool ReadU8(std::uint8_t* v) {
    if (pos_ >= data_.size()) return false;
    *v = data_[pos_++];
    return true;
  }
  bool ReadU64(std::uint64_t* v) {
    if (remaining() < 8) return false;
    std::uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= static_cast<std::uint64_t>(data_[pos_ + i]) << (8 * i);
    pos_ += 8;
    *v = r;
    return true;
  }
  // LEB128; rejects encodings longer than 10 bytes or overflowing 64 bits.
  bool ReadVarint(std::uint64_t* v) {
    std::uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      std::uint8_t b = data_[pos_++];
      if (shift == 63 && b > 1) return false;
      r |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  // A view of the next n bytes. REQUIRES nothing: fails when fewer remain.
  bool ReadSpan(std::size_t n, std::span<const std::uint8_t>* out) {
    if (remaining() < n) return false;
    *out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }

 private:
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

}  // namespace murmur::compression::internal
