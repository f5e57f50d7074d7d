// RoundInbox: messages of synchronous rounds that arrived before the node
// was ready for them.
//
// A neighbour can run ahead by a round or more (it needs only its own
// neighbours' messages to finish a round), so messages are kept by round
// until the node combines that round. Messages for rounds the node has
// already closed are "late": the caller decides what they still mean.
//
// Thread-safety: event loop only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "gossip/messages.h"

namespace murmur::gossip {

struct Received {
  NodeId from;
  std::shared_ptr<const GossipMessage> msg;
  // Push-sum: the running-sum weight rho_w the message was judged against on
  // arrival (gossip/push_sum.h); -1 when it was not judged.
  double judged_w = -1;
};

class RoundInbox {
 public:
  // Keeps `msg` for its round. REQUIRES: msg->round() >= closed_below().
  void Add(NodeId from, std::shared_ptr<const GossipMessage> msg, double judged_w = -1);
  // Whether a message from `from` on `channel` is held for `round` (duplicates are dropped by callers).
  bool Has(std::uint64_t round, Channel channel, NodeId from) const;
  // Number of messages held for (round, channel).
  std::size_t Count(std::uint64_t round, Channel channel) const;
  // Removes and returns every message of `round`, in arrival order; rounds
  // below `round` + 1 count as closed afterwards.
  std::vector<Received> Close(std::uint64_t round);
  // Removes and returns every message of the rounds up to `round`, by round
  // and then in arrival order; rounds below `round` + 1 count as closed afterwards.
  std::vector<Received> CloseThrough(std::uint64_t round);
  // The messages held from `from`, by round.
  std::vector<Received> HeldFrom(NodeId from) const;
  // Forgets every message held from `from` (a CHOCO resynchronisation
  // replaces what they carried); returns how many there were.
  std::size_t DropFrom(NodeId from);
  // Forgets the messages held from `from` for rounds above `round`; returns how many there were.
  std::size_t DropFromAbove(NodeId from, std::uint64_t round);
  // Holds rounds above `near` for one round per sender, the highest: false
  // when `from` has messages held for a round above `round` (and `near`), so
  // that one for `round` is not to be kept; otherwise forgets `from`'s
  // messages of the rounds above `near` other than `round`, and true.
  bool KeepHighestAbove(NodeId from, std::uint64_t near, std::uint64_t round);
  std::uint64_t closed_below() const { return closed_below_; }
  std::size_t pending_rounds() const { return by_round_.size(); }

 private:
  std::map<std::uint64_t, std::vector<Received>> by_round_;
  std::uint64_t closed_below_ = 0;
};

}  // namespace murmur::gossip
