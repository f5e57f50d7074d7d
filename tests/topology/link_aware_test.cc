// Link-aware graphs and rings against truths computed apart from them: the
// least bottleneck by a threshold search with union-find, the optimal tour of
// points in convex position (their circle order), and counts of slow links.
#include "topology/link_aware.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>

#include "core/rng.h"
#include "topology/analysis.h"
#include "topology/factory.h"
#include "topology/generators.h"

namespace murmur::topology {
namespace {

// Nodes in `clusters` groups by a shuffled assignment; 1 inside a group, 100 across.
struct Clusters {
  std::vector<int> group;
  double operator()(NodeId u, NodeId v) const { return group[u] == group[v] ? 1.0 : 100.0; }
};

Clusters MakeClusters(NodeId n, int k, std::uint64_t seed) {
  Clusters c;
  for (NodeId i = 0; i < n; ++i) c.group.push_back(static_cast<int>(i % k));
  Rng rng(seed);
  rng.Shuffle(std::span<int>(c.group));
  return c;
}

std::size_t Crossing(const Graph& g, const Clusters& c) {
  std::size_t k = 0;
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    for (NodeId v : g.Neighbors(u)) k += u < v && c.group[u] != c.group[v];
  return k;
}

// The least c such that the edges of cost <= c connect all nodes (union-find).
double LeastBottleneck(NodeId n, const PairCost& cost) {
  std::vector<double> costs;
  for (NodeId u = 0; u < n; ++u)
    for (NodeId v = u + 1; v < n; ++v) costs.push_back(std::max(cost(u, v), cost(v, u)));
  std::sort(costs.begin(), costs.end());
  for (double c : costs) {
    std::vector<NodeId> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](NodeId x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    NodeId parts = n;
    for (NodeId u = 0; u < n; ++u)
      for (NodeId v = u + 1; v < n; ++v)
        if (std::max(cost(u, v), cost(v, u)) <= c && find(u) != find(v)) {
          parent[find(u)] = find(v);
          --parts;
        }
    if (parts == 1) return c;
  }
  return 0;
}

double Slowest(const Graph& g, const PairCost& cost) {
  double worst = 0;
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    for (NodeId v : g.Neighbors(u)) worst = std::max(worst, std::max(cost(u, v), cost(v, u)));
  return worst;
}

double TourLength(const std::vector<NodeId>& t, const PairCost& cost) {
  double sum = 0;
  for (std::size_t k = 0; k < t.size(); ++k) sum += cost(t[k], t[(k + 1) % t.size()]);
  return sum;
}

TEST_CASE(
    "link-aware: a D-regular graph's edge count, connected, crossing slow links only as often as needed") {
  for (int k : {2, 4, 8}) {
    for (std::uint32_t d : {3u, 4u, 6u}) {
      const NodeId n = 64;
      const Clusters c = MakeClusters(n, k, 7);
      const PairCost cost = c;
      Graph g = LinkAwareGraph(n, d, cost, 1).value();
      CAPTURE(k);
      CAPTURE(d);
      CHECK(g.num_edges() == n * d / 2);
      CHECK(IsConnected(g));
      // Connecting k groups takes k - 1 slow edges, and groups of 64 / k >= 16
      // nodes have fast partners for the rest. With groups of 8 a node that
      // holds one of those slow edges is as loaded as a slow edge between two
      // others would make them, so a few more may come (a round waits no longer).
      const std::size_t crossing = Crossing(g, c);
      if (k <= 4) CHECK(crossing == static_cast<std::size_t>(k - 1));
      CHECK(crossing <= static_cast<std::size_t>(2 * (k - 1)));
      // A random d-regular graph crosses in about (k - 1) / k of its edges.
      Graph random = RandomRegular(n, d, 1).value();
      CHECK(Crossing(random, c) > 4 * crossing);
      for (NodeId u = 0; u < n; ++u) CHECK(g.Degree(u) <= d + 1);
    }
  }
}

TEST_CASE("link-aware: the slowest chosen link is the least bottleneck that connects the nodes") {
  // A metric cost: distance between random points, and a rate that falls with it.
  const NodeId n = 48;
  std::vector<Point2> p = UniformPositions(n, 3);
  const PairCost cost = [&](NodeId u, NodeId v) {
    const double d = std::hypot(p[u].x - p[v].x, p[u].y - p[v].y);
    return 0.01 + 1.0 / (100.0 * std::pow(0.01, d / std::sqrt(2.0)));
  };
  Graph tree = LinkAwareGraph(n, 1, cost, 1).value();  // degree 1: the spanning tree alone
  CHECK(tree.num_edges() == n - 1);
  CHECK(IsConnected(tree));
  CHECK(Slowest(tree, cost) == doctest::Approx(LeastBottleneck(n, cost)).epsilon(1e-12));
  // With equal costs the tree is a path (degree <= 2), not a star.
  Graph flat = LinkAwareGraph(
                   n, 1, [](NodeId, NodeId) { return 1.0; }, 1)
                   .value();
  for (NodeId u = 0; u < n; ++u) CHECK(flat.Degree(u) <= 2);
  CHECK(!LinkAwareGraph(kMaxLinkAwareNodes + 1, 4, cost, 1).ok());
}

TEST_CASE("link-aware-ring: the optimal tour of points on a circle, and each site entered once") {
  const NodeId n = 40;
  // Points on a circle in a shuffled order: any tour that does not cross
  // itself is the circle order, and 2-opt leaves no crossing.
  std::vector<NodeId> angle_of(n);
  std::iota(angle_of.begin(), angle_of.end(), 0);
  Rng rng(11);
  rng.Shuffle(std::span<NodeId>(angle_of));
  const PairCost cost = [&](NodeId u, NodeId v) {
    const double a = 2 * std::numbers::pi * angle_of[u] / n, b = 2 * std::numbers::pi * angle_of[v] / n;
    return std::hypot(std::cos(a) - std::cos(b), std::sin(a) - std::sin(b));
  };
  std::vector<NodeId> tour = LeastCostTour(n, cost);
  std::vector<NodeId> sorted = tour;
  std::sort(sorted.begin(), sorted.end());
  for (NodeId i = 0; i < n; ++i) CHECK(sorted[i] == i);
  CHECK(tour[0] == 0);
  const double perimeter = n * 2 * std::sin(std::numbers::pi / n);
  CHECK(TourLength(tour, cost) == doctest::Approx(perimeter).epsilon(1e-9));

  // Sites: the cheapest cycle crosses between groups exactly once per group.
  const Clusters c = MakeClusters(60, 5, 9);
  std::vector<NodeId> ring = LeastCostTour(60, c);
  CHECK(Crossing(TourGraph(ring), c) == 5);
}

TEST_CASE("RingOrder walks one cycle from node 0 and refuses anything else") {
  std::vector<NodeId> ids(9);
  std::iota(ids.begin(), ids.end(), 0);
  CHECK(RingOrder(Ring(9)) == ids);
  std::vector<NodeId> tour = {0, 5, 2, 7, 1, 8, 3, 6, 4};
  std::vector<NodeId> walked = RingOrder(TourGraph(tour));
  std::vector<NodeId> reversed = {0, 4, 6, 3, 8, 1, 7, 2, 5};
  CHECK((walked == tour || walked == reversed));
  CHECK(walked == reversed);  // towards 0's smaller neighbour, 4
  CHECK(RingOrder(Torus(3, 3)).empty());
  CHECK(RingOrder(
            Graph::FromEdges(6, std::vector<Edge>{{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}}).value())
            .empty());  // two triangles
  CHECK(RingOrder(Graph::FromEdges(4, std::vector<Edge>{{0, 1}, {1, 2}, {2, 3}}).value()).empty());  // a path
  CHECK(RingOrder(Graph::FromEdges(2, std::vector<Edge>{{0, 1}}).value()) == std::vector<NodeId>{0, 1});
}

TEST_CASE("CostOf: the slowest edge, the sum of the edges and the busiest node's load") {
  // Costs 1 (0-1), 2 (1-2), 4 (0-2), given one way; the other way is cheaper
  // and CostOf takes the larger.
  const PairCost cost = [](NodeId u, NodeId v) {
    const NodeId a = std::min(u, v), b = std::max(u, v);
    const double c = a == 0 && b == 1 ? 1.0 : a == 1 && b == 2 ? 2.0 : 4.0;
    return u < v ? c : c / 8;
  };
  const EdgeCosts path = CostOf(Graph::FromEdges(3, std::vector<Edge>{{0, 1}, {1, 2}}).value(), cost);
  CHECK(path.slowest == 2.0);
  CHECK(path.total == 3.0);
  CHECK(path.busiest == 3.0);  // node 1: 1 + 2
  const EdgeCosts triangle =
      CostOf(Graph::FromEdges(3, std::vector<Edge>{{0, 1}, {1, 2}, {0, 2}}).value(), cost);
  CHECK(triangle.slowest == 4.0);
  CHECK(triangle.total == 7.0);
  CHECK(triangle.busiest == 6.0);  // node 2: 2 + 4
}

TEST_CASE("MakeSchedule builds the link-aware kinds only with link costs") {
  TopologySpec spec;
  spec.kind = "link-aware";
  spec.nodes = 16;
  CHECK(MakeSchedule(spec).status().message().find("link costs") != std::string::npos);
  const Clusters c = MakeClusters(16, 4, 1);
  spec.link_cost = c;
  auto s = MakeSchedule(spec).value();
  CHECK(s->GraphAt(0).num_edges() == 32);
  CHECK(s->At(0).Validate(Stochasticity::kDoubly, nullptr).ok());
  spec.kind = "link-aware-ring";
  auto r = MakeSchedule(spec).value();
  CHECK(RingOrder(r->GraphAt(0)).size() == 16);
  CHECK(Crossing(r->GraphAt(0), c) == 4);
}

}  // namespace
}  // namespace murmur::topology
