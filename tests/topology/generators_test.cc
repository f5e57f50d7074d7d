#include "topology/generators.h"

#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/rng.h"
#include "topology/analysis.h"
#include "topology/factory.h"
#include "topology/spectral.h"
#include "topology/weights.h"

namespace murmur::topology {
namespace {

std::set<std::pair<NodeId, NodeId>> EdgeSet(const Graph& g) {
  std::set<std::pair<NodeId, NodeId>> s;
  for (const Edge& e : g.Edges()) s.insert({e.u, e.v});
  return s;
}

TEST_CASE("Deterministic generators have their textbook degrees and edge counts") {
  CHECK(Complete(7).num_edges() == 21);
  CHECK(Ring(2).num_edges() == 1);
  CHECK(Ring(1).num_edges() == 0);
  CHECK(Torus(4, 6).num_edges() == 48);
  CHECK(ComputeDegreeStats(Torus(4, 6)).min == 4);
  CHECK(Torus(2, 2).num_edges() == 4);  // wrap-around repeats collapse: a 4-cycle
  CHECK(Star(6).Degree(0) == 5);
  CHECK(Hypercube(64).num_edges() == 64 * 6 / 2);
  Graph e = Exponential(10);
  CHECK(e.directed());
  CHECK(e.num_edges() == 10 * 4);
  CHECK(e.HasEdge(9, (9 + 8) % 10));
  CHECK(CeilLog2(1) == 0);
  CHECK(CeilLog2(2) == 1);
  CHECK(CeilLog2(6) == 3);
  CHECK(CeilLog2(1024) == 10);
}

TEST_CASE("The dumbbell is two cliques and one bridge, whose removal disconnects it") {
  for (NodeId n : {2u, 3u, 8u, 16u, 17u}) {
    CAPTURE(n);
    const NodeId h = n / 2, k = n - h;
    Graph g = Dumbbell(n);
    CHECK(g.num_edges() == h * (h - 1) / 2 + k * (k - 1) / 2 + 1);
    CHECK(IsConnected(g));
    CHECK(g.HasEdge(h - 1, h));
    if (n >= 4) {
      CHECK(g.Degree(0) == h - 1);
      CHECK(g.Degree(h - 1) == h);  // its clique and the bridge
    }
    std::vector<Edge> cut;
    for (const Edge& e : g.Edges()) {
      if (!(e.u == h - 1 && e.v == h)) cut.push_back(e);
    }
    CHECK(!IsConnected(Graph::FromEdgesDedup(n, cut)));
  }
  CHECK(Dumbbell(1).num_edges() == 0);
}

TEST_CASE("Random regular graphs are simple, d-regular, connected and seed-determined") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    for (auto [n, d] : std::vector<std::pair<NodeId, std::uint32_t>>{{10, 3}, {50, 4}, {101, 6}, {8, 7}}) {
      CAPTURE(seed);
      CAPTURE(n);
      auto g = RandomRegular(n, d, seed);
      REQUIRE(g.ok());
      DegreeStats s = ComputeDegreeStats(*g);
      CHECK(s.min == d);
      CHECK(s.max == d);
      CHECK(IsConnected(*g));
      // Simple: rebuilding from the edge list with full checks succeeds.
      auto edges = g->Edges();
      CHECK(Graph::FromEdges(n, edges).ok());
      CHECK(EdgeSet(RandomRegular(n, d, seed).value()) == EdgeSet(*g));
    }
  }
  CHECK(EdgeSet(RandomRegular(50, 4, 1).value()) != EdgeSet(RandomRegular(50, 4, 2).value()));
  CHECK(RandomRegular(5, 3, 1).status().code() == StatusCode::kInvalidArgument);  // n d odd
  CHECK(RandomRegular(4, 4, 1).status().code() == StatusCode::kInvalidArgument);  // d >= n
  // Degrees 0 and 1 cannot connect more than one or two nodes: refused up
  // front with the reason, not as "no connected graph in 100 samples".
  for (std::uint32_t d : {0u, 1u}) {
    CAPTURE(d);
    const Status s = RandomRegular(16, d, 1).status();
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(s.message().find("needs degree at least 2") != std::string::npos);
  }
  CHECK(RandomRegular(2, 1, 1).ok());  // one edge joins two nodes
}

TEST_CASE("Erdos-Renyi edge counts follow Binomial(n(n-1)/2, p)") {
  const NodeId n = 400;
  const double p = 0.05;
  const double pairs = n * (n - 1) / 2.0;
  double total = 0;
  const int samples = 20;
  for (int seed = 1; seed <= samples; ++seed) {
    auto g = ErdosRenyi(n, p, seed);
    REQUIRE(g.ok());
    CHECK(IsConnected(*g));
    CHECK(Graph::FromEdges(n, g->Edges()).ok());
    total += static_cast<double>(g->num_edges());
  }
  // Mean of 20 samples: sd = sqrt(pairs p (1 - p) / 20) ~ 21; allow 5 sd.
  CHECK(std::abs(total / samples - pairs * p) < 5 * std::sqrt(pairs * p * (1 - p) / samples));
  CHECK(ErdosRenyi(200, 0.0, 1).status().code() == StatusCode::kFailedPrecondition);
  CHECK(ErdosRenyi(10, 1.5, 1).status().code() == StatusCode::kInvalidArgument);
  CHECK(ErdosRenyi(10, 1.0, 1).value().num_edges() == 45);
}

TEST_CASE("Watts-Strogatz keeps n d / 2 edges, beta = 0 is the ring lattice") {
  Graph lattice = WattsStrogatz(30, 4, 0.0, 1).value();
  for (NodeId i = 0; i < 30; ++i) {
    CHECK(lattice.HasEdge(i, (i + 1) % 30));
    CHECK(lattice.HasEdge(i, (i + 2) % 30));
  }
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Graph g = WattsStrogatz(200, 6, 0.3, seed).value();
    CHECK(g.num_edges() == 600);
    CHECK(IsConnected(g));
    CHECK(Graph::FromEdges(200, g.Edges()).ok());
  }
  CHECK(!WattsStrogatz(10, 3, 0.1, 1).ok());
}

TEST_CASE("Random geometric graph equals the all-pairs definition") {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    for (double radius : {0.05, 0.1, 0.3, 2.0}) {
      CAPTURE(seed);
      CAPTURE(radius);
      std::vector<Point2> pos = UniformPositions(300, seed);
      for (Point2& p : pos) p.x *= 1.5;  // a non-square box
      Graph g = RandomGeometric(pos, radius).value();
      std::set<std::pair<NodeId, NodeId>> ref;
      for (NodeId i = 0; i < 300; ++i)
        for (NodeId j = i + 1; j < 300; ++j)
          if (std::hypot(pos[i].x - pos[j].x, pos[i].y - pos[j].y) <= radius) ref.insert({i, j});
      CHECK(EdgeSet(g) == ref);
    }
  }
  std::vector<Point2> pos = {{0, 0}, {1, 0}};
  CHECK(!RandomGeometric(pos, 0.0).ok());
  CHECK(!RandomGeometric(pos, std::nan("")).ok());
  std::vector<Point2> bad = {{0, 0}, {INFINITY, 0}};
  CHECK(!RandomGeometric(bad, 1.0).ok());
  CHECK(RandomGeometric(std::vector<Point2>{}, 1.0).value().num_nodes() == 0);
}

TEST_CASE("Every kind, weight rule and seed yields a valid mixing matrix") {
  const std::vector<std::string> rules = {"uniform", "mh",          "maxdeg",  "lazy-uniform",
                                          "lazy-mh", "lazy-maxdeg", "push-sum"};
  int built = 0;
  for (const std::string& kind : TopologyKinds()) {
    if (kind == "file") continue;  // covered by edge_list_test.cc
    for (NodeId n : {1u, 2u, 3u, 8u, 16u, 33u, 64u}) {
      for (std::uint64_t seed = 1; seed <= 8; ++seed) {
        for (const std::string& rule : rules) {
          CAPTURE(kind);
          CAPTURE(n);
          CAPTURE(seed);
          CAPTURE(rule);
          TopologySpec spec;
          spec.kind = kind;
          spec.nodes = n;
          spec.seed = seed;
          spec.weights = ParseWeightOptions(rule).value();
          spec.weights_given = true;
          spec.degree = n > 4 ? 4 : n - 1;
          if (kind == "small-world") spec.degree = n > 4 ? 4 : (n >= 3 ? 2 : 0);
          if (kind == "edges") {  // inline: a ring (one node has no edge to list)
            if (n == 1) continue;
            for (NodeId i = 0; i + 1 < n; ++i)
              spec.edges += std::to_string(i) + " " + std::to_string(i + 1) + ";";
            if (n > 2) spec.edges += std::to_string(n - 1) + " 0";
          }
          auto s = MakeSchedule(spec);
          if (!s.ok()) {
            // Only combinations that cannot exist may fail, with a reason.
            bool allowed = (kind == "hypercube" && (n & (n - 1)) != 0) ||
                           (kind == "exponential" && (rule.find("mh") != std::string::npos ||
                                                      rule.find("maxdeg") != std::string::npos)) ||
                           (kind == "regular" && n <= 2) || (kind == "erdos-renyi" && n == 2) ||
                           (kind == "small-world" && n <= 2) || (kind == "geometric" && false);
            CHECK_MESSAGE(allowed, s.status().ToString());
            continue;
          }
          Schedule& sched = **s;
          CHECK(sched.num_nodes() == n);
          std::uint64_t rounds = sched.period() == 0 ? 5 : sched.period();
          for (std::uint64_t t = 0; t < rounds; ++t) {
            const Graph& g = sched.GraphAt(t);
            Status v = sched.At(t).Validate(sched.stochasticity(), &g);
            CHECK_MESSAGE(v.ok(), v.ToString());
          }
          SpectralInfo info = SecondLargestEigenvalue(sched.At(0));
          CHECK(info.rho >= -1e-12);
          CHECK(info.rho <= 1 + 1e-9);
          ++built;
        }
      }
    }
  }
  MESSAGE(built << " schedules validated");
  CHECK(built > 3000);
}

}  // namespace
}  // namespace murmur::topology
