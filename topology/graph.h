// Graph: a static communication graph in compressed sparse row (CSR) form.
//
// Node ids are murmur::NodeId (uint32). Each node's neighbour list is stored
// once, sorted, in one flat array indexed by an offsets array, so memory is
// n + 1 offsets plus one id per arc: linear in edges, with no per-node
// allocation. An undirected graph stores each edge {u, v} as the two arcs
// u -> v and v -> u; a directed graph stores arc u -> v in u's list only
// (u's out-neighbours). Graphs are built by generators (topology/generators.h),
// edge-list files (topology/edge_list.h) or FromEdges below, and are immutable
// afterwards.
//
// Thread-safety: immutable after construction; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace murmur::topology {

enum class Directedness { kUndirected, kDirected };

struct Edge {
  NodeId u = 0;
  NodeId v = 0;
};

class Graph {
 public:
  // The graph with no nodes.
  Graph() = default;

  // Builds a graph on nodes [0, n) from `edges`. Returns InvalidArgument,
  // naming the edge's index, for an endpoint >= n, a self-loop, or a repeated
  // edge (for undirected graphs {u, v} and {v, u} are the same edge).
  // O(n + m log d_max) time, O(n + m) memory.
  static Result<Graph> FromEdges(NodeId n, std::span<const Edge> edges,
                                 Directedness directedness = Directedness::kUndirected);

  // As FromEdges, for edges a generator knows to be valid: duplicates and
  // self-loops are dropped silently (a ring of 2 nodes has one edge, not two).
  // REQUIRES: every endpoint < n.
  static Graph FromEdgesDedup(NodeId n, std::span<const Edge> edges,
                              Directedness directedness = Directedness::kUndirected);

  NodeId num_nodes() const { return n_; }
  // Undirected: the number of edges {u, v}; directed: the number of arcs.
  std::size_t num_edges() const { return directed_ ? targets_.size() : targets_.size() / 2; }
  bool directed() const { return directed_; }

  // Out-neighbours of `u` (all neighbours when undirected), sorted ascending.
  // REQUIRES: u < num_nodes().
  std::span<const NodeId> Neighbors(NodeId u) const {
    return {targets_.data() + offsets_[u], targets_.data() + offsets_[u + 1]};
  }
  std::size_t Degree(NodeId u) const { return offsets_[u + 1] - offsets_[u]; }
  // Whether the arc u -> v exists (binary search). REQUIRES: u < num_nodes().
  bool HasEdge(NodeId u, NodeId v) const;

  // The graph with every arc reversed (in-neighbours become out-neighbours).
  Graph Reversed() const;
  // Every edge once: u < v for undirected graphs, every arc for directed ones.
  std::vector<Edge> Edges() const;

  // Bytes held by the adjacency arrays.
  std::size_t MemoryBytes() const {
    return offsets_.capacity() * sizeof(std::size_t) + targets_.capacity() * sizeof(NodeId);
  }

 private:
  // Builds the CSR arrays by counting sort; leaves rows sorted, possibly with repeats.
  static Graph BuildCsr(NodeId n, std::span<const Edge> edges, bool directed);

  NodeId n_ = 0;
  bool directed_ = false;
  std::vector<std::size_t> offsets_{0};  // n_ + 1 entries
  std::vector<NodeId> targets_;
};

}  // namespace murmur::topology
