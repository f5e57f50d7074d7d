#include "sim/net/sim_env.h"

#include "sim/net/simulator.h"

namespace murmur::sim {

Nanos SimEnv::Now() const { return sim_->now(); }

TimerId SimEnv::StartTimer(Nanos delay, std::function<void()> fn) {
  return sim_->AtNode(self_, sim_->now() + delay, std::move(fn));
}

void SimEnv::CancelTimer(TimerId id) { sim_->queue_.Cancel(id); }

void SimEnv::Send(NodeId to, MessagePtr msg) { sim_->Send(self_, to, std::move(msg)); }

Rng SimEnv::MakeRng(RngPurpose purpose) const { return Rng(sim_->seed(), self_, purpose); }

void SimEnv::Offload(double flops, std::function<void()> work, std::function<void()> done) {
  sim_->Offload(self_, flops, std::move(work), std::move(done));
}

void SimEnv::Refuse(NodeId from, Refusal why) {
  (void)from;
  ++sim_->traffic_[self_].refused[static_cast<std::size_t>(why)];
}

}  // namespace murmur::sim
