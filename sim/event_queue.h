// EventQueue: the simulator's pending events in virtual time.
//
// Events run in (time, sequence) order; the sequence number is assigned at
// scheduling, so events due at the same instant run in the order they were
// scheduled. That order, and nothing about threads, decides what happens
// first, which is what makes a simulation reproducible from its seed.
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

class EventQueue {
 public:
  using EventId = std::uint64_t;

  // Schedules `fn` at absolute virtual time `at`. Returns an id for Cancel.
  EventId Schedule(Nanos at, std::function<void()> fn);
  void Cancel(EventId id);

  bool empty() const { return heap_.size() == cancelled_.size(); }
  // Time of the next live event. REQUIRES: !empty().
  Nanos next_time();
  // Removes the next live event and returns its time and callback. REQUIRES: !empty().
  std::pair<Nanos, std::function<void()>> Pop();
  std::size_t size() const { return heap_.size() - cancelled_.size(); }

 private:
  struct Event {
    Nanos time;
    EventId id;
    // std::priority_queue is a max-heap: "less" means later.
    bool operator<(const Event& o) const { return time != o.time ? time > o.time : id > o.id; }
  };
  void SkipCancelled();

  std::priority_queue<Event> heap_;
  // Callbacks live beside the heap so the heap moves small records.
  std::unordered_map<EventId, std::function<void()>> callbacks_;
  std::unordered_set<EventId> cancelled_;
  EventId next_id_ = 1;
};

}  // namespace murmur::sim
