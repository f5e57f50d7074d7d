#include "membership/broadcast_queue.h"

#include <algorithm>

namespace murmur::membership {

void BroadcastQueue::Enqueue(MemberUpdate update) {
  const NodeId member = update.member;
  items_[member] = Item{std::move(update), 0, next_order_++};
}

void BroadcastQueue::Take(std::size_t max_count, int limit, const std::vector<NodeId>& exclude,
                          std::vector<MemberUpdate>* out) {
  if (max_count == 0 || items_.empty()) return;
  std::vector<Item*> order;
  order.reserve(items_.size());
  for (auto& [member, item] : items_) {
    if (std::find(exclude.begin(), exclude.end(), member) == exclude.end()) order.push_back(&item);
  }
  const std::size_t n = std::min(max_count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [](const Item* a, const Item* b) {
                      if (a->transmits != b->transmits) return a->transmits < b->transmits;
                      return a->order > b->order;
                    });
  std::vector<NodeId> spent;
  for (std::size_t i = 0; i < n; ++i) {
    Item* item = order[i];
    out->push_back(item->update);
    if (++item->transmits >= limit) spent.push_back(item->update.member);
  }
  for (NodeId member : spent) items_.erase(member);
}

}  // namespace murmur::membership
