// JobEnv: the Env one job of a daemon runs on. It forwards to the daemon's
// AsioEnv (clock, timers, transport, worker pool) with three differences:
// MakeRng draws from the job's seed (so a job's random streams are the ones
// the simulator gives the same job, whatever ran before it), Send wraps each
// message in a JobMessage with the job's tag (node/job/job_message.h), and Halt() cuts
// the job off: afterwards its timers and offloaded completions are dropped
// and its sends go nowhere, so a stopped job's node can stay alive (pending
// callbacks may still reference it) without acting.
//
// Thread-safety: as core::Env, on the daemon's io thread; `target` must
// outlive the JobEnv.
#pragma once

#include <memory>

#include "core/env.h"
#include "core/env_wrapper.h"
#include "node/job/job_message.h"

namespace murmur::node {

class JobEnv final : public EnvWrapper {
 public:
  // `tag`: the job's JobTag, carried by every message the job sends.
  JobEnv(Env& target, std::uint64_t seed, std::uint64_t tag) : EnvWrapper(&target), seed_(seed), tag_(tag) {}

  void Halt() { *halted_ = true; }
  bool halted() const { return *halted_; }

  TimerId StartTimer(Nanos delay, std::function<void()> fn) override {
    return EnvWrapper::StartTimer(delay, [halted = halted_, fn = std::move(fn)] {
      if (!*halted) fn();
    });
  }
  void Send(NodeId to, MessagePtr msg) override {
    if (!*halted_) EnvWrapper::Send(to, std::make_shared<const JobMessage>(tag_, std::move(msg)));
  }
  Rng MakeRng(RngPurpose purpose) const override { return Rng(seed_, self(), purpose); }
  void Offload(double flops, std::function<void()> work, std::function<void()> done) override {
    EnvWrapper::Offload(flops, std::move(work), [halted = halted_, done = std::move(done)] {
      if (!*halted) done();
    });
  }

 private:
  std::uint64_t seed_;
  std::uint64_t tag_;
  std::shared_ptr<bool> halted_ = std::make_shared<bool>(false);
};

}  // namespace murmur::node
