// Placement: which rank of a partitioned simulation runs which node.
//
// Each rank runs a contiguous block of node ids, the blocks as even as
// possible (rank r: [r n / R, (r + 1) n / R)). Contiguous blocks keep ring
// and torus neighbours together, and let the evaluation reduce over the nodes
// in id order as a pipeline through the ranks (sim/evaluator.h), which is what
// makes a partitioned run's metrics the same bit for bit as one process's.
// docs/simulator.md measures the cross-rank traffic this gives.
//
// Thread-safety: a value.
#pragma once

#include <vector>

#include "core/env.h"

namespace murmur::sim {

class Placement {
 public:
  // Every node on one rank (none yet: the simulator fills in its node count).
  Placement() : Placement(0, 1, 0) {}
  explicit Placement(NodeId nodes) : Placement(nodes, 1, 0) {}
  // REQUIRES: 1 <= ranks, 0 <= rank < ranks.
  Placement(NodeId nodes, int ranks, int rank);

  int rank() const { return rank_; }
  int ranks() const { return static_cast<int>(first_.size()) - 1; }
  NodeId nodes() const { return first_.back(); }
  // This rank's block [begin, end).
  NodeId begin() const { return first_[rank_]; }
  NodeId end() const { return first_[rank_ + 1]; }
  NodeId count() const { return end() - begin(); }
  bool local(NodeId node) const { return node >= begin() && node < end(); }
  // The rank that runs `node`. REQUIRES: node < nodes().
  int RankOf(NodeId node) const;
  // First node of `rank`'s block.
  NodeId BlockBegin(int rank) const { return first_[rank]; }

 private:
  std::vector<NodeId> first_;  // ranks + 1 entries: block r is [first_[r], first_[r + 1])
  int rank_;
};

}  // namespace murmur::sim
