// PeerSampler: how a gossip algorithm picks the peers it talks to when it has
// no fixed topology (asynchronous gossip learning). Implemented over a
// membership view (membership/peer_sampler.h) and over a daemon job's members
// (node/job/job_peer_sampler.h); the simulator uses the topology instead.
//
// Thread-safety: the Env's executor only.
#pragma once

#include <cstddef>
#include <vector>

#include "core/env.h"

namespace murmur::gossip {

class PeerSampler {
 public:
  virtual ~PeerSampler() = default;
  // Up to k distinct peers, never this node.
  virtual std::vector<NodeId> Sample(std::size_t k) = 0;
};

}  // namespace murmur::gossip
