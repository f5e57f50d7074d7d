#include "gossip/inbox.h"

#include <algorithm>

#include "core/check.h"

namespace murmur::gossip {

void RoundInbox::Add(NodeId from, std::shared_ptr<const GossipMessage> msg, double judged_w) {
  MURMUR_CHECK(msg->round() >= closed_below_);
  by_round_[msg->round()].push_back(Received{from, std::move(msg), judged_w});
}

bool RoundInbox::Has(std::uint64_t round, Channel channel, NodeId from) const {
  auto it = by_round_.find(round);
  if (it == by_round_.end()) return false;
  for (const Received& r : it->second) {
    if (r.from == from && r.msg->channel() == channel) return true;
  }
  return false;
}

std::size_t RoundInbox::Count(std::uint64_t round, Channel channel) const {
  auto it = by_round_.find(round);
  if (it == by_round_.end()) return 0;
  std::size_t n = 0;
  for (const Received& r : it->second) n += r.msg->channel() == channel;
  return n;
}

std::vector<Received> RoundInbox::Close(std::uint64_t round) {
  std::vector<Received> out;
  auto it = by_round_.find(round);
  if (it != by_round_.end()) {
    out = std::move(it->second);
    by_round_.erase(it);
  }
  // Anything older was closed before (or never came).
  by_round_.erase(by_round_.begin(), by_round_.lower_bound(round + 1));
  closed_below_ = round + 1;
  return out;
}

std::vector<Received> RoundInbox::CloseThrough(std::uint64_t round) {
  std::vector<Received> out;
  const auto end = by_round_.lower_bound(round + 1);
  for (auto it = by_round_.begin(); it != end; ++it) {
    for (Received& r : it->second) out.push_back(std::move(r));
  }
  by_round_.erase(by_round_.begin(), end);
  closed_below_ = std::max(closed_below_, round + 1);
  return out;
}

std::vector<Received> RoundInbox::HeldFrom(NodeId from) const {
  std::vector<Received> out;
  for (const auto& [round, held] : by_round_) {
    for (const Received& r : held) {
      if (r.from == from) out.push_back(r);
    }
  }
  return out;
}

std::size_t RoundInbox::DropFrom(NodeId from) {
  std::size_t dropped = 0;
  for (auto it = by_round_.begin(); it != by_round_.end();) {
    dropped += std::erase_if(it->second, [from](const Received& r) { return r.from == from; });
    it = it->second.empty() ? by_round_.erase(it) : std::next(it);
  }
  return dropped;
}

std::size_t RoundInbox::DropFromAbove(NodeId from, std::uint64_t round) {
  std::size_t dropped = 0;
  for (auto it = by_round_.upper_bound(round); it != by_round_.end();) {
    dropped += std::erase_if(it->second, [from](const Received& r) { return r.from == from; });
    it = it->second.empty() ? by_round_.erase(it) : std::next(it);
  }
  return dropped;
}

bool RoundInbox::KeepHighestAbove(NodeId from, std::uint64_t near, std::uint64_t round) {
  auto held = [from](const Received& r) { return r.from == from; };
  for (auto it = by_round_.upper_bound(std::max(near, round)); it != by_round_.end(); ++it) {
    if (std::any_of(it->second.begin(), it->second.end(), held)) return false;
  }
  for (auto it = by_round_.upper_bound(near); it != by_round_.end() && it->first < round;) {
    std::erase_if(it->second, held);
    it = it->second.empty() ? by_round_.erase(it) : std::next(it);
  }
  return true;
}

}  // namespace murmur::gossip
