// gossip::Node: the one interface through which whoever hosts a gossip
// algorithm drives it: the simulator's scenario runner (sim/runner.h) and a
// daemon's gossip job (node/job/gossip_job.h). Implemented by
// DecentralizedSgdNode (D-PSGD, CHOCO-SGD and DiLoCo), RingAllReduceNode, PushSumNode, GradientTrackingNode
// and GossipLearningNode; engine::MakeGossipNode (engine/gossip_builder.h)
// builds the one a JobSpec names.
//
// A node is also the MessageSink its Env delivers to. Everything runs on the
// node's Env executor (core/env.h); the node reports finished rounds to its
// RoundObserver.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/env.h"
#include "core/param_vector.h"
#include "core/status.h"
#include "gossip/node_state.h"

namespace murmur::gossip {

class Node : public MessageSink {
 public:
  // Begins the first round (or, after ImportState, the round after the restored one).
  virtual void Start() = 0;
  // The host's membership view changed (a peer died or came back): a round
  // waiting for a neighbour may now be complete.
  virtual void PeersChanged() {}
  // The node's model (push-sum: the de-biased z = x / w).
  virtual const ParamVector& params() const = 0;
  // The next round the node runs (gossip learning: wake-ups done).
  virtual std::uint64_t round() const = 0;
  // The whole algorithm state after the last completed round
  // (gossip/node_state.h), for a checkpoint; ImportState restores it before
  // Start() (with the options' first_round set to the rounds it had done).
  virtual Result<NodeState> ExportState() const = 0;
  virtual Status ImportState(const NodeState& state) = 0;
  // Floats of model-sized state the node keeps (models, estimates, trackers,
  // residuals), for the memory the simulator reports.
  virtual std::size_t state_floats() const = 0;
  // The in-neighbours the current round waits for, ascending (empty: it
  // waits for none, or the algorithm does not say); for the operator's status.
  virtual std::vector<NodeId> WaitingFor() const { return {}; }
};

}  // namespace murmur::gossip
