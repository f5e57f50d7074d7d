// RemappedEnv and RemappedSink: a node that numbers its peers 0 .. m-1
// running among nodes whose ids are arbitrary.
//
// A federated server addresses its clients as 0 .. num_clients - 1. In a
// hierarchy the top aggregator's "clients" are the edge aggregators, which
// live at other node ids. RemappedEnv is a decorator over any Env (as
// LevelDB's EnvWrapper): Send(i) goes to peers[i], everything else is the
// wrapped Env's. RemappedSink does the inverse on delivery: a message from
// peers[i] reaches the inner sink as coming from i; messages from any other
// node are dropped.
//
// Thread-safety: as the wrapped Env; the sink is called on the node's executor.
// Ownership: both keep references; the wrapped Env and inner sink must outlive them.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "core/env.h"

namespace murmur {

class RemappedEnv final : public Env {
 public:
  // REQUIRES: `peers` distinct.
  RemappedEnv(Env& base, std::vector<NodeId> peers) : base_(base), peers_(std::move(peers)) {}

  NodeId self() const override { return base_.self(); }
  Nanos Now() const override { return base_.Now(); }
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override {
    return base_.StartTimer(delay, std::move(fn));
  }
  void CancelTimer(TimerId id) override { base_.CancelTimer(id); }
  // A local id outside 0 .. peers.size() - 1 has nowhere to go and is dropped.
  void Send(NodeId to, MessagePtr msg) override {
    if (to < peers_.size()) base_.Send(peers_[to], std::move(msg));
  }
  Rng MakeRng(RngPurpose purpose) const override { return base_.MakeRng(purpose); }
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override {
    base_.Offload(flops, std::move(work), std::move(done));
  }

 private:
  Env& base_;
  std::vector<NodeId> peers_;
};

class RemappedSink final : public MessageSink {
 public:
  RemappedSink(MessageSink& inner, const std::vector<NodeId>& peers) : inner_(inner) {
    for (NodeId i = 0; i < peers.size(); ++i) local_.emplace(peers[i], i);
  }
  void OnMessage(NodeId from, MessagePtr msg) override {
    auto it = local_.find(from);
    if (it != local_.end()) inner_.OnMessage(it->second, std::move(msg));
  }

 private:
  MessageSink& inner_;
  std::unordered_map<NodeId, NodeId> local_;
};

}  // namespace murmur
