// ArtifactFetcher: a daemon fetching an offered artifact from other daemons
// that hold it (docs/daemon.md "Artifacts", "From other daemons";
// docs/protocol.md section 11), so that the operator uploads a file once
// and the fleet spreads it.
//
// For each file it asks one source at a time for the chunks after the last
// it holds, up to `window` chunks ahead (kind 0x40 requests of at most
// kMaxChunksPerRequest chunks), and puts each chunk that arrives (kind 0x41)
// into the store, which checks it against its digest. A source that says it
// has no copy, sends an altered chunk, or sends nothing for `stall` is left
// for the next one (sources are tried in turn, starting at this daemon's id
// modulo their number, so that a fleet spreads over them); after every
// source failed `max_rounds` times the fetch stops with its reason, which
// the operator sees and answers by uploading the file itself.
//
// Thread-safety: runs on the Env's executor (the daemon's io thread), like
// every Env user; the store is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/env.h"
#include "node/artifacts/messages.h"
#include "node/artifacts/store.h"

namespace murmur::node {

struct FetcherOptions {
  Nanos stall = std::chrono::seconds(5);  // a source that sends nothing for this long is left
  std::uint32_t window = 16;              // chunks asked for ahead of the last one held
  int max_rounds = 3;                     // passes over all sources before the fetch stops
};

class ArtifactFetcher {
 public:
  ArtifactFetcher(Env& env, ArtifactStore& store, FetcherOptions options = {});
  ~ArtifactFetcher();
  ArtifactFetcher(const ArtifactFetcher&) = delete;
  ArtifactFetcher& operator=(const ArtifactFetcher&) = delete;

  // Starts fetching `m` (offered to the store first: Offer's refusals) from
  // `sources`, or gives a running fetch of it these sources. The state now,
  // its note saying what the fetch is doing or why it stopped.
  Result<proto::ArtifactState> Fetch(const ArtifactManifest& m, std::vector<NodeId> sources);
  // The same for a fetch already started (a stopped one starts again when
  // the sources changed): FailedPrecondition when none was.
  Result<proto::ArtifactState> Update(const std::string& blake2b, std::vector<NodeId> sources);
  void OnChunk(NodeId from, const ArtifactChunkMessage& chunk);

  std::uint64_t bytes_fetched() const { return bytes_fetched_; }

 private:
  struct Active {
    ArtifactManifest manifest;
    std::vector<NodeId> sources;
    std::size_t at = 0;           // the source asked now
    std::uint64_t requested = 0;  // chunks below this were asked for
    int switches = 0;             // sources left since the last progress
    TimerId timer = 0;
    bool stopped = false;
    std::string why;  // the last thing that went wrong
  };
  void Pump(Active& a);
  void Arm(Active& a);
  void NextSource(Active& a, std::string why);
  void Stop(Active& a, std::string why);
  proto::ArtifactState StateOf(const Active* a, const std::string& blake2b) const;
  // True when the list changed.
  bool SetSources(Active& a, std::vector<NodeId> sources);

  Env& env_;
  ArtifactStore& store_;
  FetcherOptions options_;
  std::map<std::string, Active> active_;
  std::atomic<std::uint64_t> bytes_fetched_{0};
};

}  // namespace murmur::node
