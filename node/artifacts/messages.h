// The messages daemons fetch artifacts from each other with
// (docs/protocol.md section 11, "From another daemon"): transport messages
// of their own kinds between certified daemons, outside any job.
//
//   request (kind 0x40): blake2b (64 bytes, raw) || u64 index || u32 chunk_bytes || u32 count
//     "send me chunks index .. index + count - 1 of the complete file
//      `blake2b` cut in chunks of chunk_bytes"; count 1..kMaxChunksPerRequest.
//   chunk (kind 0x41): blake2b (64) || u64 index || u8 status || data
//     status 0: data is the chunk (1 .. kMaxArtifactChunkBytes bytes);
//     status 1: the sender has no complete copy (data empty).
//
// Integers little-endian. The receiver checks each chunk against the
// digests of the manifest it was given, so a chunk from any peer is taken
// only when it is the file's.
//
// Thread-safety: immutable values; the decoders are pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/env.h"
#include "core/message_decoder.h"
#include "core/status.h"

namespace murmur::node {

inline constexpr std::uint32_t kArtifactRequestKind = 0x40;
inline constexpr std::uint32_t kArtifactChunkKind = 0x41;
inline constexpr std::uint32_t kMaxChunksPerRequest = 8;

using RawHash = std::array<std::uint8_t, 64>;

// The hex name of a raw hash and back (InvalidArgument unless 128 lowercase hex digits).
std::string HashHex(const RawHash& h);
Result<RawHash> HashFromHex(const std::string& hex);

class ArtifactRequestMessage final : public Message {
 public:
  ArtifactRequestMessage(const RawHash& hash, std::uint64_t index, std::uint32_t chunk_bytes,
                         std::uint32_t count)
      : hash_(hash), index_(index), chunk_bytes_(chunk_bytes), count_(count) {}
  std::uint32_t kind() const override { return kArtifactRequestKind; }
  std::size_t EncodedSize() const override { return 64 + 8 + 4 + 4; }
  void EncodeTo(std::vector<std::uint8_t>& out) const override;
  const RawHash& hash() const { return hash_; }
  std::uint64_t index() const { return index_; }
  std::uint32_t chunk_bytes() const { return chunk_bytes_; }
  std::uint32_t count() const { return count_; }

 private:
  RawHash hash_;
  std::uint64_t index_;
  std::uint32_t chunk_bytes_, count_;
};

class ArtifactChunkMessage final : public Message {
 public:
  // An empty `data` says the sender has no complete copy.
  ArtifactChunkMessage(const RawHash& hash, std::uint64_t index, std::string data)
      : hash_(hash), index_(index), data_(std::move(data)) {}
  std::uint32_t kind() const override { return kArtifactChunkKind; }
  std::size_t EncodedSize() const override { return 64 + 8 + 1 + data_.size(); }
  void EncodeTo(std::vector<std::uint8_t>& out) const override;
  const RawHash& hash() const { return hash_; }
  std::uint64_t index() const { return index_; }
  bool missing() const { return data_.empty(); }
  const std::string& data() const { return data_; }

 private:
  RawHash hash_;
  std::uint64_t index_;
  std::string data_;
};

// Decoders for the transport (node/transport/asio_env.h): sizes, counts,
// statuses and chunk sizes are checked; InvalidArgument names what is wrong.
DecoderTable ArtifactDecoders();

}  // namespace murmur::node
