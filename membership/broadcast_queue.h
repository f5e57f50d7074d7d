// BroadcastQueue: infection-style dissemination of membership updates (SWIM,
// Das, Gupta and Motivala, DSN 2002, section 4.1).
//
// Updates are not sent on their own: each outgoing membership message
// piggybacks up to a few of them, those sent the fewest times first (newest
// first among equals), and an update is dropped after it has been sent
// `limit` times. SWIM shows that lambda * log(n) transmissions per member reach
// every member with high probability; Membership passes
// limit = retransmit_mult * ceil(log10(n + 1)), memberlist's form of it.
// A newer update about a member replaces the queued one (its count restarts).
//
// Thread-safety: used on one node's executor.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "membership/messages.h"

namespace murmur::membership {

class BroadcastQueue {
 public:
  // Queues `update`, replacing any queued update about the same member.
  void Enqueue(MemberUpdate update);
  // Removes the queued update about `member`, if any.
  void Forget(NodeId member) { items_.erase(member); }

  // Appends up to `max_count` updates to *out (skipping members listed in
  // `exclude`), counts one transmission for each, and drops those sent `limit` times.
  void Take(std::size_t max_count, int limit, const std::vector<NodeId>& exclude,
            std::vector<MemberUpdate>* out);

  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

 private:
  struct Item {
    MemberUpdate update;
    int transmits = 0;
    std::uint64_t order = 0;  // larger: queued later
  };
  std::map<NodeId, Item> items_;
  std::uint64_t next_order_ = 0;
};

}  // namespace murmur::membership
