// ArtifactStore: the files jobs need, by content, under DATA_DIR/artifacts
// (docs/daemon.md "Artifacts").
//
// A complete artifact is the file named by its BLAKE2b-512 in hex. One being
// received is HASH.part (the chunks that verified, from the first on) beside
// HASH.manifest (the offer: its Artifact and chunk digests), so that a
// transfer broken by a lost connection or a restart resumes after the last
// whole chunk that still verifies. The last chunk's arrival hashes the whole
// file; only when that equals the name is it fsynced and renamed into place,
// so a reader sees a complete verified file or none.
//
// Bounds (NodeConfig artifact_max_bytes, artifact_store_max_bytes): an offer
// of a file over the first, or one that would take the store's bytes
// (complete files and the full size of each partial one) over the second, is
// refused with both numbers; at most kMaxPartialArtifacts are received at
// once.
//
// Thread-safety: every method takes the store's lock.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"
#include "node/artifacts/artifact.h"
#include "proto/control.pb.h"

namespace murmur::node {

inline constexpr std::size_t kMaxPartialArtifacts = 8;

struct ArtifactLimits {
  std::uint64_t max_file_bytes = std::uint64_t{4} << 30;
  std::uint64_t max_store_bytes = std::uint64_t{16} << 30;
};

class ArtifactStore {
 public:
  // Opens (creating) `dir`; complete files are counted, partial ones resume
  // when offered again, and leftover temporaries are removed.
  static Result<std::unique_ptr<ArtifactStore>> Open(const std::string& dir, ArtifactLimits limits);

  const std::string& dir() const { return dir_; }
  // The path of the complete artifact named `blake2b`, or "" when it is not here.
  std::string PathOf(const std::string& blake2b) const;
  // Hashes the stored file again: DataLoss naming both hashes when its bytes
  // changed since they were stored (the file is removed, so that the next
  // offer fetches it afresh); NotFound when it is not here.
  Status Verify(const proto::Artifact& artifact);

  // An offer (its manifest checked here): complete when the file is here
  // and still hashes to its name, else how many chunks of it are, from the
  // first (a stored file whose bytes changed is removed, and the state's
  // note names both hashes). InvalidArgument for a bad
  // manifest, ResourceExhausted over a bound.
  Result<proto::ArtifactState> Offer(const ArtifactManifest& offered);
  // Chunk `index` of an offered artifact, which must be the first it lacks
  // (FailedPrecondition otherwise, or when it was not offered). DataLoss when
  // the chunk's digest, or at the end the whole file's BLAKE2b, is not the
  // offered one, naming both (the chunk, or the whole partial file, is dropped).
  Result<proto::ArtifactState> Put(const std::string& blake2b, std::uint64_t index, crypto::ByteSpan data);

  // Chunk `index` of the complete file `blake2b` cut in chunks of
  // `chunk_bytes` (to serve another daemon's fetch): NotFound when the file
  // is not here whole, OutOfRange past its end.
  Result<std::string> ReadChunk(const std::string& blake2b, std::uint64_t index,
                                std::uint32_t chunk_bytes) const;
  // The state an offer of `blake2b` would answer now (complete, chunks held).
  proto::ArtifactState State(const std::string& blake2b) const;

  // Bytes of complete files and reserved by partial ones.
  std::uint64_t bytes_used() const;
  // Chunk bytes taken by Put since the store opened (uploaded or fetched).
  std::uint64_t bytes_received() const;
  std::uint64_t files_completed() const;
  // Offers, chunks and verifications refused.
  std::uint64_t refusals() const;

 private:
  struct Partial {
    ArtifactManifest manifest;
    std::uint64_t chunks_have = 0;
    std::uint64_t touched = 0;  // when last offered or added to (tick_): the oldest is dropped for room
    bool checked = false;       // chunks_have verified against the .part since the store opened
  };
  ArtifactStore(std::string dir, ArtifactLimits limits) : dir_(std::move(dir)), limits_(limits) {}
  std::string Path(const std::string& blake2b, const char* suffix) const;
  proto::ArtifactState StateOf(const std::string& blake2b) const;
  // How many whole chunks of HASH.part verify, truncating it there.
  Result<std::uint64_t> ResumePoint(const ArtifactManifest& m);
  Status Complete(Partial& p);
  std::uint64_t UsedLocked() const;
  void Drop(const std::string& blake2b);

  const std::string dir_;
  const ArtifactLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, std::uint64_t> complete_;  // name -> bytes
  std::map<std::string, Partial> partial_;
  std::map<std::string, std::uint64_t> received_;  // bytes taken per name (complete ones too)
  std::uint64_t bytes_received_ = 0, files_completed_ = 0, tick_ = 0, refusals_ = 0;
  // Counts a refusal on its way out.
  template <typename T>
  T Refused(T result) {
    if (!result.ok()) ++refusals_;
    return result;
  }
  Result<proto::ArtifactState> OfferLocked(const ArtifactManifest& offered);
  Result<proto::ArtifactState> PutLocked(const std::string& blake2b, std::uint64_t index,
                                         crypto::ByteSpan data);
  Status VerifyLocked(const proto::Artifact& artifact);
};

}  // namespace murmur::node
