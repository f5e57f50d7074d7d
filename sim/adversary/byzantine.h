// ByzantineCoalition: the Byzantine nodes of a gossip simulation.
//
// Each honest node runs on a TapEnv (sim/adversary/tap_env.h) that forwards everything
// to its SimEnv and shows the coalition every model it sends. Once the honest models an attack
// needs for round t have been sent (sim/adversary/gossip_attack.h says which), the
// coalition crafts the Byzantine models of round t and sends them from the
// Byzantine nodes' own Envs, so links, latency and bytes count as for anyone.
// Crafting runs on the event loop at the instant the last needed model is
// sent: the adversary is omniscient, colluding, and computes for free.
// Byzantine nodes never train and ignore what they receive; they take no
// part in evaluation.
//
// A round whose needed models never all arrive (a node offline) is dropped
// after kWindow rounds; the targets then time out, as they would with a
// silent neighbour.
//
// REQUIRES: a static topology W and whole models (a full-model codec).
// Thread-safety: event loop only. The Simulator and W must outlive the coalition.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/env.h"
#include "gossip/messages.h"
#include "sim/adversary/gossip_attack.h"
#include "sim/net/simulator.h"
#include "topology/mixing_matrix.h"

namespace murmur::sim {

class ByzantineCoalition final : public MessageSink {
 public:
  static constexpr std::uint64_t kWindow = 64;

  // `byzantine[i]` marks the Byzantine nodes. REQUIRES: params.kind != kNone,
  // byzantine.size() == w.size() == sim.num_nodes().
  ByzantineCoalition(Simulator& sim, const topology::MixingMatrix& w, std::vector<bool> byzantine,
                     AttackParams params);

  // Honest node `from` sent `msg` (called by its TapEnv on every Send).
  void Observe(NodeId from, const MessagePtr& msg);
  // Messages to Byzantine nodes end here.
  void OnMessage(NodeId, MessagePtr) override {}

  bool byzantine(NodeId i) const { return byzantine_[i]; }
  std::uint64_t models_crafted() const { return crafted_; }
  std::size_t rounds_held() const { return rounds_.size(); }

 private:
  // One crafted model per round: computed from `needs`, sent along `sends`.
  struct Job {
    NodeId target = kNoNode;  // the honest node it is aimed at (sign-flip: none)
    std::vector<NodeId> needs;
    std::vector<double> good_weights;  // W_ik of needs[1..] (target jobs)
    double byzantine_weight = 0;
    std::vector<std::pair<NodeId, NodeId>> sends;  // (Byzantine sender, honest receiver)
  };
  struct Round {
    std::map<NodeId, std::shared_ptr<const gossip::GossipMessage>> models;
    std::vector<std::uint32_t> arrived;  // per job
    std::size_t fired = 0;
  };
  void Fire(const Job& job, std::uint64_t round, const Round& r);

  Simulator& sim_;
  std::vector<bool> byzantine_;
  AttackParams params_;
  std::vector<Job> jobs_;
  std::vector<std::vector<std::size_t>> watchers_;  // node -> jobs that need its model
  static constexpr std::uint64_t kNoRound = ~std::uint64_t{0};
  std::vector<std::uint64_t> last_round_;  // node -> the last round it was seen sending
  std::map<std::uint64_t, Round> rounds_;
  std::uint64_t crafted_ = 0;
};

}  // namespace murmur::sim
