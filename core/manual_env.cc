#include "core/manual_env.h"

#include "core/check.h"

namespace murmur {

TimerId ManualEnv::StartTimer(Nanos delay, std::function<void()> fn) {
  MURMUR_CHECK(delay.count() >= 0);
  TimerId id = next_id_++;
  timers_.emplace(std::make_pair(now_ + delay, id), std::move(fn));
  deadline_of_.emplace(id, now_ + delay);
  return id;
}

void ManualEnv::CancelTimer(TimerId id) {
  auto it = deadline_of_.find(id);
  if (it == deadline_of_.end()) return;
  timers_.erase({it->second, id});
  deadline_of_.erase(it);
}

void ManualEnv::AdvanceTo(Nanos t) {
  MURMUR_CHECK(t >= now_);
  while (!timers_.empty() && timers_.begin()->first.first <= t) {
    auto node = timers_.extract(timers_.begin());
    now_ = node.key().first;
    deadline_of_.erase(node.key().second);
    node.mapped()();
  }
  now_ = t;
}

}  // namespace murmur
