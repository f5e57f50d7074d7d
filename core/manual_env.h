// ManualEnv: an Env for tests, with a clock that moves only when told to.
//
// Timers fire in (deadline, creation order) during AdvanceBy/AdvanceTo; sent
// messages are recorded in `outbox()` for the test to inspect or deliver.
// Several ManualEnvs can share one ManualClock to model a small network.
//
// Thread-safety: none; tests drive it from one thread.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "core/env.h"

namespace murmur {

class ManualEnv final : public Env {
 public:
  struct Sent {
    NodeId to;
    MessagePtr msg;
    Nanos at;  // the clock when it was sent
  };

  explicit ManualEnv(NodeId self = 0, std::uint64_t seed = 1) : self_(self), seed_(seed) {}

  NodeId self() const override { return self_; }
  Nanos Now() const override { return now_; }
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override;
  void CancelTimer(TimerId id) override;
  void Send(NodeId to, MessagePtr msg) override { outbox_.push_back({to, std::move(msg), now_}); }
  Rng MakeRng(RngPurpose purpose) const override { return Rng(seed_, self_, purpose); }
  void Refuse(NodeId from, Refusal why) override { refused_.push_back({from, why}); }

  // Moves the clock forward, firing every timer due on the way (including
  // timers that those callbacks start, if they fall due before the target).
  void AdvanceBy(Nanos d) { AdvanceTo(now_ + d); }
  void AdvanceTo(Nanos t);
  std::size_t pending_timers() const { return timers_.size(); }

  std::vector<Sent>& outbox() { return outbox_; }
  // Every Refuse call, in order.
  const std::vector<std::pair<NodeId, Refusal>>& refused() const { return refused_; }

 private:
  NodeId self_;
  std::uint64_t seed_;
  Nanos now_{0};
  TimerId next_id_ = 1;
  // Keyed by (deadline, id): ids increase, so equal deadlines fire in creation order.
  std::map<std::pair<Nanos, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, Nanos> deadline_of_;
  std::vector<Sent> outbox_;
  std::vector<std::pair<NodeId, Refusal>> refused_;
};

}  // namespace murmur
