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
  silent_[address].push_back(t);
  return t;
}

namespace {

// Drops `ticket` from `address`'s queue in `map`, and the queue once empty.
void Drop(std::map<std::string, std::deque<std::uint64_t>>& map, const std::string& address,
          std::uint64_t ticket) {
  auto a = map.find(address);
  if (a == map.end()) return;
  std::deque<std::uint64_t>& q = a->second;
  auto t = std::find(q.begin(), q.end(), ticket);
  if (t != q.end()) q.erase(t);
  if (q.empty()) map.erase(a);
}

}  // namespace

void PendingConnections::Spoke(Ticket ticket) {
  auto it = by_ticket_.find(ticket);
  if (it == by_ticket_.end() || !it->second.silent) return;
  it->second.silent = false;
  Drop(silent_, it->second.address, ticket);
}

void PendingConnections::Remove(Ticket ticket) {
  auto it = by_ticket_.find(ticket);
  if (it == by_ticket_.end()) return;
  Drop(by_address_, it->second.address, ticket);
  if (it->second.silent) Drop(silent_, it->second.address, ticket);
  by_ticket_.erase(it);
}

bool PendingConnections::Shed() {
  ByAddress& from = silent_.empty() ? by_address_ : silent_;
  auto victim = from.end();
  for (auto a = from.begin(); a != from.end(); ++a) {
    if (victim == from.end() || a->second.size() > victim->second.size() ||
        (a->second.size() == victim->second.size() && a->second.front() < victim->second.front()))
      victim = a;
  }
  if (victim == from.end()) return false;
  const Ticket t = victim->second.front();
  std::function<void()> close = std::move(by_ticket_.at(t).close);
  Remove(t);
  if (close) close();
  return true;
}

}  // namespace murmur::node
