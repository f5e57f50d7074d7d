// RoundObserver: how a node (gossip or federated) reports progress to whoever
// runs it (the simulator's scenario runner, the daemon's job runtime). It sits
// in core beside Env and LocalLearner, so that federated needs no gossip.
//
// Thread-safety: called from the node's executor (the event loop).
#pragma once

#include <cstdint>

#include "core/env.h"

namespace murmur {

class RoundObserver {
 public:
  virtual ~RoundObserver() = default;
  // `node` finished round `round` (0-based) with this mean training loss.
  virtual void OnRoundDone(NodeId node, std::uint64_t round, double train_loss) = 0;
};

}  // namespace murmur
