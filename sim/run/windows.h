// RunWindows: a simulation spread over ranks, in conservative time windows.
//
// Every rank runs its own nodes' events. Each window starts at T, the earliest
// next event of any rank (an all-reduce), and ends before T + L, L being the
// lookahead (Simulator::Lookahead: the least time a message spends between
// two nodes). A message sent inside the window arrives at T + L or later, so
// it is never in its receiver's past: the ranks run their windows without
// talking, then swap the window's cross-rank messages (an all-to-all) and
// queue them. Events are keyed by what each node did (sim/net/event_queue.h), so
// every node sees the same events in the same order as in one process, for
// any number of ranks (docs/simulator.md).
//
// One rank is the same loop without communication; with L = 0 (messages may
// arrive at the instant they are sent) it moves one instant at a time, which
// only one rank may do.
//
// Thread-safety: every rank calls it from the thread that drives its simulator.
#pragma once

#include <functional>

#include "core/status.h"
#include "sim/net/simulator.h"
#include "sim/ranks/ranks.h"
#include "sim/run/run_summary.h"

namespace murmur::sim {

struct WindowHooks {
  // The next time at which a window must end (the window then runs the
  // events at that time and stops just after it), or Nanos::max(). Every rank
  // must answer the same.
  std::function<Nanos()> next_barrier;
  // Called by every rank after each window, once every event before `end` has
  // run on every rank. Returning false on any rank... is not allowed to
  // differ: every rank must return the same (decide from all-reduced values).
  std::function<bool(Nanos end)> after_window;
};

// Why RunWindows returned, and after how many windows.
enum class WindowsEnd { kStopped, kNoEvents, kUntil, kInterrupted };
struct WindowsRun {
  WindowsEnd end;
  std::uint64_t windows;
};

// Runs windows until after_window returns false, no rank has events left, the
// next event is after `until`, or the simulator's interrupt flag is raised on
// some rank. REQUIRES: ranks.size() == sim.placement().ranks(), and a positive
// Lookahead() when there is more than one rank.
WindowsRun RunWindows(Simulator& sim, RankGroup& ranks, Nanos until, const WindowHooks& hooks);

// What no run spread over more than one rank can do: more ranks than
// `units` (nodes, or a federated run's clients), learners of the caller's
// (`own_learners`), messages that take no time (no lookahead). Ok on one rank.
Status CheckSpreadable(const Simulator& sim, RankGroup& ranks, std::uint64_t units,
                       const std::string& unit_name, bool own_learners);
// The refusal of what runs on one rank only: "WHAT runs on one rank only; ...".
Status OneRankOnly(const std::string& what);

// Where a run of RunWindows ended, the same on every rank: `stopped_at` when
// a hook stopped it, `until` when it ran to it, else the last event of any rank.
Nanos WhereRunEnded(const WindowsRun& run, Nanos until, Nanos stopped_at, const Simulator& sim,
                    RankGroup& ranks);

// Every rank's traffic totals summed, each rank's at the same instant.
TrafficTotals SumOverRanks(RankGroup& ranks, const TrafficTotals& mine);

// The end of a run spread over `ranks`: the summary's totals (FinishSummary,
// sim/run/evaluator.h), its virtual time `end`, the messages sent by its last
// point, the time windows, and the nodes' state, cross-rank traffic and the
// largest peak RSS over the ranks.
void FinishSpreadSummary(const Simulator& sim, RankGroup& ranks, const WindowsRun& run,
                         std::uint64_t rounds_done, double wall_s, Nanos end, std::uint64_t messages_sent,
                         RunSummary* summary);

}  // namespace murmur::sim
