// SimEnv: core::Env for one simulated node; a thin handle on the Simulator.
//
// Thread-safety: called only from the simulator's event loop.
#pragma once

#include "core/env.h"

namespace murmur::sim {

class Simulator;

class SimEnv final : public Env {
 public:
  SimEnv(Simulator* sim, NodeId self) : sim_(sim), self_(self) {}

  NodeId self() const override { return self_; }
  Nanos Now() const override;
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override;
  void CancelTimer(TimerId id) override;
  void Send(NodeId to, MessagePtr msg) override;
  Rng MakeRng(RngPurpose purpose) const override;
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override;
  void Refuse(NodeId from, Refusal why) override;

 private:
  Simulator* sim_;  // not owned; the Simulator owns this SimEnv
  NodeId self_;
};

}  // namespace murmur::sim
