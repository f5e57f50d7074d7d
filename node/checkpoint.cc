#include "node/checkpoint.h"

#include <zlib.h>

#include <cstring>

#include "crypto/bytes.h"
#include "crypto/file_io.h"

namespace murmur::node {

namespace {
constexpr std::size_t kHeader = 24;
std::uint32_t Crc(std::span<const std::uint8_t> b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed in pieces.
  while (!b.empty()) {
    const std::size_t n = std::min<std::size_t>(b.size(), 1u << 30);
    crc = crc32(crc, b.data(), static_cast<uInt>(n));
    b = b.subspan(n);
  }
  return static_cast<std::uint32_t>(crc);
}
}  // namespace

std::vector<std::uint8_t> EncodeCheckpoint(const Checkpoint& c) {
  crypto::Bytes out;
  out.reserve(kHeader + 4 * c.params.size() + 4);
  crypto::AppendBytes(&out, crypto::AsBytes("MCKP"));
  crypto::AppendU32(&out, 1);
  crypto::AppendU64(&out, c.round);
  crypto::AppendU64(&out, c.params.size());
  for (float f : c.params) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    crypto::AppendU32(&out, u);
  }
  crypto::AppendU32(&out, Crc(out));
  return out;
}

Result<Checkpoint> DecodeCheckpoint(std::span<const std::uint8_t> bytes, std::size_t expected_size) {
  if (bytes.size() < kHeader + 4)
    return Status::DataLoss("checkpoint of " + std::to_string(bytes.size()) + " bytes is truncated");
  if (std::memcmp(bytes.data(), "MCKP", 4) != 0)
    return Status::InvalidArgument("not a checkpoint (bad magic)");
  crypto::ByteReader r(bytes.subspan(4));
  crypto::ByteSpan version;
  std::uint64_t round = 0, n = 0;
  if (!r.ReadSpan(4, &version) || !r.ReadU64(&round) || !r.ReadU64(&n))
    return Status::DataLoss("checkpoint header truncated");
  if (crypto::LoadU32(version.data()) != 1) return Status::InvalidArgument("checkpoint version is not 1");
  if (n != expected_size)
    return Status::FailedPrecondition("checkpoint holds " + std::to_string(n) +
                                      " parameters, the model has " + std::to_string(expected_size));
  if (bytes.size() != kHeader + 4 * n + 4)
    return Status::DataLoss("checkpoint length does not match its parameter count");
  const std::size_t body = kHeader + 4 * n;
  if (crypto::LoadU32(bytes.data() + body) != Crc(bytes.first(body)))
    return Status::DataLoss("checkpoint CRC mismatch");
  Checkpoint c;
  c.round = round;
  c.params.resize(n);
  std::memcpy(c.params.data(), bytes.data() + kHeader, 4 * n);
  return c;
}

Status SaveCheckpoint(const std::string& path, const Checkpoint& c) {
  return crypto::WriteFileAtomic(path, EncodeCheckpoint(c), 0600);
}

Result<Checkpoint> LoadCheckpoint(const std::string& path, std::size_t expected_size) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, crypto::ReadSmallFile(path, kHeader + 4 * expected_size + 4));
  auto c = DecodeCheckpoint(crypto::AsBytes(text), expected_size);
  if (!c.ok()) return c.status().WithContext("checkpoint '" + path + "'");
  return c;
}

}  // namespace murmur::node
