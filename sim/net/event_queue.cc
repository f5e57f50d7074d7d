#include "sim/net/event_queue.h"

#include "core/check.h"

namespace murmur::sim {

std::uint64_t EventQueue::NextSequence(NodeId origin) {
  if (origin == kWorldOrigin) return world_sequence_++;
  if (origin >= sequence_.size()) sequence_.resize(static_cast<std::size_t>(origin) + 1, 0);
  return sequence_[origin]++;
}

std::uint64_t EventQueue::NextTimelineSequence(NodeId origin) {
  MURMUR_CHECK(origin != kWorldOrigin);
  if (origin >= timeline_sequence_.size()) timeline_sequence_.resize(static_cast<std::size_t>(origin) + 1, 0);
  return timeline_sequence_[origin]++ | (std::uint64_t{1} << 63);
}

EventQueue::EventId EventQueue::Schedule(EventKey key, std::function<void()> fn) {
  EventId id = next_id_++;
  heap_.push(Event{key, id});
  callbacks_.emplace(id, std::move(fn));
  return id;
}

void EventQueue::Cancel(EventId id) {
  auto it = callbacks_.find(id);
  if (it == callbacks_.end()) return;  // already ran or cancelled
  callbacks_.erase(it);
  cancelled_.insert(id);
}

void EventQueue::SkipCancelled() {
  while (!heap_.empty()) {
    auto it = cancelled_.find(heap_.top().id);
    if (it == cancelled_.end()) return;
    cancelled_.erase(it);
    heap_.pop();
  }
}

const EventKey& EventQueue::next_key() {
  SkipCancelled();
  MURMUR_CHECK(!heap_.empty());
  return heap_.top().key;
}

std::pair<EventKey, std::function<void()>> EventQueue::Pop() {
  SkipCancelled();
  MURMUR_CHECK(!heap_.empty());
  Event e = heap_.top();
  heap_.pop();
  auto it = callbacks_.find(e.id);
  std::function<void()> fn = std::move(it->second);
  callbacks_.erase(it);
  return {e.key, std::move(fn)};
}

}  // namespace murmur::sim
