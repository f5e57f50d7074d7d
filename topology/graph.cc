#include "topology/graph.h"

#include <algorithm>
#include <string>

namespace murmur::topology {

Graph Graph::BuildCsr(NodeId n, std::span<const Edge> edges, bool directed) {
  Graph g;
  g.n_ = n;
  g.directed_ = directed;
  g.offsets_.assign(static_cast<std::size_t>(n) + 1, 0);
  for (const Edge& e : edges) {
    ++g.offsets_[e.u + 1];
    if (!directed) ++g.offsets_[e.v + 1];
  }
  for (std::size_t i = 0; i < n; ++i) g.offsets_[i + 1] += g.offsets_[i];
  g.targets_.resize(g.offsets_[n]);
  std::vector<std::size_t> next(g.offsets_.begin(), g.offsets_.end() - 1);
  for (const Edge& e : edges) {
    g.targets_[next[e.u]++] = e.v;
    if (!directed) g.targets_[next[e.v]++] = e.u;
  }
  for (std::size_t u = 0; u < n; ++u)
    std::sort(g.targets_.begin() + static_cast<std::ptrdiff_t>(g.offsets_[u]),
              g.targets_.begin() + static_cast<std::ptrdiff_t>(g.offsets_[u + 1]));
  return g;
}

Result<Graph> Graph::FromEdges(NodeId n, std::span<const Edge> edges, Directedness directedness) {
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    if (e.u >= n || e.v >= n)
      return Status::InvalidArgument("edge " + std::to_string(i) + " (" + std::to_string(e.u) + ", " +
                                     std::to_string(e.v) + "): node " + std::to_string(std::max(e.u, e.v)) +
                                     " out of range for " + std::to_string(n) + " nodes");
    if (e.u == e.v)
      return Status::InvalidArgument("edge " + std::to_string(i) + ": self-loop at node " +
                                     std::to_string(e.u));
  }
  Graph g = BuildCsr(n, edges, directedness == Directedness::kDirected);
  for (NodeId u = 0; u < n; ++u) {
    auto nb = g.Neighbors(u);
    auto dup = std::adjacent_find(nb.begin(), nb.end());
    if (dup != nb.end())
      return Status::InvalidArgument("edge (" + std::to_string(u) + ", " + std::to_string(*dup) +
                                     ") appears more than once");
  }
  return g;
}

Graph Graph::FromEdgesDedup(NodeId n, std::span<const Edge> edges, Directedness directedness) {
  std::vector<Edge> kept;
  kept.reserve(edges.size());
  for (const Edge& e : edges) {
    MURMUR_CHECK(e.u < n && e.v < n);
    if (e.u != e.v) kept.push_back(e);
  }
  Graph g = BuildCsr(n, kept, directedness == Directedness::kDirected);
  // Compact repeated neighbours in place, row by row.
  std::size_t write = 0;
  std::size_t row_begin = 0;
  for (NodeId u = 0; u < n; ++u) {
    std::size_t row_end = g.offsets_[u + 1];
    std::size_t start = write;
    for (std::size_t k = row_begin; k < row_end; ++k)
      if (write == start || g.targets_[write - 1] != g.targets_[k]) g.targets_[write++] = g.targets_[k];
    row_begin = row_end;
    g.offsets_[u + 1] = write;
  }
  g.targets_.resize(write);
  g.targets_.shrink_to_fit();
  return g;
}

bool Graph::HasEdge(NodeId u, NodeId v) const {
  auto nb = Neighbors(u);
  return std::binary_search(nb.begin(), nb.end(), v);
}

Graph Graph::Reversed() const {
  if (!directed_) return *this;
  std::vector<Edge> rev;
  rev.reserve(targets_.size());
  for (NodeId u = 0; u < n_; ++u)
    for (NodeId v : Neighbors(u)) rev.push_back({v, u});
  return BuildCsr(n_, rev, true);
}

std::vector<Edge> Graph::Edges() const {
  std::vector<Edge> out;
  out.reserve(num_edges());
  for (NodeId u = 0; u < n_; ++u)
    for (NodeId v : Neighbors(u))
      if (directed_ || u < v) out.push_back({u, v});
  return out;
}

}  // namespace murmur::topology
