// Graph generators: the standard static topologies of decentralized learning.
//
// Deterministic ones are pure functions of their size; random ones are pure
// functions of (seed, parameters), drawing from Rng(seed, 0, kTopology), so
// the same seed gives the same graph on every machine. All run in time and
// memory linear in n + edges (random geometric: for bounded density).
// Time-varying topologies (one-peer exponential, random matching) are
// schedules: see topology/schedule.h.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "topology/graph.h"

namespace murmur::topology {

// Every pair connected. REQUIRES: n <= kMaxCompleteNodes.
inline constexpr NodeId kMaxCompleteNodes = 4096;
Graph Complete(NodeId n);
// i ~ i +- 1 mod n (n = 2: one edge; n = 1: none).
Graph Ring(NodeId n);
// p x q grid with wrap-around; node (a, b) is a * q + b. Degree 4 when p, q >= 3.
Graph Torus(NodeId p, NodeId q);
// Node 0 linked to every other node.
Graph Star(NodeId n);
// Two cliques, nodes [0, h) and [h, n) with h = n / 2, joined by the single
// edge (h - 1, h): the dumbbell of He, Karimireddy and Jaggi (2022, Sec. 5),
// where one bridge carries all agreement between the halves. n = 1: no edge.
// REQUIRES: n <= 2 kMaxCompleteNodes.
Graph Dumbbell(NodeId n);
// Nodes differing in one bit. REQUIRES: n is a power of two.
Graph Hypercube(NodeId n);
// Directed static exponential graph (Ying et al. 2021, Sec. 3): arcs
// i -> i + 2^k mod n for k = 0 .. ceil(log2 n) - 1.
Graph Exponential(NodeId n);
// ceil(log2 n) (0 for n <= 1): the period of the one-peer exponential graph.
std::uint32_t CeilLog2(NodeId n);

// Uniform-ish random d-regular simple graph: configuration model pairing,
// then double-edge switches that remove loops and repeated edges (the
// switching method of McKay & Wormald 1990, used by NetworkX and igraph),
// resampled until connected. Expected O(n d). InvalidArgument when n d is
// odd or d >= n; FailedPrecondition when no connected sample was found in
// `max_attempts` (e.g. d = 2 on a large n is almost never connected).
Result<Graph> RandomRegular(NodeId n, std::uint32_t d, std::uint64_t seed, int max_attempts = 100);

// Erdos-Renyi G(n, p), resampled until connected (at most `max_attempts`
// samples; FailedPrecondition after that). Geometric edge skipping
// (Batagelj & Brandes 2005): O(n + m) per sample.
Result<Graph> ErdosRenyi(NodeId n, double p, std::uint64_t seed, int max_attempts = 100);

// Watts & Strogatz 1998 small world: the ring lattice of degree d (d even),
// each edge (i, i + j) rewired with probability beta to (i, uniform node)
// avoiding loops and repeats; resampled until connected.
Result<Graph> WattsStrogatz(NodeId n, std::uint32_t d, double beta, std::uint64_t seed,
                            int max_attempts = 100);

struct Point2 {
  double x = 0;
  double y = 0;
};

// Random geometric (disk) graph: i ~ j when |p_i - p_j| <= radius. A cell
// grid of side `radius` means each node only checks the 3 x 3 cells around
// it: O(n log n + pairs checked), O(n) for bounded density. Disconnected
// results are returned as they are (vehicles out of range are out of range).
// InvalidArgument for a non-positive or non-finite radius or non-finite position.
Result<Graph> RandomGeometric(std::span<const Point2> positions, double radius);
// n points uniform in the unit square from Rng(seed, 0, kTopology).
std::vector<Point2> UniformPositions(NodeId n, std::uint64_t seed);

}  // namespace murmur::topology
