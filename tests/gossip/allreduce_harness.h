// Runs of gossip and ring all-reduce nodes on closed-form problems (node i
// minimizes 0.5 ||x - b_i||^2, tests/gossip/quadratic.h) in the simulator,
// and the recursion the gossip runs follow, computed in double: the shared
// set-up of the DiLoCo and ring all-reduce tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gossip/decentralized_sgd.h"
#include "gossip/ring_allreduce.h"
#include "topology/graph.h"
#include "topology/mixing_matrix.h"

namespace murmur::gossip::testing {

inline constexpr std::size_t kDim = 6;

struct Run {
  std::vector<std::vector<float>> models;  // each node's final x
  std::vector<std::vector<float>> targets;
};

// `rounds` rounds of DecentralizedSgdNode with `o` on `graph` (uniform
// weights), node i minimizing 0.5 ||x - b_i||^2 with `steps` inner steps of
// rate `lr`, every node starting from the same x0 (b_i drawn from the seed).
Run RunNodes(const topology::Graph& graph, DecentralizedSgdOptions o, double lr, const char* codec = "none",
             const Layout* layout = nullptr);

// The same run computed in double: inner steps x <- x - lr (x - b_i),
// the mix x_mix,i = sum_j W_ij x_end,j with W uniform over i and its
// neighbours, g = x_start - x_mix, and the outer step of gossip/outer_optimizer.h.
std::vector<std::vector<double>> Expected(const topology::Graph& graph, const DecentralizedSgdOptions& o,
                                          double lr, const std::vector<std::vector<float>>& targets);

// The largest |run - want| over every node and value (infinity for NaN).
double WorstGap(const Run& run, const std::vector<std::vector<double>>& want);

struct RingRun {
  std::vector<std::vector<float>> models;
  std::vector<std::size_t> received;  // values each node received
  std::vector<std::uint64_t> failed;  // rounds whose all-reduce timed out, per node
  double seconds = 0;                 // the simulator's clock when the last event ran
};

// n RingAllReduceNodes; node i starts from x0s[i] and minimizes
// 0.5 ||x - targets[i]||^2 with `lr`. Nodes in `silent` are never started
// and drop what they receive.
RingRun RunRing(NodeId n, const RingAllReduceOptions& o, double lr,
                const std::vector<std::vector<float>>& x0s, const std::vector<std::vector<float>>& targets,
                std::vector<NodeId> silent = {}, const Layout* layout = nullptr);

// As RunRing, each node with its own options (its ring may be a group).
RingRun RunRingNodes(const std::vector<RingAllReduceOptions>& per_node, double lr,
                     const std::vector<std::vector<float>>& x0s,
                     const std::vector<std::vector<float>>& targets, std::vector<NodeId> silent = {},
                     const Layout* layout = nullptr);

// Hierarchical: G groups of m (group g = ids g m .. g m + m - 1), one
// round, mixing over `w` (each node's counterparts: the same position in
// the groups W connects to its group).
std::vector<RingAllReduceOptions> Groups(NodeId g, NodeId m, const topology::MixingMatrix& w);

// One round (lr 0: the local steps change nothing) of n nodes whose models
// are small integers, so that every partial sum is exact in float and the
// mean is the correctly rounded sum / n whatever the order of the additions.
struct ExactSumRun {
  RingRun run;
  std::vector<double> sum;  // each value's sum over the nodes
};
ExactSumRun RunExactSum(NodeId n, std::size_t len, Collective collective);

}  // namespace murmur::gossip::testing
