// Checkpoints of a gossip job: the model after a completed round.
//
//   offset  size  field (little-endian)
//   0       4     magic "MCKP"
//   4       4     version = 1
//   8       8     rounds completed
//   16      8     n, the number of parameters
//   24      4n    parameters, IEEE binary32
//   24+4n   4     CRC-32 (zlib) of bytes [0, 24+4n)
//
// Saved with crypto::WriteFileAtomic (temporary file, fsync, rename, fsync of
// the directory), so a crash at any moment leaves the previous checkpoint or
// the new one, never a torn file; the CRC catches a file damaged otherwise.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::node {

inline constexpr const char* kCheckpointFile = "checkpoint.bin";

struct Checkpoint {
  std::uint64_t round = 0;  // rounds completed
  std::vector<float> params;
};

std::vector<std::uint8_t> EncodeCheckpoint(const Checkpoint& c);
// DataLoss (truncated, bad CRC), InvalidArgument (magic, version) or
// FailedPrecondition (n differs from `expected_size`).
Result<Checkpoint> DecodeCheckpoint(std::span<const std::uint8_t> bytes, std::size_t expected_size);

Status SaveCheckpoint(const std::string& path, const Checkpoint& c);
// NotFound when there is none yet.
Result<Checkpoint> LoadCheckpoint(const std::string& path, std::size_t expected_size);

}  // namespace murmur::node
