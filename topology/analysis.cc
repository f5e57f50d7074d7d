#include "topology/analysis.h"

#include <algorithm>

namespace murmur::topology {

std::vector<std::uint32_t> BfsDistances(const Graph& g, NodeId source) {
  MURMUR_CHECK(source < g.num_nodes());
  std::vector<std::uint32_t> dist(g.num_nodes(), kUnreachable);
  std::vector<NodeId> frontier{source};
  dist[source] = 0;
  // The queue is the vector itself: nodes are appended in BFS order.
  for (std::size_t head = 0; head < frontier.size(); ++head) {
    NodeId u = frontier[head];
    for (NodeId v : g.Neighbors(u))
      if (dist[v] == kUnreachable) {
        dist[v] = dist[u] + 1;
        frontier.push_back(v);
      }
  }
  return dist;
}

namespace {
bool ReachesAll(const Graph& g) {
  auto d = BfsDistances(g, 0);
  return std::find(d.begin(), d.end(), kUnreachable) == d.end();
}

// (eccentricity, farthest node) of `source`, or kUnreachable eccentricity.
std::pair<std::uint32_t, NodeId> Eccentricity(const Graph& g, NodeId source) {
  auto d = BfsDistances(g, source);
  std::uint32_t ecc = 0;
  NodeId far = source;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (d[v] == kUnreachable) return {kUnreachable, v};
    if (d[v] > ecc) {
      ecc = d[v];
      far = v;
    }
  }
  return {ecc, far};
}
}  // namespace

bool IsConnected(const Graph& g) {
  if (g.num_nodes() <= 1) return true;
  if (!ReachesAll(g)) return false;
  return !g.directed() || ReachesAll(g.Reversed());
}

DegreeStats ComputeDegreeStats(const Graph& g) {
  DegreeStats s;
  if (g.num_nodes() == 0) return s;
  s.min = g.Degree(0);
  std::size_t total = 0;
  for (NodeId u = 0; u < g.num_nodes(); ++u) {
    s.min = std::min(s.min, g.Degree(u));
    s.max = std::max(s.max, g.Degree(u));
    total += g.Degree(u);
  }
  s.mean = static_cast<double>(total) / g.num_nodes();
  return s;
}

DiameterInfo ComputeDiameter(const Graph& g, NodeId exact_limit, int sweeps) {
  DiameterInfo info;
  if (g.num_nodes() <= 1) return info;
  if (!IsConnected(g)) {
    info.finite = false;
    return info;
  }
  if (g.num_nodes() <= exact_limit) {
    for (NodeId u = 0; u < g.num_nodes(); ++u) info.value = std::max(info.value, Eccentricity(g, u).first);
    return info;
  }
  info.exact = false;
  NodeId start = 0;
  for (int s = 0; s < sweeps; ++s) {
    auto [ecc, far] = Eccentricity(g, start);
    info.value = std::max(info.value, ecc);
    start = far;
  }
  return info;
}

}  // namespace murmur::topology
