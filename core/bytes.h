// Fixed-width little-endian fields for wire encodings.
//
// murmur's wire formats are little-endian (docs/protocol.md); these copy a
// value's bytes as they are, which is correct on the little-endian hosts
// murmur supports (checked at compile time below).
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace murmur {

static_assert(std::endian::native == std::endian::little,
              "murmur's wire encodings assume a little-endian host");

// Appends the sizeof(T) bytes of `v`.
template <typename T>
void AppendLittleEndian(std::vector<std::uint8_t>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.insert(out.end(), b, b + sizeof(T));
}

// Reads a T from sizeof(T) bytes at `p`. REQUIRES: the caller checked the bounds.
template <typename T>
T ReadLittleEndian(const std::uint8_t* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace murmur
