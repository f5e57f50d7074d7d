// Checkpoints of a job: the model after a completed round and the whole
// state the job needs to resume, as named vectors and scalars: for gossip
// jobs gossip::NodeState and ml::MlLearnerState, for a federated aggregator
// federated::ServerState (its binary64 vectors, some not of the model's size,
// go to the wide vectors).
//
//   offset  size  field (little-endian)
//   0       4     magic "MCKP"
//   4       4     version = 4
//   8       8     rounds completed
//   16      8     n, the number of parameters
//   24      4n    parameters, IEEE binary32
//   then    4+a   algorithm: u32 length a (<= 64), then a bytes (the job's
//                 "ALGORITHM COMPRESSION", empty for a federated job)
//           4+j   job id: u32 length j (<= 64), then j bytes (version 4)
//           8     owner tag: the job's tag without its round count (node/job/job_store.h) (version 4)
//           4     V, the number of state vectors (<= kMaxCheckpointVectors)
//           V x   u32 name length L (1..64), L bytes of name, u64 m (= n),
//                 4m bytes of IEEE binary32
//           4     S, the number of scalars (<= kMaxCheckpointScalars)
//           S x   u32 name length L (1..64), L bytes of name, u64 bits of
//                 an IEEE binary64
//           4     W, the number of wide vectors (<= kMaxCheckpointVectors)
//           W x   u32 name length L (1..64), L bytes of name, u64 m
//                 (<= max(n, kMaxCheckpointWide)), 8m bytes of IEEE binary64
//   end-4   4     CRC-32 (zlib) of every byte before it
//
// A checkpoint belongs to one job: version 4 records its id and tag, and a
// job refuses one that is another job's (CheckCheckpointOwner). Version 3 is
// version 4 without them (the daemon kept one checkpoint for whichever job
// ran last) and is read as the job's that finds it; version 2 (murmurd
// before federated server state) is version 3 without the wide vectors. Version 1 (model only, murmurd
// before state checkpoints) is refused with an error that says so; a file
// without the magic is not a checkpoint.
// Saved with crypto::WriteFileAtomic (temporary file, fsync, rename, fsync of
// the directory), so a crash at any moment leaves the previous checkpoint or
// the new one, never a torn file; the CRC catches a file damaged otherwise.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::node {

inline constexpr const char* kCheckpointFile = "checkpoint.bin";
inline constexpr std::uint32_t kCheckpointVersion = 4;
inline constexpr std::size_t kMaxCheckpointVectors = 1024;
inline constexpr std::size_t kMaxCheckpointWide = std::size_t{1} << 20;  // a wide vector's size, if > n
inline constexpr std::size_t kMaxCheckpointScalars = 1024;
inline constexpr std::size_t kMaxCheckpointName = 64;

struct Checkpoint {
  std::uint64_t round = 0;  // rounds completed
  std::vector<float> params;
  std::string algorithm;                              // "" when not recorded
  std::string job_id;                                 // the job's; "" in a version 3 file
  std::uint64_t job_tag = 0;                          // its OwnerTag; 0 in a version 3 file
  std::map<std::string, std::vector<float>> vectors;  // each of params' size
  std::map<std::string, double> scalars;
  std::map<std::string, std::vector<double>> wide;  // binary64, of any size up to the limit above
};

// REQUIRES: names, algorithm, job id, counts and sizes within the limits
// above, every vector of params' size. Always writes version 4.
std::vector<std::uint8_t> EncodeCheckpoint(const Checkpoint& c);
// DataLoss (truncated, bad CRC), InvalidArgument (magic, version, a name,
// count or wide vector's size over its limit) or FailedPrecondition (n or a
// vector's size differs from `expected_size`).
Result<Checkpoint> DecodeCheckpoint(std::span<const std::uint8_t> bytes, std::size_t expected_size);

Status SaveCheckpoint(const std::string& path, const Checkpoint& c);

// FailedPrecondition naming both jobs when `c` is another job's than
// (job_id, job_tag): another id, or the same id with another configuration.
// A checkpoint without an owner (version 3) is taken as this job's.
Status CheckCheckpointOwner(const Checkpoint& c, const std::string& path, const std::string& job_id,
                            std::uint64_t job_tag);
// NotFound when there is none yet.
Result<Checkpoint> LoadCheckpoint(const std::string& path, std::size_t expected_size);

}  // namespace murmur::node
