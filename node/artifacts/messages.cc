#include "node/artifacts/messages.h"

#include "core/bytes.h"
#include "crypto/bytes.h"
#include "node/artifacts/artifact.h"

namespace murmur::node {

std::string HashHex(const RawHash& h) { return crypto::ToHex(crypto::ByteSpan(h.data(), h.size())); }

Result<RawHash> HashFromHex(const std::string& hex) {
  if (!IsBlake2bHex(hex)) return Status::InvalidArgument("not 128 lowercase hex digits");
  return crypto::FromHexFixed<64>(hex, "artifact hash");
}

void ArtifactRequestMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  out.insert(out.end(), hash_.begin(), hash_.end());
  AppendLittleEndian<std::uint64_t>(out, index_);
  AppendLittleEndian<std::uint32_t>(out, chunk_bytes_);
  AppendLittleEndian<std::uint32_t>(out, count_);
}

void ArtifactChunkMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  out.insert(out.end(), hash_.begin(), hash_.end());
  AppendLittleEndian<std::uint64_t>(out, index_);
  out.push_back(data_.empty() ? 1 : 0);
  out.insert(out.end(), data_.begin(), data_.end());
}

namespace {

Result<MessagePtr> DecodeRequest(std::span<const std::uint8_t> b) {
  if (b.size() != 80)
    return Status::InvalidArgument("artifact request of " + std::to_string(b.size()) + " bytes, not 80");
  RawHash h;
  std::copy(b.begin(), b.begin() + 64, h.begin());
  const auto index = ReadLittleEndian<std::uint64_t>(b.data() + 64);
  const auto chunk_bytes = ReadLittleEndian<std::uint32_t>(b.data() + 72);
  const auto count = ReadLittleEndian<std::uint32_t>(b.data() + 76);
  if (chunk_bytes < kMinArtifactChunkBytes || chunk_bytes > kMaxArtifactChunkBytes)
    return Status::InvalidArgument("artifact request for chunks of " + std::to_string(chunk_bytes) +
                                   " bytes");
  if (count < 1 || count > kMaxChunksPerRequest)
    return Status::InvalidArgument("artifact request for " + std::to_string(count) + " chunks, not 1.." +
                                   std::to_string(kMaxChunksPerRequest));
  if (index > (std::uint64_t{1} << 50) / kMinArtifactChunkBytes)
    return Status::InvalidArgument("artifact request for chunk " + std::to_string(index));
  return MessagePtr(std::make_shared<ArtifactRequestMessage>(h, index, chunk_bytes, count));
}

Result<MessagePtr> DecodeChunk(std::span<const std::uint8_t> b) {
  if (b.size() < 73)
    return Status::InvalidArgument("artifact chunk of " + std::to_string(b.size()) + " bytes");
  RawHash h;
  std::copy(b.begin(), b.begin() + 64, h.begin());
  const auto index = ReadLittleEndian<std::uint64_t>(b.data() + 64);
  const std::uint8_t status = b[72];
  const std::size_t n = b.size() - 73;
  if (status > 1) return Status::InvalidArgument("artifact chunk with status " + std::to_string(status));
  if ((status == 1) != (n == 0))
    return Status::InvalidArgument(status == 1 ? "artifact chunk 'missing' with data"
                                               : "artifact chunk without data");
  if (n > kMaxArtifactChunkBytes)
    return Status::InvalidArgument("artifact chunk of " + std::to_string(n) + " data bytes, over " +
                                   std::to_string(kMaxArtifactChunkBytes));
  return MessagePtr(std::make_shared<ArtifactChunkMessage>(
      h, index, std::string(reinterpret_cast<const char*>(b.data()) + 73, n)));
}

}  // namespace

DecoderTable ArtifactDecoders() {
  return {{kArtifactRequestKind, DecodeRequest}, {kArtifactChunkKind, DecodeChunk}};
}

}  // namespace murmur::node
