// Graph analysis: connectivity, degree statistics and diameter.
//
// All functions are breadth-first searches over the CSR graph, O(n + m)
// each. Directed graphs follow arcs (out-neighbours): connected means
// strongly connected, and the diameter is the largest directed distance.
// Spectral analysis of mixing matrices is in topology/spectral.h.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "topology/graph.h"

namespace murmur::topology {

inline constexpr std::uint32_t kUnreachable = std::numeric_limits<std::uint32_t>::max();

// Hop distances from `source` (kUnreachable where there is no path).
// REQUIRES: source < g.num_nodes().
std::vector<std::uint32_t> BfsDistances(const Graph& g, NodeId source);

// Connected (undirected) or strongly connected (directed); true for n <= 1.
bool IsConnected(const Graph& g);

struct DegreeStats {
  std::size_t min = 0;
  std::size_t max = 0;
  double mean = 0;
};
// Out-degrees (all degrees when undirected); zeros for the empty graph.
DegreeStats ComputeDegreeStats(const Graph& g);

struct DiameterInfo {
  bool finite = true;       // false when the graph is not (strongly) connected
  std::uint32_t value = 0;  // the diameter, or a lower bound when !exact
  bool exact = true;        // BFS from every node; otherwise a sweep estimate
};

// Exact (BFS from all nodes, O(n m)) when n <= exact_limit; otherwise the
// largest eccentricity found by `sweeps` double-sweep BFS passes (Magnien et
// al. 2009), a lower bound that is tight on most sparse graphs.
DiameterInfo ComputeDiameter(const Graph& g, NodeId exact_limit = 2048, int sweeps = 4);

}  // namespace murmur::topology
