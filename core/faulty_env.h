// FaultyEnv: an Env decorator that injects network faults on Send.
//
// FaultyEnv wraps any Env (the simulator's SimEnv, the daemon's AsioEnv, a
// test's ManualEnv) and passes every call through except Send, where the
// FaultPlan (core/fault_plan.h) of the link (self, to) at the sender's Now()
// applies, in this order:
//   1. partition: a message across a partition is discarded;
//   2. drop: lost with probability `drop`;
//   3. corrupt: with probability `corrupt`, replaced by a CorruptedMessage
//      (core/corrupted_message.h) whose decoding the receiver must survive;
//   4. duplicate: with probability `duplicate`, sent twice;
//   5. reorder: with probability `reorder` the message (with its duplicate) is
//      held; it is released right after the next message to the same peer,
//      which thus overtakes it, or `reorder_hold` after it was held if none
//      comes. At most one message per link is held; a message sent while one
//      is held is never held itself;
//   6. delay: each copy reaches the target's Send `delay + U[0, jitter)` later
//      (a timer of the target Env).
// The faults sit above the transport: a dropped message costs no bytes, a
// duplicate costs its bytes twice, and the target's own behaviour (the
// simulator's link loss and latency, TCP) comes on top.
//
// Determinism: every draw comes from the stream MakeRng(RngPurpose::kFault)
// of the wrapped node, in the order of its Sends, and nothing else; a
// simulation with faults is therefore bit-identical for a seed. With a real
// transport the draws are the same for the same sequence of Sends, although
// the timing around them is not.
//
// Thread-safety: as the target Env: Send and the timers run on the node's
// executor. The plan and the target must outlive this env; destroying it
// cancels the timers it started (call it where the target allows
// CancelTimer).
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "core/env_wrapper.h"
#include "core/fault_plan.h"

namespace murmur {

struct FaultStats {
  std::uint64_t sent = 0;         // Send calls
  std::uint64_t partitioned = 0;  // discarded by a partition
  std::uint64_t dropped = 0;
  std::uint64_t corrupted = 0;   // corrupted copies sent (a duplicated one counts twice)
  std::uint64_t duplicated = 0;  // extra copies sent
  std::uint64_t reordered = 0;   // messages held back and overtaken (or released by the hold timer)
  std::uint64_t delayed = 0;     // copies given a positive delay
  FaultStats& operator+=(const FaultStats& o);
};

class FaultyEnv final : public EnvWrapper {
 public:
  FaultyEnv(Env* target, const FaultPlan* plan);
  ~FaultyEnv() override;
  FaultyEnv(const FaultyEnv&) = delete;
  FaultyEnv& operator=(const FaultyEnv&) = delete;

  void Send(NodeId to, MessagePtr msg) override;

  const FaultStats& stats() const { return stats_; }

 private:
  struct Held {
    MessagePtr msg;
    int copies = 1;
    LinkFaults faults;
    TimerId timer = 0;
  };

  void Forward(NodeId to, const MessagePtr& msg, int copies, const LinkFaults& f);
  void ReleaseHeld(NodeId to);
  TimerId Later(Nanos delay, std::function<void()> fn);

  const FaultPlan* plan_;
  Rng rng_;
  FaultStats stats_;
  std::map<NodeId, Held> held_;  // per receiver
  std::set<TimerId> timers_;     // started by this env and not yet fired
};

}  // namespace murmur
