// PendingConnections: the connections a listener has accepted that have not
// authenticated yet (a handshake in progress), bounded globally and per
// remote address so that unauthenticated peers cannot hold every slot
// (docs/security.md "Attacks and their bounds").
//
// Admit(address) decides for a connection just accepted: over
// `max_per_address` pending from its address it is refused; at `max_total`
// one pending connection is shed (its close function runs) to make room.
// The one shed is chosen among the silent connections (no valid handshake
// message read yet) while any is silent, else among all: there, the oldest
// of the address that holds the most. So a handshake under way outlives
// connections that only hold a slot, an address with few pending
// connections (an operator, a peer) is the last to lose one, and a flood
// from many addresses sheds the oldest attempts first. Shed() does the same
// on demand (the listener out of file descriptors). Spoke(ticket) moves a
// connection out of the silent set once its first handshake message is valid.
//
// Costs: Admit and Shed are O(number of addresses pending), at most
// max_total; Spoke and Remove are O(max_per_address). Thread-safety: one
// thread (the owner's io thread).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>

namespace murmur::node {

struct PendingOptions {
  std::size_t max_total = 128;       // pending connections at once, every address together
  std::size_t max_per_address = 16;  // pending connections at once from one remote IP address
};

class PendingConnections {
 public:
  using Ticket = std::uint64_t;  // 0: none

  explicit PendingConnections(PendingOptions options);

  // Room for one more from `address`: 0 when it is over its per-address
  // limit (refuse it), else a ticket, after shedding one when full. `close`
  // closes that connection if it is shed later (it must not call back into
  // this object except through Remove).
  Ticket Admit(const std::string& address, std::function<void()> close);
  // The connection read a valid handshake message: it is no longer silent
  // (no-op for 0, a shed ticket, or one that spoke already).
  void Spoke(Ticket ticket);
  // The connection authenticated or closed (no-op for 0 or a shed ticket).
  void Remove(Ticket ticket);
  // Sheds the oldest connection of the address with the most pending, among
  // the silent ones while any is silent; false when none is pending.
  bool Shed();

  std::size_t size() const { return by_ticket_.size(); }
  std::size_t count(const std::string& address) const;
  const PendingOptions& options() const { return options_; }

 private:
  struct Entry {
    std::string address;
    std::function<void()> close;
    bool silent = true;
  };
  PendingOptions options_;
  Ticket next_ = 1;
  std::map<Ticket, Entry> by_ticket_;                           // tickets grow: older first
  using ByAddress = std::map<std::string, std::deque<Ticket>>;  // each address's tickets, oldest first
  ByAddress by_address_;                                        // every pending connection
  ByAddress silent_;                                            // those that have not spoken
};

}  // namespace murmur::node
