// A federated server's state in a job checkpoint (federated/server.h,
// "Resuming"; node/job/checkpoint.h): its scalars and wide vectors under the
// prefix "server/", but for the DP noise stream's, which stay off the disk.
//
// Thread-safety: pure functions.
#pragma once

#include "core/status.h"
#include "federated/server.h"
#include "node/job/checkpoint.h"

namespace murmur::node {

void PutServerState(const federated::ServerState& s, Checkpoint* c);
// NotFound when `c` holds no server state (a checkpoint of murmurd before version 3).
Result<federated::ServerState> GetServerState(const Checkpoint& c);

}  // namespace murmur::node
