#include "sim/windows.h"

#include <algorithm>
#include <limits>

#include "core/check.h"

namespace murmur::sim {

WindowsRun RunWindows(Simulator& sim, RankGroup& ranks, Nanos until, const WindowHooks& hooks) {
  MURMUR_CHECK(ranks.size() == sim.placement().ranks());
  const Nanos lookahead = sim.Lookahead();
  MURMUR_CHECK(ranks.size() == 1 || lookahead > Nanos(0));
  constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();
  for (std::uint64_t windows = 0;; ++windows) {
    // The earliest next event of any rank, and whether any rank was interrupted.
    std::int64_t v[2] = {sim.NextEventTime().count(), sim.interrupted() ? 0 : 1};
    ranks.AllReduceMin(v);
    if (v[1] == 0) return {WindowsEnd::kInterrupted, windows};
    const std::int64_t t = v[0];
    const Nanos barrier = hooks.next_barrier ? hooks.next_barrier() : Nanos::max();
    if (t == kNever && (barrier == Nanos::max() || barrier > until)) return {WindowsEnd::kNoEvents, windows};
    if (t != kNever && Nanos(t) > until && barrier > until) return {WindowsEnd::kUntil, windows};
    std::int64_t end = kNever;
    if (t != kNever) {
      const std::int64_t step = std::max<std::int64_t>(lookahead.count(), 1);
      end = step >= kNever - t ? kNever : t + step;
    }
    if (until != Nanos::max()) end = std::min(end, until.count() + 1);
    if (barrier != Nanos::max() && barrier <= until) end = std::min(end, barrier.count() + 1);
    sim.RunBefore(Nanos(end));
    if (ranks.size() > 1) {
      std::vector<Bytes> in = ranks.AllToAll(sim.TakeOutbox());
      for (const Bytes& box : in) sim.Inject(box);
    }
    if (hooks.after_window && !hooks.after_window(Nanos(end))) return {WindowsEnd::kStopped, windows + 1};
  }
}

}  // namespace murmur::sim
