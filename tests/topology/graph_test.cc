#include "topology/graph.h"

#include <doctest/doctest.h>

#include <vector>

#include "topology/analysis.h"
#include "topology/generators.h"

namespace murmur::topology {
namespace {

TEST_CASE("FromEdges builds sorted CSR rows and rejects bad edges by index") {
  std::vector<Edge> e = {{0, 2}, {2, 1}, {0, 1}};
  auto g = Graph::FromEdges(3, e);
  REQUIRE(g.ok());
  CHECK(g->num_edges() == 3);
  CHECK(std::vector<NodeId>(g->Neighbors(0).begin(), g->Neighbors(0).end()) == std::vector<NodeId>{1, 2});
  CHECK(g->HasEdge(2, 1));
  CHECK(g->HasEdge(1, 2));

  std::vector<Edge> out_of_range = {{0, 1}, {1, 5}};
  auto r = Graph::FromEdges(3, out_of_range);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "edge 1 (1, 5): node 5 out of range for 3 nodes");
  std::vector<Edge> loop = {{1, 1}};
  CHECK(Graph::FromEdges(3, loop).status().message() == "edge 0: self-loop at node 1");
  std::vector<Edge> dup = {{0, 1}, {1, 0}};
  CHECK(!Graph::FromEdges(3, dup).ok());
  // In a directed graph 0 -> 1 and 1 -> 0 are different arcs.
  auto d = Graph::FromEdges(3, dup, Directedness::kDirected);
  REQUIRE(d.ok());
  CHECK(d->num_edges() == 2);
  CHECK(d->HasEdge(0, 1));
  CHECK(!d->Reversed().HasEdge(0, 2));
}

TEST_CASE("Reversed swaps in- and out-neighbours of a directed graph") {
  Graph g = Exponential(8);
  Graph r = g.Reversed();
  for (NodeId u = 0; u < 8; ++u)
    for (NodeId v = 0; v < 8; ++v) CHECK(g.HasEdge(u, v) == r.HasEdge(v, u));
}

TEST_CASE("Diameter, degrees and connectivity match known graphs") {
  for (NodeId n : {1u, 2u, 3u, 10u, 11u}) {
    CAPTURE(n);
    Graph ring = Ring(n);
    CHECK(ComputeDiameter(ring).value == n / 2);
    CHECK(IsConnected(ring));
    CHECK(ComputeDegreeStats(ring).max == std::min<NodeId>(n - 1, 2));
  }
  CHECK(ComputeDiameter(Hypercube(32)).value == 5);
  CHECK(ComputeDiameter(Torus(5, 7)).value == 2 + 3);
  CHECK(ComputeDiameter(Star(9)).value == 2);
  CHECK(ComputeDiameter(Complete(9)).value == 1);
  // Exponential graph: every node reaches every other within ceil(log2 n) hops.
  CHECK(ComputeDiameter(Exponential(16)).value == 4);
  std::vector<Edge> two_parts = {{0, 1}, {2, 3}};
  Graph split = Graph::FromEdges(4, two_parts).value();
  CHECK(!IsConnected(split));
  CHECK(!ComputeDiameter(split).finite);
  // A directed path is connected but not strongly connected.
  std::vector<Edge> path = {{0, 1}, {1, 2}};
  CHECK(!IsConnected(Graph::FromEdges(3, path, Directedness::kDirected).value()));
  // The double-sweep estimate is exact on a ring.
  DiameterInfo est = ComputeDiameter(Ring(10001), 100);
  CHECK(!est.exact);
  CHECK(est.value == 5000);
}

TEST_CASE("100,000-node ring and random 4-regular graphs: linear memory") {
  const NodeId n = 100000;
  Graph ring = Ring(n);
  CHECK(ring.num_edges() == n);
  auto reg = RandomRegular(n, 4, 7);
  REQUIRE(reg.ok());
  CHECK(reg->num_edges() == 2 * static_cast<std::size_t>(n));
  DegreeStats s = ComputeDegreeStats(*reg);
  CHECK(s.min == 4);
  CHECK(s.max == 4);
  // CSR: (n + 1) offsets of 8 bytes and 2 m ids of 4 bytes, nothing else.
  CHECK(ring.MemoryBytes() == (n + 1) * 8 + 2 * n * 4);
  CHECK(reg->MemoryBytes() == (n + 1) * 8 + 4 * n * 4);
  CHECK(IsConnected(*reg));
}

}  // namespace
}  // namespace murmur::topology
