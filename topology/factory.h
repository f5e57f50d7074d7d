// MakeSchedule: a topology by name, as the CLI and scenario files give it.
//
// Kinds (degree for n large; see docs/topology.md for their spectral gaps):
//   complete        n - 1                   ring          2
//   torus           4 (p x q, p the largest divisor of n at most sqrt(n))
//   star            n - 1 at the hub, 1     hypercube     log2 n (n a power of 2)
//   dumbbell        n/2 - 1, n/2 at the two bridge ends (two cliques, one bridge)
//   exponential     ceil(log2 n) out-arcs (directed, Ying et al. 2021)
//   one-peer-exponential   1 per round, period ceil(log2 n)
//   regular         d (random d-regular)    erdos-renyi   ~ p (n - 1)
//   small-world     d (Watts-Strogatz, rewiring beta)
//   random-matching 1 per round (fresh each round)
//   geometric       ~ pi r^2 n (n uniform points in the unit square, radius r)
//   file            from an edge-list file (topology/edge_list.h); its node
//                   count is 1 + its largest id, and `nodes` (0: the file's)
//                   must agree with it
//   edges           the same list inline, its lines separated by ';'
//                   ("edges:0 1;1 2;2 0"): what `murmur job submit` sends
//                   daemons for a graph it chose from measured links
//   link-aware      ~ degree: the cheapest graph of n degree / 2 edges under
//                   `link_cost` (topology/link_aware.h)
//   link-aware-ring 2: the ring of least total `link_cost`
// The two link-aware kinds need `link_cost` (a link model's or measured
// costs) and are not in TopologyKinds(): the simulator offers them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "topology/link_aware.h"
#include "topology/schedule.h"
#include "topology/weights.h"

namespace murmur::topology {

struct TopologySpec {
  std::string kind = "ring";
  NodeId nodes = 16;
  std::uint64_t seed = 1;
  WeightOptions weights;       // ignored by one-peer-exponential and random-matching
  bool weights_given = false;  // false: the kind's default (uniform on regular kinds, mh otherwise)
  std::uint32_t degree = 4;    // regular, small-world, link-aware
  double prob = 0;             // erdos-renyi; 0 means 2 ln(n) / n
  double beta = 0.1;           // small-world rewiring probability
  double radius = 0;           // geometric; 0 means sqrt(2 ln(n) / (pi n))
  std::string file;            // file
  std::string edges;           // edges: the edge list, lines separated by ';'
  bool directed = false;       // file, edges: arcs "u v" mean u -> v
  PairCost link_cost;          // link-aware kinds: seconds to send one model u -> v
};

// The kind names MakeSchedule accepts, in the order the CLI lists them.
const std::vector<std::string>& TopologyKinds();

// Builds the schedule and checks its weights with Validate (a failure there
// is reported as Internal: the generators must never produce a bad matrix).
// InvalidArgument for an unknown kind or parameters the kind cannot take.
Result<std::unique_ptr<Schedule>> MakeSchedule(const TopologySpec& spec);

}  // namespace murmur::topology
