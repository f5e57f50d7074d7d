#include "sim/run/windows.h"

#include <algorithm>
#include <limits>

#include "core/check.h"
#include "sim/run/evaluator.h"

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

Status OneRankOnly(const std::string& what) {
  return Status::FailedPrecondition(what + " runs on one rank only; run it without mpirun (or with -np 1)");
}

Status CheckSpreadable(const Simulator& sim, RankGroup& ranks, std::uint64_t units,
                       const std::string& unit_name, bool own_learners) {
  if (ranks.size() == 1) return Status::Ok();
  if (static_cast<std::uint64_t>(ranks.size()) > units)
    return Status::InvalidArgument(std::to_string(ranks.size()) + " ranks for " + std::to_string(units) +
                                   " " + unit_name + ": use at most one rank per " +
                                   unit_name.substr(0, unit_name.size() - 1));
  if (own_learners) return OneRankOnly("a scenario with the caller's own learners");
  if (sim.Lookahead() == Nanos(0))
    return Status::InvalidArgument(
        "a run spread over ranks needs messages to take time: every device has 0 latency and latency_ms is 0 "
        "(set latency_ms > 0)");
  return Status::Ok();
}

Nanos WhereRunEnded(const WindowsRun& run, Nanos until, Nanos stopped_at, const Simulator& sim,
                    RankGroup& ranks) {
  if (run.end == WindowsEnd::kStopped) return stopped_at;
  if (run.end == WindowsEnd::kUntil) return until;
  std::int64_t last = sim.now().count();
  ranks.AllReduceMax(std::span(&last, 1));
  return Nanos(last);
}

TrafficTotals SumOverRanks(RankGroup& ranks, const TrafficTotals& mine) {
  std::uint64_t sums[5] = {mine.messages_sent, mine.bytes_sent, mine.bytes_received, mine.messages_lost,
                           mine.online};
  ranks.AllReduceSum(sums);
  return TrafficTotals{sums[0], sums[1], sums[2], sums[3], sums[4]};
}

void FinishSpreadSummary(const Simulator& sim, RankGroup& ranks, const WindowsRun& run,
                         std::uint64_t rounds_done, double wall_s, Nanos end, std::uint64_t messages_sent,
                         RunSummary* summary) {
  FinishSummary(sim, rounds_done, wall_s, summary);
  summary->virtual_s = std::chrono::duration<double>(end).count();
  summary->messages_sent = messages_sent;
  summary->windows = run.windows;
  std::uint64_t sums[3] = {summary->state_bytes, sim.cross_rank_messages(), sim.cross_rank_bytes()};
  ranks.AllReduceSum(sums);
  summary->state_bytes = sums[0];
  summary->cross_rank_messages = sums[1];
  summary->cross_rank_bytes = sums[2];
  ranks.AllReduceSum(summary->refused);
  auto rss = static_cast<std::int64_t>(summary->peak_rss_bytes);
  ranks.AllReduceMax(std::span(&rss, 1));
  summary->peak_rss_bytes = static_cast<std::uint64_t>(rss);
}

}  // namespace murmur::sim
