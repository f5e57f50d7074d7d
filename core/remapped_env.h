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
#include "core/env_wrapper.h"

namespace murmur {

class RemappedEnv final : public EnvWrapper {
 public:
  // REQUIRES: `peers` distinct.
  RemappedEnv(Env& base, std::vector<NodeId> peers) : EnvWrapper(&base), peers_(std::move(peers)) {}

  // A local id outside 0 .. peers.size() - 1 has nowhere to go and is dropped.
  void Send(NodeId to, MessagePtr msg) override {
    if (to < peers_.size()) EnvWrapper::Send(peers_[to], std::move(msg));
  }

 private:
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
