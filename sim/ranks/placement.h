// Placement: which rank of a partitioned simulation runs which node.
//
// Two kinds:
//   - blocks: each rank runs a contiguous block of node ids, the blocks as
//     even as possible (rank r: [r n / R, (r + 1) n / R)). On a ring or a
//     torus in id order that keeps neighbours together already.
//   - any assignment, node i on rank_of[i]: the graph partition of the
//     topology (sim/metis/metis.h), which keeps neighbours together on
//     graphs whose ids say nothing about who is near whom.
// Nothing a run computes depends on the placement (events are ordered by
// their keys, sim/net/event_queue.h; evaluation sums in a way no order changes,
// sim/run/evaluator.h): it changes only how many messages cross between ranks.
// docs/simulator.md measures that traffic for both kinds.
//
// Thread-safety: a value.
#pragma once

#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "sim/ranks/ranks.h"
#include "topology/schedule.h"

namespace murmur::sim {

class Placement {
 public:
  // Every node on one rank (none yet: the simulator fills in its node count).
  Placement() : Placement(0, 1, 0) {}
  explicit Placement(NodeId nodes) : Placement(nodes, 1, 0) {}
  // Contiguous blocks. REQUIRES: 1 <= ranks, 0 <= rank < ranks.
  Placement(NodeId nodes, int ranks, int rank);
  // Node i on rank_of[i]. REQUIRES: 1 <= ranks, 0 <= rank < ranks, every
  // entry in [0, ranks).
  Placement(std::vector<int> rank_of, int ranks, int rank);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  NodeId nodes() const { return nodes_; }
  // Whether the nodes lie in contiguous id blocks.
  bool blocks() const { return rank_of_.empty(); }
  // The nodes this rank runs, in increasing id order.
  const std::vector<NodeId>& local_nodes() const { return local_; }
  NodeId count() const { return static_cast<NodeId>(local_.size()); }
  bool local(NodeId node) const {
    return rank_of_.empty() ? node >= first_[rank_] && node < first_[rank_ + 1] : rank_of_[node] == rank_;
  }
  // The rank that runs `node`. REQUIRES: node < nodes().
  int RankOf(NodeId node) const;

 private:
  NodeId nodes_ = 0;
  int ranks_ = 1;
  int rank_ = 0;
  std::vector<NodeId> first_;  // blocks: ranks + 1 entries, block r is [first_[r], first_[r + 1])
  std::vector<int> rank_of_;   // any assignment: node i's rank; empty for blocks
  std::vector<NodeId> local_;
};

}  // namespace murmur::sim

namespace murmur::sim {

// The placement of `n` gossip nodes on `ranks`, as scenario field `placement`
// asks (`kind`: auto, graph or blocks): graph partitions the union of the
// schedule's graphs over one period (sim/metis/metis.h, seeded by `seed`);
// auto is graph when the build has METIS and the schedule repeats, else
// blocks. Rank 0 partitions and broadcasts, so every rank holds the same
// placement. Every rank must call it. `schedule` may be null (no graph:
// blocks). Errors, the same on every rank: graph without METIS, or with a
// schedule that draws a new graph every round.
Result<Placement> PlaceNodes(const std::string& kind, topology::Schedule* schedule, NodeId n,
                             RankGroup& ranks, std::uint64_t seed);

}  // namespace murmur::sim
