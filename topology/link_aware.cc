#include "topology/link_aware.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <set>
#include <tuple>

#include "core/rng.h"

namespace murmur::topology {

namespace {

double Symmetric(const PairCost& cost, NodeId u, NodeId v) { return std::max(cost(u, v), cost(v, u)); }

struct Candidate {
  double cost;
  std::uint64_t tie;  // a hash of (seed, u, v): equal keys in an order no id pattern shows
  NodeId u, v;        // u < v
  bool operator<(const Candidate& o) const {
    return std::tie(cost, tie, u, v) < std::tie(o.cost, o.tie, o.u, o.v);
  }
};

// Prim's algorithm on the complete graph, O(n^2) time, O(n) memory.
std::vector<Edge> MinimumSpanningTree(NodeId n, const PairCost& cost) {
  std::vector<Edge> tree;
  if (n < 2) return tree;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n, kInf);
  std::vector<NodeId> via(n, 0);
  std::vector<char> in(n, 0);
  NodeId u = 0;
  in[0] = 1;
  for (NodeId added = 1; added < n; ++added) {
    NodeId next = n;
    for (NodeId v = 0; v < n; ++v) {
      if (in[v]) continue;
      const double c = Symmetric(cost, u, v);
      // On a tie the newest tree node wins: equal costs make a path, not a star.
      if (c <= best[v]) {
        best[v] = c;
        via[v] = u;
      }
      if (next == n || best[v] < best[next]) next = v;
    }
    in[next] = 1;
    tree.push_back({std::min(next, via[next]), std::max(next, via[next])});
    u = next;
  }
  return tree;
}

double TourCost(const std::vector<NodeId>& t, std::size_t i, const PairCost& cost) {
  return Symmetric(cost, t[i], t[(i + 1) % t.size()]);
}

}  // namespace

bool IsLinkAwareKind(std::string_view kind) { return kind == "link-aware" || kind == "link-aware-ring"; }

Result<Graph> LinkAwareGraph(NodeId n, std::uint32_t degree, const PairCost& cost, std::uint64_t seed) {
  if (n > kMaxLinkAwareNodes)
    return Status::InvalidArgument("link-aware topologies are limited to " +
                                   std::to_string(kMaxLinkAwareNodes) +
                                   " nodes (they weigh every pair), got " + std::to_string(n));
  if (degree < 1 && n > 1) return Status::InvalidArgument("link-aware needs a degree of at least 1");
  const std::uint64_t d = std::min<std::uint64_t>(degree, n - (n > 0 ? 1 : 0));
  const std::uint64_t target = std::max<std::uint64_t>(n * d / 2, n > 0 ? n - 1 : 0);
  std::vector<Edge> edges = MinimumSpanningTree(n, cost);
  std::set<std::pair<NodeId, NodeId>> have;
  std::vector<double> load(n, 0);  // seconds of uplink a round: one model to each neighbour
  for (const Edge& e : edges) {
    have.emplace(e.u, e.v);
    const double c = Symmetric(cost, e.u, e.v);
    load[e.u] += c;
    load[e.v] += c;
  }
  // Candidates: each node's 4 d cheapest partners.
  std::vector<Candidate> candidates;
  std::vector<Candidate> row;
  for (NodeId u = 0; u < n && edges.size() < target; ++u) {
    row.clear();
    for (NodeId v = 0; v < n; ++v) {
      if (v == u) continue;
      const NodeId a = std::min(u, v), b = std::max(u, v);
      row.push_back({Symmetric(cost, u, v), Mix64(seed ^ Mix64((std::uint64_t{a} << 32) | b)), a, b});
    }
    const auto keep = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(4 * d, row.size()));
    std::partial_sort(row.begin(), row.begin() + keep, row.end());
    candidates.insert(candidates.end(), row.begin(), row.begin() + keep);
  }
  // Greedy: the edge whose busier end would be least busy after it. Keys only
  // grow as loads do, so a popped key that is still current is the least.
  struct Keyed {
    double key;
    Candidate c;
    bool operator>(const Keyed& o) const {
      return std::tie(key, c.tie, c.u, c.v) > std::tie(o.key, o.c.tie, o.c.u, o.c.v);
    }
  };
  auto key = [&](const Candidate& c) { return std::max(load[c.u], load[c.v]) + c.cost; };
  std::priority_queue<Keyed, std::vector<Keyed>, std::greater<>> queue;
  for (const Candidate& c : candidates) queue.push({key(c), c});
  while (edges.size() < target && !queue.empty()) {
    Keyed top = queue.top();
    queue.pop();
    if (have.count({top.c.u, top.c.v}) != 0) continue;
    if (const double k = key(top.c); k > top.key) {
      queue.push({k, top.c});
      continue;
    }
    have.emplace(top.c.u, top.c.v);
    edges.push_back({top.c.u, top.c.v});
    load[top.c.u] += top.c.cost;
    load[top.c.v] += top.c.cost;
  }
  return Graph::FromEdges(n, edges);
}

std::vector<NodeId> LeastCostTour(NodeId n, const PairCost& cost, int max_passes) {
  std::vector<NodeId> tour;
  if (n == 0) return tour;
  // Nearest neighbour from node 0.
  std::vector<char> used(n, 0);
  tour.push_back(0);
  used[0] = 1;
  for (NodeId k = 1; k < n; ++k) {
    const NodeId at = tour.back();
    NodeId best = n;
    double best_cost = 0;
    for (NodeId v = 0; v < n; ++v) {
      if (used[v]) continue;
      const double c = Symmetric(cost, at, v);
      if (best == n || c < best_cost) {
        best = v;
        best_cost = c;
      }
    }
    used[best] = 1;
    tour.push_back(best);
  }
  // 2-opt: edges (a, b) = (t[i], t[i+1]) and (c, e) = (t[j], t[j+1]) become
  // (a, c) and (b, e) by reversing t[i+1 .. j]. Node 0 stays first (i >= 0,
  // the reversed segment starts at i + 1 >= 1).
  // Each pass calls `cost` about 3 n^2 times: at most about 1e9 calls in all.
  const double per_pass = 3.0 * static_cast<double>(n) * static_cast<double>(n);
  const int passes = std::max(1, static_cast<int>(std::min<double>(max_passes, 1e9 / per_pass)));
  for (int pass = 0; pass < passes && n >= 4; ++pass) {
    bool improved = false;
    for (std::size_t i = 0; i + 2 < n; ++i) {
      for (std::size_t j = i + 2; j < n; ++j) {
        if (i == 0 && j + 1 == n) continue;  // the two edges share node 0
        const double before = TourCost(tour, i, cost) + TourCost(tour, j, cost);
        const double after =
            Symmetric(cost, tour[i], tour[j]) + Symmetric(cost, tour[i + 1], tour[(j + 1) % n]);
        // A relative margin keeps rounding from cycling between equal tours.
        if (after < before * (1 - 1e-12)) {
          std::reverse(tour.begin() + static_cast<std::ptrdiff_t>(i + 1),
                       tour.begin() + static_cast<std::ptrdiff_t>(j + 1));
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return tour;
}

EdgeCosts CostOf(const Graph& g, const PairCost& cost) {
  EdgeCosts c;
  for (NodeId u = 0; u < g.num_nodes(); ++u) {
    double load = 0;
    for (NodeId v : g.Neighbors(u)) {
      const double e = Symmetric(cost, u, v);
      c.slowest = std::max(c.slowest, e);
      load += e;
      if (u < v || g.directed()) c.total += e;
    }
    c.busiest = std::max(c.busiest, load);
  }
  return c;
}

Graph TourGraph(const std::vector<NodeId>& tour) {
  const auto n = static_cast<NodeId>(tour.size());
  std::vector<Edge> edges;
  for (NodeId k = 0; n >= 2 && k < n; ++k) edges.push_back({tour[k], tour[(k + 1) % n]});
  return Graph::FromEdgesDedup(n, edges);
}

std::vector<NodeId> RingOrder(const Graph& g) {
  const NodeId n = g.num_nodes();
  if (g.directed()) return {};
  if (n <= 1) return n == 1 ? std::vector<NodeId>{0} : std::vector<NodeId>{};
  if (n == 2) return g.num_edges() == 1 ? std::vector<NodeId>{0, 1} : std::vector<NodeId>{};
  for (NodeId u = 0; u < n; ++u) {
    if (g.Degree(u) != 2) return {};
  }
  std::vector<NodeId> order{0};
  NodeId prev = 0, at = g.Neighbors(0)[0];
  while (at != 0) {
    order.push_back(at);
    const auto nb = g.Neighbors(at);
    const NodeId next = nb[0] == prev ? nb[1] : nb[0];
    prev = at;
    at = next;
    if (order.size() > n) return {};
  }
  if (order.size() != n) return {};  // several cycles
  return order;
}

}  // namespace murmur::topology
