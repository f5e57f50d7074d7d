// RoundTopology: who a node hears from, and with which weights, in round t.
//
// Synchronous gossip algorithms read the round's mixing matrix W_t: node i
// receives from every j with W_ij != 0 (row i) and sends to every j with
// W_ji != 0 (column i, a row of the transpose). RoundTopology hands out both,
// cached, so that a static graph costs nothing per round. Offline nodes are
// handled by the caller (the simulator's churn renormalizes W through
// topology::RemoveOffline before publishing it here).
//
// Thread-safety: read from the event loop only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "topology/mixing_matrix.h"

namespace murmur::gossip {

class RoundTopology {
 public:
  // A static topology: W for every round.
  explicit RoundTopology(topology::MixingMatrix w);
  // A time-varying topology: `make(t)` builds W_t on first use. Rounds are
  // requested in increasing order; only the most recent `window` rounds are
  // kept (nodes are at most a few rounds apart).
  RoundTopology(std::function<topology::MixingMatrix(std::uint64_t)> make, std::size_t window = 64);

  bool is_static() const { return static_cast<bool>(!make_); }
  NodeId size() const;

  // W_t (row i: in-neighbours of i with W_ij, self included).
  const topology::MixingMatrix& In(std::uint64_t round);
  // W_t^T (row i: out-neighbours j of i with W_ji, self included).
  const topology::MixingMatrix& Out(std::uint64_t round);

  // The most rounds an in-neighbour can legitimately be ahead of `self` when
  // every node waits for its in-neighbours' messages of each round: the
  // longest shortest path from `self` to one of its in-neighbours (j's round
  // R + d message needs, along a path of d edges, `self`'s round R message).
  // 1 on an undirected graph; 2 for node 1 of the 4-node exponential graph
  // (1 -> 3 -> 0). A node whose in-neighbour is further ahead than this fell
  // behind (a restart): catch-up's trigger. An in-neighbour `self` cannot
  // reach gives kUnboundedLead. Static topologies only (1 otherwise: catch-up
  // is off on time-varying graphs).
  static constexpr std::uint64_t kUnboundedLead = std::uint64_t{1} << 40;
  std::uint64_t InNeighbourLead(NodeId self);

  // Catch-up's corroboration (docs/security.md, "Rounds cannot be steered by
  // one peer"): the highest round that a strict majority (floor(k/2) + 1 of
  // k) of `self`'s in-neighbours of `round` have sent something of, by
  // `latest` (each in-neighbour's highest round seen; absent: 0). 0 when
  // `self` has no in-neighbour.
  std::uint64_t MajorityRound(std::uint64_t round, NodeId self,
                              const std::map<NodeId, std::uint64_t>& latest);

 private:
  struct Entry {
    std::uint64_t round;
    topology::MixingMatrix in, out;
  };
  Entry& Get(std::uint64_t round);

  std::function<topology::MixingMatrix(std::uint64_t)> make_;
  std::size_t window_ = 1;
  std::vector<std::unique_ptr<Entry>> cache_;  // ring buffer by round % window
};

}  // namespace murmur::gossip
