// A group of Membership nodes on the simulator, for the membership tests:
// real Ed25519 keys, the simulator's latency and loss, and faults layered
// over each node's Env as decorators: a partition (messages between blocked
// pairs are dropped at the sender), a slow node (every message it receives
// is handled `slow` later, as on an overloaded machine), and the FaultyEnv
// (core/faulty_env.h) of every node, which applies faults() (empty: nothing).
#pragma once

#include <functional>
#include <memory>
#include <tuple>
#include <vector>

#include "core/faulty_env.h"
#include "membership/membership.h"
#include "membership/signer.h"
#include "sim/net/simulator.h"

namespace murmur::membership::testing {

inline crypto::Identity KeyOf(NodeId node) {
  std::array<std::uint8_t, crypto::kSignSeedSize> seed{};
  seed[0] = static_cast<std::uint8_t>(node);
  seed[1] = static_cast<std::uint8_t>(node >> 8);
  seed[2] = 0x3C;
  return crypto::Identity::FromSeed(seed);
}

struct MemberEvent {
  Nanos t;
  NodeId at;      // the node that observed
  NodeId member;  // the member it is about
  MemberState state;
};

class Cluster {
 public:
  // `n` nodes; all but node 0 join through seed 0. Nothing starts before Start().
  Cluster(NodeId n, MembershipOptions options, double loss, std::uint64_t seed);
  ~Cluster();

  void Start();
  void RunFor(Nanos d) { sim_.RunUntil(sim_.now() + d); }
  // Runs in steps of `step` until every node of `live` sees exactly the other
  // nodes of `live` alive, or `limit` passes. Returns the time it happened, or nullopt.
  std::optional<Nanos> RunUntilConverged(const std::vector<NodeId>& live, Nanos limit,
                                         Nanos step = std::chrono::milliseconds(100));
  bool Converged(const std::vector<NodeId>& live) const;

  // Stops `node` without a word and takes it off the network.
  void Crash(NodeId node);
  // While set, messages from a to b are dropped when blocked(a, b).
  void SetPartition(std::function<bool(NodeId, NodeId)> blocked) { blocked_ = std::move(blocked); }
  // Every message `node` receives is handled `delay` later.
  void SetSlow(NodeId node, Nanos delay) { slow_[node] = delay; }
  // The plan every node's FaultyEnv applies (partitions, drops, delays).
  FaultPlan& faults() { return plan_; }
  // `node` signs with `identity` instead of its own (an impostor).
  void SetSigningKey(NodeId node, const crypto::Identity& identity);

  // Messages of other kinds to node i go to `sink` (an algorithm sharing the node).
  void SetOtherSink(NodeId i, MessageSink* sink) { other_sinks_[i] = sink; }
  // Node i's Env (with the faults), for components that share the node.
  Env& env(NodeId i);
  // (time, from, to) of every message of another kind that was sent.
  const std::vector<std::tuple<Nanos, NodeId, NodeId>>& other_sends() const { return other_sends_; }

  Membership& node(NodeId i) { return *nodes_[i]; }
  const std::vector<MemberEvent>& events() const { return events_; }
  Nanos now() const { return sim_.now(); }
  NodeId size() const { return static_cast<NodeId>(nodes_.size()); }

 private:
  class FaultEnv;
  class Sink;
  class Recorder;

  sim::Simulator sim_;  // first: destroyed last
  KeyDirectory keys_;
  FaultPlan plan_;
  std::vector<std::unique_ptr<FaultyEnv>> faulty_;  // below envs_: destroyed after them
  std::vector<std::unique_ptr<Ed25519Signer>> signers_;
  std::vector<std::unique_ptr<FaultEnv>> envs_;
  std::vector<std::unique_ptr<Recorder>> recorders_;
  std::vector<std::unique_ptr<Membership>> nodes_;
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::function<bool(NodeId, NodeId)> blocked_;
  std::vector<Nanos> slow_;
  std::vector<MessageSink*> other_sinks_;
  std::vector<std::tuple<Nanos, NodeId, NodeId>> other_sends_;
  std::vector<MemberEvent> events_;
  MembershipOptions options_;
};

}  // namespace murmur::membership::testing
