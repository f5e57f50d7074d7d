#include "topology/generators.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include "core/rng.h"
#include "topology/analysis.h"

namespace murmur::topology {
namespace {

Rng TopologyRng(std::uint64_t seed, int attempt) {
  return Rng(seed, 0, RngPurpose::kTopology).Fork(static_cast<std::uint64_t>(attempt));
}

std::uint64_t EdgeKey(NodeId u, NodeId v) {
  if (u > v) std::swap(u, v);
  return (static_cast<std::uint64_t>(u) << 32) | v;
}

// Adjacency of a multigraph in which every node has exactly d edge ends:
// node u's ends are slots [u d, u d + count[u]). A loop occupies two of u's slots.
class RegularMultigraph {
 public:
  RegularMultigraph(NodeId n, std::uint32_t d) : d_(d), adj_(static_cast<std::size_t>(n) * d), count_(n, 0) {}
  void Add(NodeId u, NodeId v) {
    adj_[Slot(u, count_[u]++)] = v;
    adj_[Slot(v, count_[v]++)] = u;
  }
  void Remove(NodeId u, NodeId v) {
    RemoveEnd(u, v);
    RemoveEnd(v, u);
  }
  // Number of ends of u that lead to v (a loop counts 2).
  std::uint32_t Multiplicity(NodeId u, NodeId v) const {
    std::uint32_t m = 0;
    for (std::uint32_t k = 0; k < count_[u]; ++k) m += adj_[Slot(u, k)] == v;
    return m;
  }
  bool Bad(const Edge& e) const { return e.u == e.v || Multiplicity(e.u, e.v) > 1; }

 private:
  std::size_t Slot(NodeId u, std::uint32_t k) const { return static_cast<std::size_t>(u) * d_ + k; }
  void RemoveEnd(NodeId u, NodeId v) {
    for (std::uint32_t k = 0; k < count_[u]; ++k) {
      if (adj_[Slot(u, k)] == v) {
        adj_[Slot(u, k)] = adj_[Slot(u, count_[u] - 1)];
        --count_[u];
        return;
      }
    }
    MURMUR_CHECK_MSG(false, "removing an edge that is not there");
  }
  std::uint32_t d_;
  std::vector<NodeId> adj_;
  std::vector<std::uint32_t> count_;
};

// One configuration-model sample repaired into a simple graph by double-edge
// switches; false when some loop or repeat could not be switched away.
bool SampleSimpleRegular(NodeId n, std::uint32_t d, Rng& rng, std::vector<Edge>& edges) {
  std::vector<NodeId> stubs(static_cast<std::size_t>(n) * d);
  for (std::size_t k = 0; k < stubs.size(); ++k) stubs[k] = static_cast<NodeId>(k / d);
  rng.Shuffle(std::span<NodeId>(stubs));
  edges.resize(stubs.size() / 2);
  RegularMultigraph mg(n, d);
  std::vector<std::size_t> bad;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    edges[k] = {stubs[2 * k], stubs[2 * k + 1]};
    mg.Add(edges[k].u, edges[k].v);
  }
  for (std::size_t k = 0; k < edges.size(); ++k)
    if (mg.Bad(edges[k])) bad.push_back(k);
  constexpr int kSwitchTries = 1000;
  for (std::size_t i : bad) {
    int tries = 0;
    while (mg.Bad(edges[i])) {
      if (++tries > kSwitchTries) return false;
      std::size_t j = static_cast<std::size_t>(rng.UniformInt(edges.size()));
      if (j == i) continue;
      NodeId a = edges[i].u, b = edges[i].v, c = edges[j].u, e = edges[j].v;
      if (rng.Bernoulli(0.5)) std::swap(c, e);
      // Replace {a, b}, {c, e} by {a, c}, {b, e}: degrees are unchanged.
      if (a == c || b == e || EdgeKey(a, c) == EdgeKey(b, e)) continue;
      if (mg.Multiplicity(a, c) != 0 || mg.Multiplicity(b, e) != 0) continue;
      mg.Remove(a, b);
      mg.Remove(edges[j].u, edges[j].v);
      mg.Add(a, c);
      mg.Add(b, e);
      edges[i] = {a, c};
      edges[j] = {b, e};
    }
  }
  return true;
}

}  // namespace

Graph Complete(NodeId n) {
  MURMUR_CHECK(n <= kMaxCompleteNodes);
  std::vector<Edge> e;
  e.reserve(static_cast<std::size_t>(n) * (n - (n > 0)) / 2);
  for (NodeId u = 0; u < n; ++u)
    for (NodeId v = u + 1; v < n; ++v) e.push_back({u, v});
  return Graph::FromEdgesDedup(n, e);
}

Graph Ring(NodeId n) {
  std::vector<Edge> e;
  e.reserve(n);
  for (NodeId u = 0; u < n; ++u)
    e.push_back({u, static_cast<NodeId>((static_cast<std::uint64_t>(u) + 1) % n)});
  return Graph::FromEdgesDedup(n, e);
}

Graph Dumbbell(NodeId n) {
  MURMUR_CHECK(n <= 2 * kMaxCompleteNodes);
  const NodeId h = n / 2;
  std::vector<Edge> e;
  for (NodeId u = 0; u < n; ++u) {
    const NodeId end = u < h ? h : n;
    for (NodeId v = u + 1; v < end; ++v) e.push_back({u, v});
  }
  if (h > 0) e.push_back({h - 1, h});
  return Graph::FromEdgesDedup(n, e);
}

Graph Torus(NodeId p, NodeId q) {
  const NodeId n = p * q;
  std::vector<Edge> e;
  e.reserve(2 * static_cast<std::size_t>(n));
  for (NodeId a = 0; a < p; ++a)
    for (NodeId b = 0; b < q; ++b) {
      e.push_back({a * q + b, ((a + 1) % p) * q + b});
      e.push_back({a * q + b, a * q + (b + 1) % q});
    }
  return Graph::FromEdgesDedup(n, e);
}

Graph Star(NodeId n) {
  std::vector<Edge> e;
  for (NodeId v = 1; v < n; ++v) e.push_back({0, v});
  return Graph::FromEdgesDedup(n, e);
}

Graph Hypercube(NodeId n) {
  MURMUR_CHECK(n > 0 && (n & (n - 1)) == 0);
  std::vector<Edge> e;
  for (NodeId u = 0; u < n; ++u)
    for (NodeId bit = 1; bit < n; bit <<= 1)
      if ((u & bit) == 0) e.push_back({u, u | bit});
  return Graph::FromEdgesDedup(n, e);
}

std::uint32_t CeilLog2(NodeId n) {
  std::uint32_t k = 0;
  while ((std::uint64_t{1} << k) < n) ++k;
  return k;
}

Graph Exponential(NodeId n) {
  std::vector<Edge> e;
  const std::uint32_t tau = CeilLog2(n);
  for (NodeId u = 0; u < n; ++u)
    for (std::uint32_t k = 0; k < tau; ++k)
      e.push_back({u, static_cast<NodeId>((u + (std::uint64_t{1} << k)) % n)});
  return Graph::FromEdgesDedup(n, e, Directedness::kDirected);
}

Result<Graph> RandomRegular(NodeId n, std::uint32_t d, std::uint64_t seed, int max_attempts) {
  // Degree 0 connects nothing and degree 1 only pairs: refused here, not
  // after max_attempts samples that cannot succeed.
  if ((d == 0 && n > 1) || (d == 1 && n > 2))
    return Status::InvalidArgument("degree " + std::to_string(d) + ": a connected regular graph on " +
                                   std::to_string(n) + " nodes needs degree at least 2");
  if (n > 0 && d >= n)
    return Status::InvalidArgument("degree " + std::to_string(d) + " needs more than " + std::to_string(d) +
                                   " nodes, got " + std::to_string(n));
  if ((static_cast<std::uint64_t>(n) * d) % 2 != 0)
    return Status::InvalidArgument("no " + std::to_string(d) + "-regular graph on " + std::to_string(n) +
                                   " nodes: n d must be even");
  std::vector<Edge> edges;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    Rng rng = TopologyRng(seed, attempt);
    if (!SampleSimpleRegular(n, d, rng, edges)) continue;
    Graph g = Graph::FromEdgesDedup(n, edges);
    MURMUR_CHECK(g.num_edges() == edges.size());
    if (IsConnected(g)) return g;
  }
  return Status::FailedPrecondition("no connected " + std::to_string(d) + "-regular graph on " +
                                    std::to_string(n) + " nodes in " + std::to_string(max_attempts) +
                                    " samples");
}

Result<Graph> ErdosRenyi(NodeId n, double p, std::uint64_t seed, int max_attempts) {
  if (!(p >= 0 && p <= 1))
    return Status::InvalidArgument("edge probability " + std::to_string(p) + " not in [0, 1]");
  if (p == 1 && n > kMaxCompleteNodes)
    return Status::InvalidArgument("G(n, 1) on " + std::to_string(n) + " nodes is too large");
  std::vector<Edge> edges;
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    edges.clear();
    if (p == 1) return Complete(n);
    if (p > 0) {
      Rng rng = TopologyRng(seed, attempt);
      const double log_q = std::log1p(-p);
      // Batagelj & Brandes 2005, algorithm 1: skip a geometric number of
      // non-edges between consecutive edges of the lower triangle.
      std::int64_t v = 1, w = -1;
      while (v < n) {
        w += 1 + static_cast<std::int64_t>(std::floor(std::log1p(-rng.Uniform()) / log_q));
        while (w >= v && v < n) {
          w -= v;
          ++v;
        }
        if (v < n) edges.push_back({static_cast<NodeId>(v), static_cast<NodeId>(w)});
      }
    }
    Graph g = Graph::FromEdgesDedup(n, edges);
    if (IsConnected(g)) return g;
  }
  return Status::FailedPrecondition("G(" + std::to_string(n) + ", " + std::to_string(p) +
                                    ") was not connected in " + std::to_string(max_attempts) +
                                    " samples (connectivity needs p above ln(n)/n)");
}

Result<Graph> WattsStrogatz(NodeId n, std::uint32_t d, double beta, std::uint64_t seed, int max_attempts) {
  if (d % 2 != 0 || (n > 0 && d >= n))
    return Status::InvalidArgument("small-world degree " + std::to_string(d) +
                                   " must be even and below n = " + std::to_string(n));
  if (!(beta >= 0 && beta <= 1))
    return Status::InvalidArgument("rewiring probability " + std::to_string(beta) + " not in [0, 1]");
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    Rng rng = TopologyRng(seed, attempt);
    std::unordered_set<std::uint64_t> present;
    std::vector<Edge> edges;
    for (NodeId i = 0; i < n; ++i)
      for (std::uint32_t j = 1; j <= d / 2; ++j) {
        Edge e{i, static_cast<NodeId>((static_cast<std::uint64_t>(i) + j) % n)};
        edges.push_back(e);
        present.insert(EdgeKey(e.u, e.v));
      }
    // Rewire lattice edges in the order of Watts & Strogatz: by distance j, then node.
    std::vector<std::uint32_t> degree(n, d);
    for (std::uint32_t j = 1; j <= d / 2; ++j)
      for (NodeId i = 0; i < n; ++i) {
        Edge& e = edges[static_cast<std::size_t>(i) * (d / 2) + (j - 1)];
        if (!rng.Bernoulli(beta) || degree[i] >= n - 1) continue;
        NodeId w;
        do {
          w = static_cast<NodeId>(rng.UniformInt(n));
        } while (w == i || present.count(EdgeKey(i, w)) != 0);
        present.erase(EdgeKey(e.u, e.v));
        --degree[e.v];
        ++degree[w];
        e.v = w;
        present.insert(EdgeKey(i, w));
      }
    Graph g = Graph::FromEdgesDedup(n, edges);
    if (IsConnected(g)) return g;
  }
  return Status::FailedPrecondition("small world on " + std::to_string(n) + " nodes not connected in " +
                                    std::to_string(max_attempts) + " samples");
}

Result<Graph> RandomGeometric(std::span<const Point2> positions, double radius) {
  if (!(radius > 0) || !std::isfinite(radius))
    return Status::InvalidArgument("radius " + std::to_string(radius) + " must be positive and finite");
  if (positions.size() > kNoNode) return Status::InvalidArgument("too many positions");
  const NodeId n = static_cast<NodeId>(positions.size());
  double min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  for (NodeId i = 0; i < n; ++i) {
    const Point2& p = positions[i];
    if (!std::isfinite(p.x) || !std::isfinite(p.y))
      return Status::InvalidArgument("position of node " + std::to_string(i) + " is not finite");
    if (i == 0 || p.x < min_x) min_x = p.x;
    if (i == 0 || p.y < min_y) min_y = p.y;
    if (i == 0 || p.x > max_x) max_x = p.x;
    if (i == 0 || p.y > max_y) max_y = p.y;
  }
  constexpr double kMaxCells = 1e9;  // per axis; keeps cell coordinates exact in int64
  if ((max_x - min_x) / radius > kMaxCells || (max_y - min_y) / radius > kMaxCells)
    return Status::InvalidArgument("radius " + std::to_string(radius) +
                                   " too small for the spread of positions");
  struct Cell {
    std::int64_t cx, cy;
    NodeId node;
  };
  std::vector<Cell> cells(n);
  for (NodeId i = 0; i < n; ++i)
    cells[i] = {static_cast<std::int64_t>((positions[i].x - min_x) / radius),
                static_cast<std::int64_t>((positions[i].y - min_y) / radius), i};
  auto less = [](const Cell& a, const Cell& b) {
    return a.cx != b.cx ? a.cx < b.cx : a.cy != b.cy ? a.cy < b.cy : a.node < b.node;
  };
  std::sort(cells.begin(), cells.end(), less);
  std::vector<Edge> edges;
  const double r2 = radius * radius;
  for (const Cell& c : cells) {
    for (std::int64_t dx = -1; dx <= 1; ++dx)
      for (std::int64_t dy = -1; dy <= 1; ++dy) {
        Cell lo{c.cx + dx, c.cy + dy, 0};
        auto it = std::lower_bound(cells.begin(), cells.end(), lo, less);
        for (; it != cells.end() && it->cx == lo.cx && it->cy == lo.cy; ++it) {
          if (it->node <= c.node) continue;
          double ddx = positions[it->node].x - positions[c.node].x;
          double ddy = positions[it->node].y - positions[c.node].y;
          if (ddx * ddx + ddy * ddy <= r2) edges.push_back({c.node, it->node});
        }
      }
  }
  return Graph::FromEdgesDedup(n, edges);
}

std::vector<Point2> UniformPositions(NodeId n, std::uint64_t seed) {
  Rng rng(seed, 0, RngPurpose::kTopology);
  std::vector<Point2> p(n);
  for (Point2& q : p) {
    q.x = rng.Uniform();
    q.y = rng.Uniform();
  }
  return p;
}

}  // namespace murmur::topology
