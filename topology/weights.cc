#include "topology/weights.h"

#include <algorithm>
#include <string>

namespace murmur::topology {
namespace {

// Builds W from per-node neighbour lists and per-arc weights; the self weight
// is 1 minus the off-diagonal row sum. `weight(i, j)` gives W_ij, j != i.
template <typename WeightFn>
MixingMatrix FillRows(const Graph& in_neighbors, WeightFn weight) {
  const NodeId n = in_neighbors.num_nodes();
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1, 0);
  std::vector<MixingEntry> entries;
  entries.reserve(2 * in_neighbors.num_edges() + n);
  for (NodeId i = 0; i < n; ++i) {
    double off = 0;
    for (NodeId j : in_neighbors.Neighbors(i)) off += weight(i, j);
    bool self_done = false;
    for (NodeId j : in_neighbors.Neighbors(i)) {
      if (!self_done && j > i) {
        entries.push_back({i, 1.0 - off});
        self_done = true;
      }
      entries.push_back({j, weight(i, j)});
    }
    if (!self_done) entries.push_back({i, 1.0 - off});
    offsets[i + 1] = entries.size();
  }
  return MixingMatrix::FromRows(n, std::move(offsets), std::move(entries));
}

}  // namespace

Result<WeightOptions> ParseWeightOptions(std::string_view name) {
  WeightOptions o;
  if (name.starts_with("lazy-")) {
    o.lazy = true;
    name.remove_prefix(5);
  }
  if (name == "uniform") {
    o.rule = WeightRule::kUniform;
  } else if (name == "mh") {
    o.rule = WeightRule::kMetropolisHastings;
  } else if (name == "maxdeg") {
    o.rule = WeightRule::kMaxDegree;
  } else if (name == "push-sum" && !o.lazy) {
    o.rule = WeightRule::kPushSum;
  } else {
    return Status::InvalidArgument(
        "unknown weights '" + std::string(o.lazy ? "lazy-" : "") + std::string(name) +
        "' (expected uniform, mh, maxdeg, lazy-uniform, lazy-mh, lazy-maxdeg or push-sum)");
  }
  return o;
}

std::string WeightOptionsName(const WeightOptions& options) {
  std::string base;
  switch (options.rule) {
    case WeightRule::kUniform: base = "uniform"; break;
    case WeightRule::kMetropolisHastings: base = "mh"; break;
    case WeightRule::kMaxDegree: base = "maxdeg"; break;
    case WeightRule::kPushSum: base = "push-sum"; break;
  }
  return options.lazy ? "lazy-" + base : base;
}

MixingMatrix UniformWeights(const Graph& g) {
  Graph in = g.directed() ? g.Reversed() : Graph();
  const Graph& in_neighbors = g.directed() ? in : g;
  return FillRows(in_neighbors,
                  [&](NodeId i, NodeId) { return 1.0 / static_cast<double>(in_neighbors.Degree(i) + 1); });
}

MixingMatrix MetropolisHastingsWeights(const Graph& g) {
  MURMUR_CHECK(!g.directed());
  return FillRows(g, [&](NodeId i, NodeId j) {
    return 1.0 / static_cast<double>(1 + std::max(g.Degree(i), g.Degree(j)));
  });
}

MixingMatrix MaxDegreeWeights(const Graph& g) {
  MURMUR_CHECK(!g.directed());
  std::size_t d_max = 0;
  for (NodeId i = 0; i < g.num_nodes(); ++i) d_max = std::max(d_max, g.Degree(i));
  const double w = 1.0 / static_cast<double>(d_max + 1);
  return FillRows(g, [w](NodeId, NodeId) { return w; });
}

MixingMatrix PushSumWeights(const Graph& g) {
  // Column i of P holds 1/(d_i^out + 1) on i and its out-neighbours: build
  // the transpose row by row, then transpose.
  const NodeId n = g.num_nodes();
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1, 0);
  std::vector<MixingEntry> entries;
  entries.reserve(2 * g.num_edges() + n);
  for (NodeId i = 0; i < n; ++i) {
    const double share = 1.0 / static_cast<double>(g.Degree(i) + 1);
    bool self_done = false;
    for (NodeId j : g.Neighbors(i)) {
      if (!self_done && j > i) {
        entries.push_back({i, share});
        self_done = true;
      }
      entries.push_back({j, share});
    }
    if (!self_done) entries.push_back({i, share});
    offsets[i + 1] = entries.size();
  }
  return MixingMatrix::FromRows(n, std::move(offsets), std::move(entries)).Transposed();
}

MixingMatrix Lazy(const MixingMatrix& w) {
  std::vector<Triplet> t;
  t.reserve(w.num_entries() + w.size());
  for (NodeId i = 0; i < w.size(); ++i) {
    bool has_self = false;
    for (const MixingEntry& e : w.Row(i)) {
      double v = 0.5 * e.weight;
      if (e.col == i) {
        v += 0.5;
        has_self = true;
      }
      t.push_back({i, e.col, v});
    }
    if (!has_self) t.push_back({i, i, 0.5});
  }
  return std::move(MixingMatrix::FromEntries(w.size(), t)).value();
}

Result<MixingMatrix> MakeWeights(const Graph& g, const WeightOptions& options) {
  if (g.directed() &&
      (options.rule == WeightRule::kMetropolisHastings || options.rule == WeightRule::kMaxDegree))
    return Status::InvalidArgument(WeightOptionsName(options) +
                                   " weights need an undirected graph (use uniform or push-sum)");
  MixingMatrix w;
  switch (options.rule) {
    case WeightRule::kUniform: w = UniformWeights(g); break;
    case WeightRule::kMetropolisHastings: w = MetropolisHastingsWeights(g); break;
    case WeightRule::kMaxDegree: w = MaxDegreeWeights(g); break;
    case WeightRule::kPushSum: w = PushSumWeights(g); break;
  }
  return options.lazy ? Lazy(w) : w;
}

Stochasticity RuleStochasticity(const Graph& g, const WeightOptions& options) {
  switch (options.rule) {
    case WeightRule::kMetropolisHastings:
    case WeightRule::kMaxDegree: return Stochasticity::kDoubly;
    case WeightRule::kPushSum: return Stochasticity::kColumn;
    case WeightRule::kUniform: break;
  }
  if (g.num_nodes() == 0) return Stochasticity::kDoubly;
  Graph in = g.directed() ? g.Reversed() : Graph();
  const Graph& in_neighbors = g.directed() ? in : g;
  for (NodeId i = 0; i < g.num_nodes(); ++i)
    if (g.Degree(i) != g.Degree(0) || in_neighbors.Degree(i) != g.Degree(0)) return Stochasticity::kRow;
  return Stochasticity::kDoubly;
}

Result<MixingMatrix> CustomWeights(NodeId n, std::span<const Edge> edges, std::span<const double> weights,
                                   Directedness directedness) {
  MURMUR_CHECK(weights.size() == edges.size());
  std::vector<Triplet> t;
  std::vector<double> row_sums(n, 0.0);
  t.reserve(2 * edges.size() + n);
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const Edge& e = edges[k];
    if (e.u >= n || e.v >= n)
      return Status::InvalidArgument("edge " + std::to_string(k) + " out of range for " + std::to_string(n) +
                                     " nodes");
    if (!(weights[k] >= 0))
      return Status::InvalidArgument("edge " + std::to_string(k) + " (" + std::to_string(e.u) + ", " +
                                     std::to_string(e.v) + ") has negative weight");
    t.push_back({e.v, e.u, weights[k]});
    row_sums[e.v] += weights[k];
    if (directedness == Directedness::kUndirected) {
      t.push_back({e.u, e.v, weights[k]});
      row_sums[e.u] += weights[k];
    }
  }
  for (NodeId i = 0; i < n; ++i) {
    if (row_sums[i] > 1.0 + kStochasticTolerance)
      return Status::InvalidArgument("row " + std::to_string(i) + ": edge weights sum to " +
                                     std::to_string(row_sums[i]) + ", more than 1");
    t.push_back({i, i, std::max(0.0, 1.0 - row_sums[i])});
  }
  return MixingMatrix::FromEntries(n, t);
}

}  // namespace murmur::topology
