// MakeGossipNode: the gossip node a JobSpec names, built once for both hosts
// (the simulator's runner and a daemon's gossip job) from the gossip/ classes:
//
//   dpsgd, dpsgd-cta   gossip::DecentralizedSgdNode (adapt-then-combine or
//                      combine-then-adapt); a sparsifying or other biased
//                      `compression` makes it CHOCO-SGD with consensus step
//                      `gamma` (0: 1 for full-model codecs, 0.05 otherwise),
//                      with error feedback unless the spec says ",no-ef";
//                      `gossip_aggregation` picks the mixing rule
//   diloco             the same node (adapt-then-combine) with DiLoCo's outer
//                      optimizer (`outer_optimizer`, `outer_lr`,
//                      `outer_momentum`, `outer_beta2`) after each round's
//                      mix; `local_steps` inner steps per round; whole
//                      models by default
//   allreduce,         gossip::RingAllReduceNode: exact averaging by a ring
//   diloco-allreduce   all-reduce among the n nodes in id order (topology
//                      ring) or in the order of the ring the topology is
//                      (link-aware-ring), without and with DiLoCo's outer
//                      step; with `groups` > 1, a ring in each group (its
//                      members in id order) and one mix of group means over
//                      `group_topology` between the halves (AllReduceGroupOf
//                      below); `overlap` overlaps it with the next round's
//                      local steps; a round
//                      timeout of 0 becomes 2 (n - 1) times the host's
//   push-sum           gossip::PushSumNode (column-stochastic weights, from
//                      engine/topology.h)
//   dsgt               gossip::GradientTrackingNode
//   gossip-learning    gossip::GossipLearningNode: peers from the host's
//                      PeerSampler when it gives one (a daemon: membership's
//                      view), else uniformly from all nodes on `complete`, else
//                      the topology's neighbours
//
// Every node starts from the same x0, its codec draws from Rng(seed, id,
// kCompression), and rounds, local steps and the round timeout come from the
// spec. What differs between hosts is only what GossipHost says: where time
// comes from (a daemon bounds gossip learning by wake-ups, the simulator by
// its virtual horizon), whether training runs on another thread while
// messages arrive, and a daemon's resume, catch-up and membership view.
//
// Thread-safety: a pure function; the node runs on host.env's executor.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/learner.h"
#include "core/param_vector.h"
#include "core/round_observer.h"
#include "core/status.h"
#include "engine/plan.h"
#include "gossip/collective_schedule.h"
#include "gossip/node.h"
#include "gossip/peer_sampler.h"
#include "gossip/round_topology.h"

namespace murmur::engine {

// A daemon's round timeout when the spec leaves it at 0: real links are not
// modelled, so a margin that tolerates slow devices and congested uplinks.
inline constexpr Nanos kDaemonRoundTimeout = std::chrono::seconds(30);

struct GossipHost {
  Env* env = nullptr;  // the node's Env; env->self() is its id
  gossip::RoundTopology* topology =
      nullptr;                      // outlives the node (gossip learning: may be null with peers or complete)
  LocalLearner* learner = nullptr;  // outlives the node
  RoundObserver* observer = nullptr;  // outlives the node (may be null)
  NodeId nodes = 0;                   // every node of the run (the simulator counts attached Byzantine ones)
  // What round_timeout 0 means here: the simulator fits it to its device and
  // link model, a daemon takes kDaemonRoundTimeout.
  Nanos auto_round_timeout = kDaemonRoundTimeout;
  // A daemon's resume: the rounds already done (gossip::*Options::first_round).
  std::uint64_t first_round = 0;
  // A daemon rejoins neighbours that went on without it (static topologies).
  bool catch_up = false;
  // A daemon's membership view: a round does not wait for a dead neighbour
  // (D-PSGD), a dead peer is not drawn (gossip learning). Empty: all alive.
  std::function<bool(NodeId)> peer_alive;
  // Gossip learning: where peers come from (null: uniform on complete, else
  // the topology). Not owned; outlives the node.
  gossip::PeerSampler* peers = nullptr;
  // Gossip learning: a daemon counts wake-ups (spec.rounds of them); the
  // simulator stops at the virtual time period x rounds.
  bool bound_by_wakeups = false;
  // Env::Offload trains on another thread while messages arrive (AsioEnv), so
  // received models wait until the training is done.
  bool concurrent_training = false;
  // Synchronous algorithms: the node is not told spec.rounds and runs on
  // until the host stops it (the simulator stops a run when the slowest node
  // finishes the last round, so that round sees the traffic a longer run
  // would give it). Off, the node stops after spec.rounds (a daemon). An
  // overlapped all-reduce (spec overlap) stops after spec.rounds either way:
  // its last round ends on the anchor, unlike a longer run's.
  bool open_ended = false;
  // Hierarchical all-reduce (spec groups > 1): each node's group, 0 ..
  // groups - 1, groups of equal size, indexed by node id; not owned. Null:
  // contiguous id blocks.
  const std::vector<std::uint32_t>* group_of = nullptr;
};

// REQUIRES: a gossip plan. Hierarchical all-reduce (spec groups > 1): node `self`'s group in id order
// (its ring), and its counterparts in the neighbouring groups of
// group_topology with their Metropolis-Hastings weights. `group_of` as in
// GossipHost (null: contiguous id blocks). InvalidArgument names the field.
struct AllReduceGroup {
  std::vector<NodeId> ring;
  std::vector<std::pair<NodeId, double>> cross;
  double cross_self = 0;
};
Result<AllReduceGroup> AllReduceGroupOf(const JobPlan& plan, NodeId self,
                                        const std::vector<std::uint32_t>* group_of = nullptr);
// Every node `self` exchanges with in that schedule: the positions of its
// ring the collective's steps name (the ring: its two neighbours) and its
// counterparts (a daemon keeps sessions to these).
std::vector<NodeId> AllReducePeers(const AllReduceGroup& group, NodeId self, gossip::Collective collective);

// The mean length of an all-reduce's messages over one round of every
// position, as a fraction of the model: what a dense fp32 run of the same
// schedule sends per message (the ring: 1 / m of a model for rings of m).
// Messages between groups are counted as the ring's. REQUIRES: a gossip plan.
double AllReduceMessageFraction(const JobPlan& plan);

// REQUIRES: a gossip plan (!plan.federated()).
Result<std::unique_ptr<gossip::Node>> MakeGossipNode(const JobPlan& plan, ParamVector x0,
                                                     const GossipHost& host);

}  // namespace murmur::engine
