#include "sim/ranks/placement.h"

#include <algorithm>

#include "core/check.h"
#include "sim/metis/metis.h"

namespace murmur::sim {

Placement::Placement(NodeId nodes, int ranks, int rank) : nodes_(nodes), ranks_(ranks), rank_(rank) {
  MURMUR_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  first_.resize(static_cast<std::size_t>(ranks) + 1);
  for (int r = 0; r <= ranks; ++r)
    first_[r] = static_cast<NodeId>(static_cast<std::uint64_t>(nodes) * static_cast<std::uint64_t>(r) /
                                    static_cast<std::uint64_t>(ranks));
  for (NodeId i = first_[rank]; i < first_[rank + 1]; ++i) local_.push_back(i);
}

Placement::Placement(std::vector<int> rank_of, int ranks, int rank)
    : nodes_(static_cast<NodeId>(rank_of.size())), ranks_(ranks), rank_(rank), rank_of_(std::move(rank_of)) {
  MURMUR_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  for (NodeId i = 0; i < nodes_; ++i) {
    MURMUR_CHECK(rank_of_[i] >= 0 && rank_of_[i] < ranks);
    if (rank_of_[i] == rank) local_.push_back(i);
  }
}

int Placement::RankOf(NodeId node) const {
  MURMUR_CHECK(node < nodes_);
  if (!rank_of_.empty()) return rank_of_[node];
  // The last block start not after `node`; empty blocks (more ranks than nodes) are skipped over.
  auto it = std::upper_bound(first_.begin(), first_.end() - 1, node);
  return static_cast<int>(it - first_.begin()) - 1;
}

}  // namespace murmur::sim

namespace murmur::sim {

namespace {

// Every edge of the schedule's graphs over one period, as one graph.
topology::Graph UnionOverPeriod(topology::Schedule& schedule) {
  const std::uint64_t period = schedule.period();
  if (period == 1) return schedule.GraphAt(0);
  std::vector<topology::Edge> edges;
  bool directed = false;
  for (std::uint64_t r = 0; r < period; ++r) {
    const topology::Graph& g = schedule.GraphAt(r);
    directed = directed || g.directed();
    for (const topology::Edge& e : g.Edges()) edges.push_back(e);
  }
  return topology::Graph::FromEdgesDedup(
      schedule.num_nodes(), edges,
      directed ? topology::Directedness::kDirected : topology::Directedness::kUndirected);
}

}  // namespace

Result<Placement> PlaceNodes(const std::string& kind, topology::Schedule* schedule, NodeId n,
                             RankGroup& ranks, std::uint64_t seed) {
  const bool graph_fits = schedule != nullptr && schedule->num_nodes() == n && schedule->period() > 0;
  bool graph = kind == "graph";
  if (kind == "auto") graph = ranks.size() > 1 && graph_fits && metis::Available();
  if (!graph || ranks.size() == 1) return Placement(n, ranks.size(), ranks.rank());
  if (!graph_fits)
    return Status::InvalidArgument(
        "scenario field 'placement' graph needs a topology whose graphs are fixed or repeat (this one draws "
        "a new graph every round, or has none): use placement: blocks");
  if (!metis::Available()) return metis::Partition(topology::Graph(), ranks.size(), seed).status();
  Bytes bytes;
  if (ranks.rank() == 0) {
    Result<std::vector<int>> part = metis::Partition(UnionOverPeriod(*schedule), ranks.size(), seed);
    if (part.ok()) PutValues<int>(bytes, part.value());  // nothing sent: METIS failed
  }
  bytes = ranks.Broadcast(std::move(bytes), 0);
  if (bytes.size() != static_cast<std::size_t>(n) * sizeof(int))
    return Status::Internal("METIS could not partition the topology on rank 0: use placement: blocks");
  std::vector<int> rank_of;
  ByteReader(bytes).Append<int>(rank_of, n);
  return Placement(std::move(rank_of), ranks.size(), ranks.rank());
}

}  // namespace murmur::sim
