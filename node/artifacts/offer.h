// The operator's end of an artifact transfer (docs/daemon.md "Artifacts";
// docs/protocol.md section 11): offer a file to a daemon and send it the
// chunks it lacks, from the first it does not hold, so that a transfer that
// broke resumes where it stopped and a daemon that has the file gets none.
//
// Thread-safety: one call per session at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "core/status.h"
#include "node/artifacts/artifact.h"
#include "node/control/client.h"

namespace murmur::node {

// Chunks sent ahead of their answers.
inline constexpr std::size_t kOfferWindow = 4;

// A file the operator offers: its manifest and where its bytes are.
struct LocalArtifact {
  ArtifactManifest manifest;
  std::string path;
};

struct OfferReport {
  std::uint64_t chunks_had = 0;  // chunks the daemon held before (all of them: it had the file)
  std::uint64_t chunks_sent = 0;
  std::uint64_t bytes_sent = 0;
  bool complete = false;  // the daemon stored and verified the whole file
};

// Offers `file` on `session` and sends the chunks the daemon asks for,
// stopping after `max_chunks` (a test's cut transfer). Each chunk read is
// checked against the manifest first (FailedPrecondition when the local file
// changed since it was described). The daemon's refusal comes back as
// FailedPrecondition with its words.
Result<OfferReport> OfferArtifact(ControlSession& session, const LocalArtifact& file,
                                  std::chrono::milliseconds timeout,
                                  std::uint64_t max_chunks = std::numeric_limits<std::uint64_t>::max());

}  // namespace murmur::node
