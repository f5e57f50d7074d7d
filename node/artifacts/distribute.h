// The operator's way of giving a fleet a file (docs/daemon.md "Artifacts"):
// ask every daemon what it holds, upload the file to `uploads` daemons when
// none has it (node/artifacts/offer.h), then tell the others to fetch it
// from the daemons that hold it (node/artifacts/fetcher.h), each poll
// naming the daemons that hold it by then, so that the copies multiply
// through the fleet instead of all crossing the operator's uplink. A fetch
// that stops, or makes no progress for `stall`, falls back to the upload.
//
// Thread-safety: a function; one call per set of daemons at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "crypto/handshake.h"
#include "node/artifacts/offer.h"

namespace murmur::node {

struct FleetDaemon {
  std::string address;   // control port, HOST:PORT
  std::uint32_t id = 0;  // its node id
};

struct DistributeOptions {
  std::size_t uploads = 1;                      // daemons the operator uploads to when none has the file
  std::chrono::milliseconds timeout{10000};     // one control request
  std::chrono::milliseconds poll{200};          // between polls of the fetching daemons
  std::chrono::milliseconds stall{30000};       // no progress for this long: upload to the rest
  std::function<void(const std::string&)> say;  // what the daemons report (a copy found altered)
};

struct DistributeReport {
  std::size_t had = 0;       // daemons that held the file whole
  std::size_t uploaded = 0;  // daemons the operator uploaded to (resumed ones included)
  std::size_t fetched = 0;   // daemons that fetched it from other daemons
  std::size_t resumed = 0;   // uploads that went on from a broken transfer
  std::uint64_t bytes_uploaded = 0;
};

Result<DistributeReport> DistributeArtifact(const std::vector<FleetDaemon>& fleet,
                                            const crypto::Credentials& credentials,
                                            const crypto::TrustPolicy& policy, const LocalArtifact& file,
                                            const DistributeOptions& options);

}  // namespace murmur::node
