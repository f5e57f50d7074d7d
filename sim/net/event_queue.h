// EventQueue: the simulator's pending events in virtual time.
//
// Events run in the order of their key (time, origin, sequence): `origin` is
// the node whose action scheduled the event (the sender of a message, the
// node that set a timer) or kWorldOrigin for the simulator's own events, and
// `sequence` counts the events that origin has scheduled. The key depends
// only on what each node did, never on how nodes are interleaved or spread
// over processes, so a run is the same for any thread count and any number of
// ranks (docs/simulator.md). At one instant the simulator's own events
// (kWorldOrigin, the largest id) come after every node's.
// Cancellation is lazy: a cancelled event stays queued and is skipped.
//
// Thread-safety: none; the simulator's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/env.h"

namespace murmur::sim {

inline constexpr NodeId kWorldOrigin = kNoNode;

struct EventKey {
  Nanos time;
  NodeId origin;
  std::uint64_t sequence;
  bool operator<(const EventKey& o) const {
    if (time != o.time) return time < o.time;
    if (origin != o.origin) return origin < o.origin;
    return sequence < o.sequence;
  }
};

class EventQueue {
 public:
  using EventId = std::uint64_t;

  // The next sequence number of `origin` (each call takes one).
  std::uint64_t NextSequence(NodeId origin);
  // The next number of `origin`'s own timeline: events that follow from the
  // node's own random stream alone (its churn), which every rank that must
  // know of them schedules alike. Counted apart, with the top bit set, they
  // come after the node's other events of the same instant.
  std::uint64_t NextTimelineSequence(NodeId origin);
  // Schedules `fn` at `at` for `origin`. Returns an id for Cancel.
  EventId Schedule(Nanos at, NodeId origin, std::function<void()> fn) {
    return Schedule(EventKey{at, origin, NextSequence(origin)}, std::move(fn));
  }
  // Schedules `fn` under a key taken before (NextSequence), here or on another rank.
  EventId Schedule(EventKey key, std::function<void()> fn);
  void Cancel(EventId id);

  bool empty() const { return heap_.size() == cancelled_.size(); }
  // Key of the next live event. REQUIRES: !empty().
  const EventKey& next_key();
  Nanos next_time() { return next_key().time; }
  // Removes the next live event and returns its key and callback. REQUIRES: !empty().
  std::pair<EventKey, std::function<void()>> Pop();
  std::size_t size() const { return heap_.size() - cancelled_.size(); }

 private:
  struct Event {
    EventKey key;
    EventId id;
    // std::priority_queue is a max-heap: "less" means later.
    bool operator<(const Event& o) const { return o.key < key; }
  };
  void SkipCancelled();

  std::priority_queue<Event> heap_;
  // Callbacks live beside the heap so the heap moves small records.
  std::unordered_map<EventId, std::function<void()>> callbacks_;
  std::unordered_set<EventId> cancelled_;
  std::vector<std::uint64_t> sequence_;           // per node origin
  std::vector<std::uint64_t> timeline_sequence_;  // per node origin
  std::uint64_t world_sequence_ = 0;
  EventId next_id_ = 1;
};

}  // namespace murmur::sim
