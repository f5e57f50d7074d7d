#include "core/faulty_env.h"

#include "core/corrupted_message.h"

namespace murmur {

FaultStats& FaultStats::operator+=(const FaultStats& o) {
  sent += o.sent;
  partitioned += o.partitioned;
  dropped += o.dropped;
  corrupted += o.corrupted;
  duplicated += o.duplicated;
  reordered += o.reordered;
  delayed += o.delayed;
  return *this;
}

FaultyEnv::FaultyEnv(Env* target, const FaultPlan* plan)
    : EnvWrapper(target), plan_(plan), rng_(target->MakeRng(RngPurpose::kFault)) {}

FaultyEnv::~FaultyEnv() {
  for (TimerId id : timers_) target()->CancelTimer(id);
}

TimerId FaultyEnv::Later(Nanos delay, std::function<void()> fn) {
  // The id is known only after StartTimer returns; the callback looks it up
  // through a shared cell so it can forget itself when it fires.
  auto id = std::make_shared<TimerId>(0);
  *id = target()->StartTimer(delay, [this, id, fn = std::move(fn)] {
    timers_.erase(*id);
    fn();
  });
  timers_.insert(*id);
  return *id;
}

void FaultyEnv::Send(NodeId to, MessagePtr msg) {
  ++stats_.sent;
  const Nanos now = Now();
  if (plan_->Partitioned(self(), to, now)) {
    ++stats_.partitioned;
    return;
  }
  const LinkFaults f = plan_->FaultsFor(self(), to, now);
  if (f.drop > 0 && rng_.Bernoulli(f.drop)) {
    ++stats_.dropped;
    return;
  }
  const bool corrupt = f.corrupt > 0 && rng_.Bernoulli(f.corrupt);
  if (corrupt) msg = CorruptedMessage::Make(*msg, rng_, f.corrupt_flips, f.corrupt_max_cut);
  int copies = 1;
  if (f.duplicate > 0 && rng_.Bernoulli(f.duplicate)) {
    copies = 2;
    ++stats_.duplicated;
  }
  if (corrupt) stats_.corrupted += static_cast<std::uint64_t>(copies);
  if (held_.count(to) != 0) {
    // This message overtakes the held one, which follows it at once.
    Forward(to, msg, copies, f);
    ReleaseHeld(to);
    return;
  }
  if (f.reorder > 0 && rng_.Bernoulli(f.reorder)) {
    ++stats_.reordered;
    Held& h = held_[to];
    h.msg = std::move(msg);
    h.copies = copies;
    h.faults = f;
    h.timer = Later(f.reorder_hold, [this, to] {
      held_.at(to).timer = 0;
      ReleaseHeld(to);
    });
    return;
  }
  Forward(to, msg, copies, f);
}

void FaultyEnv::ReleaseHeld(NodeId to) {
  auto node = held_.extract(to);
  Held& h = node.mapped();
  if (h.timer != 0) {
    target()->CancelTimer(h.timer);
    timers_.erase(h.timer);
  }
  Forward(to, h.msg, h.copies, h.faults);
}

void FaultyEnv::Forward(NodeId to, const MessagePtr& msg, int copies, const LinkFaults& f) {
  for (int c = 0; c < copies; ++c) {
    Nanos d = f.delay;
    if (f.delay_jitter.count() > 0)
      d += Nanos(static_cast<std::int64_t>(rng_.Uniform() * static_cast<double>(f.delay_jitter.count())));
    if (d.count() <= 0) {
      target()->Send(to, msg);
      continue;
    }
    ++stats_.delayed;
    Later(d, [this, to, msg] { target()->Send(to, msg); });
  }
}

}  // namespace murmur
