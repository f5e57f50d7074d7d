#include "crypto/bytes.h"

#include <sodium.h>

#include <mutex>

namespace murmur::crypto {

void EnsureSodium() {
  static std::once_flag once;
  std::call_once(once, [] { MURMUR_CHECK_MSG(sodium_init() >= 0, "libsodium failed to initialize"); });
}

std::string ToHex(ByteSpan bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * bytes.size());
  for (std::uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

Result<Bytes> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0)
    return Status::InvalidArgument("hex string has odd length " + std::to_string(hex.size()));
  Bytes out(hex.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return Status::InvalidArgument("non-hex character at offset " +
                                     std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return out;
}

void AppendU8(Bytes* out, std::uint8_t v) { out->push_back(v); }
void AppendU16(Bytes* out, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void AppendU32(Bytes* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void AppendU64(Bytes* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void AppendBytes(Bytes* out, ByteSpan b) { out->insert(out->end(), b.begin(), b.end()); }

std::uint32_t LoadU32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

bool ByteReader::ReadSpan(std::size_t n, ByteSpan* out) {
  if (remaining() < n) return false;
  *out = data_.subspan(pos_, n);
  pos_ += n;
  return true;
}

bool ByteReader::ReadU8(std::uint8_t* v) {
  if (remaining() < 1) return false;
  *v = data_[pos_++];
  return true;
}

bool ByteReader::ReadU16(std::uint16_t* v) {
  ByteSpan s;
  if (!ReadSpan(2, &s)) return false;
  *v = static_cast<std::uint16_t>(s[0] | s[1] << 8);
  return true;
}

bool ByteReader::ReadU32(std::uint32_t* v) {
  ByteSpan s;
  if (!ReadSpan(4, &s)) return false;
  *v = LoadU32(s.data());
  return true;
}

bool ByteReader::ReadU64(std::uint64_t* v) {
  ByteSpan s;
  if (!ReadSpan(8, &s)) return false;
  std::uint64_t x = 0;
  for (int i = 7; i >= 0; --i) x = x << 8 | s[static_cast<std::size_t>(i)];
  *v = x;
  return true;
}

bool ConstantTimeEqual(ByteSpan a, ByteSpan b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace murmur::crypto
