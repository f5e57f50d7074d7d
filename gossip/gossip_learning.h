// GossipLearningNode: asynchronous gossip learning (Ormandi, Hegedus and
// Jelasity, CCPE 2013; Hegedus, Danner and Jelasity, DAIS 2019), the
// AD-PSGD-like regime with no global round.
//
// Each node wakes on its own timer, sends its model and its age (the number
// of local steps behind it) to `fanout` peers, trains H local steps, and
// sleeps `period`; slow devices wake less often because their training takes
// longer in virtual time. A received model is merged at once:
//   x_i <- (a_i x_i + a_j x_j) / (a_i + a_j),  a_i <- max(a_i, a_j)
// with age weighting (Hegedus et al. 2019, "MergeAverage" weighted by age),
// or the plain average. Peers come from the graph's neighbours or, with
// `uniform_peers`, uniformly from all nodes (an ideal peer-sampling service),
// or, once SetPeerSampler is called, from a PeerSampler (gossip/peer_sampler.h:
// the alive members of a Membership view), which overrides both.
//
// murmurd bounds a node by its wake-ups (`max_wakeups`) rather than by a
// virtual-time horizon, and checkpoints the node's model, age and wake-ups
// done (ExportState: vector "x", scalars "age" and "wakeups", and the
// codec's state, gossip/node_state.h); ImportState before Start() resumes it.
//
// Thread-safety: as every gossip node, one Env executor.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "core/learner.h"
#include "core/round_observer.h"
#include "gossip/admission.h"
#include "gossip/codec.h"
#include "gossip/messages.h"
#include "gossip/node.h"
#include "gossip/node_state.h"
#include "gossip/peer_sampler.h"
#include "gossip/round_topology.h"

namespace murmur::gossip {

struct GossipLearningOptions {
  Nanos period = std::chrono::seconds(1);     // sleep between wake-ups
  Nanos horizon = std::chrono::seconds(100);  // no wake-up after this virtual time
  int local_steps = 1;
  int fanout = 1;
  bool age_weighted = true;
  bool uniform_peers = false;
  std::uint64_t max_wakeups = 0;  // no wake-up after this many (0: the horizon alone bounds them)
  // Hold the models received while the node trains and merge them when the
  // training is done, in arrival order (up to kMaxDeferred; more are
  // dropped). Needed where Env::Offload trains on another thread (murmurd's
  // AsioEnv), which must not race with a merge into the same model; the
  // simulator trains when the work is offloaded, so its merges meanwhile
  // already come after the training.
  bool defer_merges = false;
  // A received model farther than `plausibility` times ||x_i|| from the
  // receiver's own x_i is refused, as in D-PSGD (gossip/admission.h; 0: no
  // bound; the spec field `plausibility`).
  double plausibility = 10;
};

class GossipLearningNode final : public Node {
 public:
  // `topology` supplies neighbours unless options.uniform_peers; it may be null then.
  // REQUIRES: codec->full_model_safe().
  GossipLearningNode(Env& env, RoundTopology* topology, NodeId num_nodes, LocalLearner& learner,
                     ParamVector x0, std::unique_ptr<Codec> codec, GossipLearningOptions options,
                     RoundObserver* observer);

  void Start() override;
  void OnMessage(NodeId from, MessagePtr msg) override;
  // Draws each peer from `sampler` (not owned; must outlive the node); a wake-up
  // with no peer to draw sends nothing.
  void SetPeerSampler(PeerSampler* sampler) { sampler_ = sampler; }

  const ParamVector& params() const override { return x_; }
  double age() const { return age_; }
  std::uint64_t wakeups() const { return wakeups_; }
  std::uint64_t round() const override { return wakeups_; }
  std::size_t state_floats() const override { return x_.size(); }
  Result<NodeState> ExportState() const override;
  // REQUIRES: before Start().
  Status ImportState(const NodeState& state) override;

 private:
  static constexpr std::size_t kMaxDeferred = 256;

  void Wake();
  // `fanout` distinct peers (fewer when fewer are there), never this node.
  std::vector<NodeId> PickPeers();
  // One peer, uniform over the candidates other than this node. REQUIRES: one exists.
  NodeId PickPeer();
  // Merges a model from `from` unless admission_ refuses it.
  void Merge(NodeId from, const GossipMessage& m);

  Env& env_;
  RoundTopology* topology_;
  NodeId num_nodes_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  GossipLearningOptions options_;
  UpdateAdmission admission_;
  std::vector<float> scratch_;  // a coded model decoded to be judged
  RoundObserver* observer_;
  PeerSampler* sampler_ = nullptr;
  Rng rng_;
  ParamVector x_;
  double age_ = 0;
  std::uint64_t wakeups_ = 0;
  double loss_ = 0;
  bool training_ = false;
  std::vector<std::pair<NodeId, std::shared_ptr<const GossipMessage>>> deferred_;  // (sender, model)
};

}  // namespace murmur::gossip
