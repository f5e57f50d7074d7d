#include "node/transport/pending.h"

#include <algorithm>

#include "core/check.h"

namespace murmur::node {

PendingConnections::PendingConnections(PendingOptions options) : options_(options) {
  MURMUR_CHECK(options_.max_total >= 1 && options_.max_per_address >= 1);
}

std::size_t PendingConnections::count(const std::string& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? 0 : it->second.size();
}

PendingConnections::Ticket PendingConnections::Admit(const std::string& address,
                                                     std::function<void()> close) {
  if (count(address) >= options_.max_per_address) return 0;
  if (by_ticket_.size() >= options_.max_total) Shed();
  const Ticket t = next_++;
  by_ticket_.emplace(t, Entry{address, std::move(close)});
  by_address_[address].push_back(t);
  return t;
}

void PendingConnections::Remove(Ticket ticket) {
  auto it = by_ticket_.find(ticket);
  if (it == by_ticket_.end()) return;
  auto a = by_address_.find(it->second.address);
  std::deque<Ticket>& q = a->second;
  q.erase(std::find(q.begin(), q.end(), ticket));
  if (q.empty()) by_address_.erase(a);
  by_ticket_.erase(it);
}

bool PendingConnections::Shed() {
  auto victim = by_address_.end();
  for (auto a = by_address_.begin(); a != by_address_.end(); ++a) {
    if (victim == by_address_.end() || a->second.size() > victim->second.size() ||
        (a->second.size() == victim->second.size() && a->second.front() < victim->second.front()))
      victim = a;
  }
  if (victim == by_address_.end()) return false;
  const Ticket t = victim->second.front();
  std::function<void()> close = std::move(by_ticket_.at(t).close);
  Remove(t);
  if (close) close();
  return true;
}

}  // namespace murmur::node
