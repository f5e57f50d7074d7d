// Byte strings for the crypto module: hex text, little-endian integers, a
// bounds-checked reader for untrusted input, and libsodium start-up.
//
// Every wire and file format of murmur::crypto is little-endian. ByteReader
// never reads past its span: each read reports failure instead, so decoders
// built on it return a Status on truncated input and never allocate from an
// unchecked length.
//
// Thread-safety: free functions are thread-safe; a ByteReader is a value used
// by one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace murmur::crypto {

using Bytes = std::vector<std::uint8_t>;
using ByteSpan = std::span<const std::uint8_t>;

// Calls sodium_init() once per process; aborts when libsodium cannot start
// (no usable randomness source), which leaves nothing safe to do.
void EnsureSodium();

// Lowercase hex of `bytes`.
std::string ToHex(ByteSpan bytes);
// Parses hex (either case, no separators). InvalidArgument on odd length or a non-hex digit.
Result<Bytes> FromHex(std::string_view hex);
// Parses exactly N bytes of hex; InvalidArgument naming `what` otherwise.
template <std::size_t N>
Result<std::array<std::uint8_t, N>> FromHexFixed(std::string_view hex, std::string_view what) {
  if (hex.size() != 2 * N)
    return Status::InvalidArgument(std::string(what) + ": expected " + std::to_string(2 * N) +
                                   " hex digits, got " + std::to_string(hex.size()));
  MURMUR_ASSIGN_OR_RETURN(Bytes b, FromHex(hex));
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = b[i];
  return out;
}

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

void AppendU8(Bytes* out, std::uint8_t v);
void AppendU16(Bytes* out, std::uint16_t v);
void AppendU32(Bytes* out, std::uint32_t v);
void AppendU64(Bytes* out, std::uint64_t v);
void AppendBytes(Bytes* out, ByteSpan b);
std::uint32_t LoadU32(const std::uint8_t* p);

// Reads little-endian fields from untrusted bytes. Each Read* returns false
// (and leaves the output untouched) when fewer bytes remain than it needs.
class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}
  bool ReadU8(std::uint8_t* v);
  bool ReadU16(std::uint16_t* v);
  bool ReadU32(std::uint32_t* v);
  bool ReadU64(std::uint64_t* v);
  // A view of the next n bytes (no copy).
  bool ReadSpan(std::size_t n, ByteSpan* out);
  template <std::size_t N>
  bool ReadArray(std::array<std::uint8_t, N>* out) {
    ByteSpan s;
    if (!ReadSpan(N, &s)) return false;
    for (std::size_t i = 0; i < N; ++i) (*out)[i] = s[i];
    return true;
  }
  std::size_t remaining() const { return data_.size() - pos_; }
  std::size_t position() const { return pos_; }

 private:
  ByteSpan data_;
  std::size_t pos_ = 0;
};

// Constant-time equality of two equal-length byte strings (false when lengths differ).
bool ConstantTimeEqual(ByteSpan a, ByteSpan b);

}  // namespace murmur::crypto
