// GossipAlgorithm: the synchronous gossip engine of a daemon's gossip job,
// built from the job config exactly as `murmur sim` builds it from the same
// scenario fields (sim/runner.cc, sim/world.cc), from the same gossip/
// classes:
//   dpsgd, dpsgd-cta   gossip::DecentralizedSgdNode; a sparsifying or other
//                      biased `compression` (topk:F, randk:F, sign, ...)
//                      makes it CHOCO-SGD with consensus step `gamma`
//                      (0: 1 for full-model codecs, 0.05 otherwise) and error
//                      feedback unless the spec says ",no-ef"
//   push-sum           gossip::PushSumNode on push-sum (column-stochastic) weights
//   dsgt               gossip::GradientTrackingNode
//   gossip-learning    gossip::GossipLearningNode (asynchronous: each node
//                      wakes every `period` s, sends its model and age to
//                      `fanout` peers, merges what it receives); its peers
//                      come from a JobPeerSampler over membership's view,
//                      not from `topology`, and `rounds` counts wake-ups
// the synchronous ones on the topology::MakeSchedule kind `topology`, static or time-varying (a
// time-varying one, e.g. one-peer-exponential, gives each round its graph;
// CHOCO needs a static one). The engine exports and imports its whole state
// (gossip/node_state.h) for checkpoints.
//
// Thread-safety: as the gossip nodes, on the job's Env executor.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/learner.h"
#include "core/param_vector.h"
#include "core/round_observer.h"
#include "core/status.h"
#include "gossip/node_state.h"
#include "gossip/peer_sampler.h"
#include "gossip/round_topology.h"
#include "proto/node.pb.h"
#include "topology/schedule.h"

namespace murmur::node {

// The gossip algorithms murmurd runs.
bool IsGossipJob(const std::string& algorithm);

// "ALGORITHM COMPRESSION": what a checkpoint records, so that a job never
// resumes from another algorithm's state.
std::string GossipStateTag(const proto::JobConfig& job);

// The job's topology: the schedule, the RoundTopology the node reads, and
// every peer this node may exchange with in any round.
struct JobTopology {
  std::unique_ptr<topology::Schedule> schedule;
  std::unique_ptr<gossip::RoundTopology> rounds;
  std::vector<NodeId> neighbours;
};
Result<JobTopology> MakeJobTopology(const proto::JobConfig& job, NodeId self);

class GossipAlgorithm {
 public:
  virtual ~GossipAlgorithm() = default;
  virtual MessageSink* sink() = 0;
  virtual void Start() = 0;
  virtual void PeersChanged() {}
  // The node's model (push-sum: the de-biased z = x / w).
  virtual const ParamVector& params() const = 0;
  // The next round the node runs.
  virtual std::uint64_t round() const = 0;
  virtual Result<gossip::NodeState> ExportState() const = 0;
  // REQUIRES: before Start(); the engine was made with first_round set.
  virtual Status ImportState(const gossip::NodeState& state) = 0;
  // gossip-learning: how often each node id was drawn as a peer (indexed by id); else empty.
  // Readable from any thread.
  virtual std::vector<std::uint64_t> peer_draws() const { return {}; }
};

// The peer-sampling service of a gossip-learning job on a daemon: Sample(k)
// draws min(k, alive) distinct peers uniformly (a partial Fisher-Yates
// shuffle, as membership::MembershipPeerSampler) from the job's members that the
// daemon's membership does not call dead or left (`peer_alive`; empty: all),
// ids 0 .. nodes-1 other than this node. Suspect members are still drawn:
// Lifeguard's suspicion may be refuted, and a message to a member that is
// really gone is only lost. Counts the draws per peer.
class JobPeerSampler final : public gossip::PeerSampler {
 public:
  JobPeerSampler(Env& env, NodeId nodes, std::function<bool(NodeId)> peer_alive);
  std::vector<NodeId> Sample(std::size_t k) override;
  std::vector<std::uint64_t> draws() const;

 private:
  NodeId self_;
  NodeId nodes_;
  std::function<bool(NodeId)> peer_alive_;
  Rng rng_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> draws_;
};

struct GossipAlgorithmInputs {
  Env* env = nullptr;
  gossip::RoundTopology* topology = nullptr;  // outlives the engine (unused by gossip-learning)
  LocalLearner* learner = nullptr;            // outlives the engine
  RoundObserver* observer = nullptr;          // outlives the engine
  std::uint64_t first_round = 0;
  // Membership's view (D-PSGD: a round does not wait for a dead neighbour;
  // gossip-learning: a dead peer is not drawn).
  std::function<bool(NodeId)> peer_alive;
};

// InvalidArgument naming the job field when the combination is not runnable
// (a compression the algorithm cannot send, CHOCO on a time-varying topology).
Result<std::unique_ptr<GossipAlgorithm>> MakeGossipAlgorithm(const proto::JobConfig& job, ParamVector x0,
                                                             GossipAlgorithmInputs in);

}  // namespace murmur::node
