// Link-aware topologies: graphs chosen from what it costs to move a model
// between each pair of nodes (a link model's or measured round-trip times
// and throughputs), rather than from node ids or a random draw.
//
// LinkAwareGraph(n, D, cost) has the edge count of a D-regular graph,
// floor(n D / 2) (at least n - 1), built from the cheapest edges:
//   1. a minimum spanning tree (Prim's algorithm on the symmetric cost
//      max(cost(u, v), cost(v, u))): connected, and of all spanning trees the
//      one whose most expensive edge is cheapest, so no round has to wait on a
//      link slower than connectivity forces. (On equal costs the newest tree
//      node wins, so equal costs give a path, not a star.)
//   2. then, among each node's 4 D cheapest partners, one edge at a time, the
//      one whose busier end would have the least load after it, a node's load
//      being the sum of its edges' costs (its uplink's time to send a model
//      to every neighbour, what a synchronous round waits for). Equal costs
//      thus spread evenly (degrees within one of each other), and a slow
//      edge comes only when every fast one left would load a node more.
//      Equal keys are ordered by a hash of (seed, u, v): among equally good
//      links the choice is random-like (an expander, as a random regular
//      graph is), not a lattice of ids. If the candidates run out first, the
//      graph has fewer edges.
// It evaluates every pair: O(n^2) cost calls.
//
// LeastCostRing(n, cost) is a Hamiltonian cycle of small total cost (the
// ring order of a ring all-reduce, as PCCL orders its ring by a
// travelling-salesman tour): the nearest-neighbour tour from node 0 improved
// by 2-opt moves (reverse the segment between two edges when that shortens
// the tour) until none improves or `max_passes` passes over all pairs (fewer
// past a few thousand nodes: about 1e9 cost calls in all). 2-opt
// tours are within a few percent of optimal on metric instances (Johnson and
// McGeoch 1997); an exact tour is NP-hard.
//
// Thread-safety: pure functions; `cost` is called from the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "topology/graph.h"

namespace murmur::topology {

// Seconds (or any additive cost) to send one model from u to v.
using PairCost = std::function<double(NodeId u, NodeId v)>;

// Whether a topology kind (the part before the first ':') is one of the
// kinds built from link costs: "link-aware" and "link-aware-ring".
bool IsLinkAwareKind(std::string_view kind);

// Largest n these build (their O(n^2) cost calls).
inline constexpr NodeId kMaxLinkAwareNodes = 20000;

// InvalidArgument for n > kMaxLinkAwareNodes or D < 1 (n > 1).
Result<Graph> LinkAwareGraph(NodeId n, std::uint32_t degree, const PairCost& cost, std::uint64_t seed);

// The tour: a permutation of 0..n-1 starting at 0. REQUIRES: n <= kMaxLinkAwareNodes.
std::vector<NodeId> LeastCostTour(NodeId n, const PairCost& cost, int max_passes = 50);

// A graph's edges under `cost` (symmetric, as above): the slowest edge, what
// a synchronous round waits for at least; the sum over the edges; and the
// busiest node's load, the sum of its edges' costs (its uplink's time to
// send a model to every neighbour, which LinkAwareGraph keeps low).
struct EdgeCosts {
  double slowest = 0;
  double total = 0;
  double busiest = 0;
};
EdgeCosts CostOf(const Graph& g, const PairCost& cost);

// The cycle through `tour` (n >= 3; 2 nodes: one edge; 1: none).
Graph TourGraph(const std::vector<NodeId>& tour);

// The tour a ring-shaped graph (one cycle through every node, or a path of
// two nodes) goes round, from node 0 towards its smaller neighbour; empty
// when `g` is not one cycle through all its nodes.
std::vector<NodeId> RingOrder(const Graph& g);

}  // namespace murmur::topology
