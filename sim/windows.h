// RunWindows: a simulation spread over ranks, in conservative time windows.
//
// Every rank runs its own nodes' events. Each window starts at T, the earliest
// next event of any rank (an all-reduce), and ends before T + L, L being the
// lookahead (Simulator::Lookahead: the least time a message spends between
// two nodes). A message sent inside the window arrives at T + L or later, so
// it is never in its receiver's past: the ranks run their windows without
// talking, then swap the window's cross-rank messages (an all-to-all) and
// queue them. Events are keyed by what each node did (sim/event_queue.h), so
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

#include "sim/ranks.h"
#include "sim/simulator.h"

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

}  // namespace murmur::sim
