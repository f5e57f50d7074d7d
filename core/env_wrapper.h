// EnvWrapper: an Env that forwards every call to a target Env.
//
// A decorator over the Env seam derives from EnvWrapper and overrides only
// what it changes, as LevelDB's EnvWrapper does for its file-system Env:
// FaultyEnv (core/faulty_env.h) overrides Send and leaves the clock, timers,
// randomness and Offload to the target. A new Env method gets its forwarding
// here, once, for every decorator.
//
// Thread-safety: that of the target; the wrapper adds no state.
#pragma once

#include "core/env.h"

namespace murmur {

class EnvWrapper : public Env {
 public:
  // `target` is not owned and must outlive the wrapper.
  explicit EnvWrapper(Env* target) : target_(target) {}

  Env* target() const { return target_; }

  NodeId self() const override { return target_->self(); }
  Nanos Now() const override { return target_->Now(); }
  TimerId StartTimer(Nanos delay, std::function<void()> fn) override {
    return target_->StartTimer(delay, std::move(fn));
  }
  void CancelTimer(TimerId id) override { target_->CancelTimer(id); }
  void Send(NodeId to, MessagePtr msg) override { target_->Send(to, std::move(msg)); }
  Rng MakeRng(RngPurpose purpose) const override { return target_->MakeRng(purpose); }
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override {
    target_->Offload(flops, std::move(work), std::move(done));
  }
  void Refuse(NodeId from, Refusal why) override { target_->Refuse(from, why); }

 private:
  Env* target_;
};

}  // namespace murmur
