// JobPeerSampler: the peer-sampling service of a gossip-learning job on a
// daemon (a gossip::PeerSampler): Sample(k)
// draws min(k, alive) distinct peers uniformly (a partial Fisher-Yates
// shuffle, as membership::MembershipPeerSampler) from the node's candidate
// peers that the daemon's membership does not call dead or left
// (`peer_alive`; empty: all). The candidates are what the simulator's gossip
// learning draws from for the same spec: every other node of the job on
// `complete`, else the node's out-neighbours in the spec's (static) topology. Suspect members are still
// drawn: Lifeguard's suspicion may be refuted, and a message to a member that is really gone is only lost.
// Counts the draws per peer.
//
// Thread-safety: Sample on the job's executor; draws() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "core/env.h"
#include "gossip/peer_sampler.h"

namespace murmur::node {

class JobPeerSampler final : public gossip::PeerSampler {
 public:
  // `candidates`: distinct node ids below `nodes`, not this node's.
  JobPeerSampler(Env& env, NodeId nodes, std::vector<NodeId> candidates,
                 std::function<bool(NodeId)> peer_alive);
  std::vector<NodeId> Sample(std::size_t k) override;
  std::vector<std::uint64_t> draws() const;

 private:
  NodeId nodes_;
  std::vector<NodeId> candidates_;
  std::function<bool(NodeId)> peer_alive_;
  Rng rng_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> draws_;
};

}  // namespace murmur::node
