// Weight rules: from a graph to a mixing matrix.
//
// The rules here are the standard ones of the consensus literature:
//   uniform       W_ij = 1/(d_i + 1) on i's neighbours and itself. Row
//                 stochastic; symmetric (hence doubly stochastic) only on
//                 regular graphs. On a directed graph d_i is i's in-degree
//                 (i averages what it receives).
//   Metropolis-Hastings  W_ij = 1/(1 + max(d_i, d_j)), W_ii = 1 - sum_j W_ij.
//                 Symmetric and doubly stochastic on any undirected graph
//                 (Xiao & Boyd 2004, eq. (9); Boyd et al. 2004, Sec. 3).
//   max-degree    W_ij = 1/(1 + d_max), W_ii = 1 - d_i/(1 + d_max). Symmetric;
//                 the +1 keeps every self weight positive (Xiao & Boyd 2004
//                 use 1/d_max, which can make W periodic on bipartite graphs).
//   lazy          (W + I)/2: all eigenvalues move into [0, 1], removing
//                 oscillation at the price of about twice the mixing time.
//   push-sum      column stochastic: node i splits its mass equally over
//                 itself and its out-neighbours, P_ji = 1/(d_i^out + 1)
//                 (Kempe et al. 2003; Nedic & Olshevsky 2015).
//   custom        explicit off-diagonal weights (e.g. from an edge-list file);
//                 the self weight takes what is left of the row.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "topology/graph.h"
#include "topology/mixing_matrix.h"

namespace murmur::topology {

enum class WeightRule { kUniform, kMetropolisHastings, kMaxDegree, kPushSum };

struct WeightOptions {
  WeightRule rule = WeightRule::kMetropolisHastings;
  bool lazy = false;  // (W + I)/2
};

// Parses "uniform", "mh", "maxdeg", "push-sum" and the lazy forms
// "lazy-uniform", "lazy-mh", "lazy-maxdeg". InvalidArgument lists the names.
Result<WeightOptions> ParseWeightOptions(std::string_view name);
std::string WeightOptionsName(const WeightOptions& options);

MixingMatrix UniformWeights(const Graph& g);
// REQUIRES: !g.directed() (the Result forms below return InvalidArgument instead).
MixingMatrix MetropolisHastingsWeights(const Graph& g);
MixingMatrix MaxDegreeWeights(const Graph& g);
MixingMatrix PushSumWeights(const Graph& g);
MixingMatrix Lazy(const MixingMatrix& w);

// Applies `options` to `g`; InvalidArgument when the rule needs an undirected graph.
Result<MixingMatrix> MakeWeights(const Graph& g, const WeightOptions& options);

// The stochasticity a rule guarantees (what Validate should check).
Stochasticity RuleStochasticity(const Graph& g, const WeightOptions& options);

// Custom weights: W_ij = W_ji = w for each undirected edge {i, j} (only W_ij
// for a directed arc j -> i), self weights 1 - (row sum). InvalidArgument
// when a weight is negative or a row's weights exceed 1.
// REQUIRES: weights.size() == edges.size().
Result<MixingMatrix> CustomWeights(NodeId n, std::span<const Edge> edges, std::span<const double> weights,
                                   Directedness directedness);

}  // namespace murmur::topology
