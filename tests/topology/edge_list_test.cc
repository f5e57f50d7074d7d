#include "topology/edge_list.h"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "topology/analysis.h"
#include "topology/factory.h"
#include "topology/spectral.h"
#include "topology/weights.h"

namespace murmur::topology {
namespace {

std::string Error(std::string_view text, NodeId n, Directedness d = Directedness::kUndirected) {
  auto r = ParseEdgeList(text, "edges.txt", n, d);
  REQUIRE(!r.ok());
  return r.status().message();
}

TEST_CASE("Edge-list errors name the file and line") {
  CHECK(Error("0 1\n1 2\n# comment\n\n2 99\n", 50) == "edges.txt:5: node 99 out of range for 50 nodes");
  CHECK(Error("0 1\n3 3\n", 5) == "edges.txt:2: self-loop at node 3");
  CHECK(Error("0 1\n1 2\n1 0\n", 5) == "edges.txt:3: edge (1, 0) repeats line 1");
  CHECK(Error("0 1\nzero two\n", 5) == "edges.txt:2: node ids must be non-negative integers, got 'zero two'");
  CHECK(Error("0 -1\n", 5) == "edges.txt:1: node ids must be non-negative integers, got '0 -1'");
  CHECK(Error("0 1 0.5\n1 2 -0.25\n", 5) == "edges.txt:2: weight -0.25 is negative or not finite");
  CHECK(Error("0 1 0.5\n1 2 x\n", 5) == "edges.txt:2: weight 'x' is not a number");
  CHECK(Error("0 1 0.5\n1 2\n", 5) == "edges.txt:2: lacks a weight but line 1 has one");
  CHECK(Error("0 1 2 3\n", 5) == "edges.txt:1: expected 'u v' or 'u v w', got '0 1 2 3'");
  CHECK(Error("0 99999999999999999999\n", 5) ==
        "edges.txt:1: node ids must be non-negative integers, got '0 99999999999999999999'");
  // With the count inferred, ids are capped before anything is allocated.
  CHECK(Error("0 4000000000\n", 0) ==
        "edges.txt:1: node 4000000000 out of range for 16777216 nodes (the most a file may imply)");
  CHECK(Error("0 1 0.75\n1 2 0.5\n", 3) == "edges.txt: row 1: edge weights sum to 1.250000, more than 1");
  // Directed files may hold both directions.
  CHECK(ParseEdgeList("0 1\n1 0\n", "e", 2, Directedness::kDirected).ok());
}

TEST_CASE("The Petersen graph file: 3-regular, diameter 2, rho = 1/2 with uniform weights") {
  auto f =
      ReadEdgeList(std::string(MURMUR_TESTDATA_DIR) + "/topology/petersen.txt", 0, Directedness::kUndirected);
  REQUIRE(f.ok());
  const Graph& g = f->graph;
  CHECK(g.num_nodes() == 10);
  CHECK(g.num_edges() == 15);
  CHECK(ComputeDegreeStats(g).min == 3);
  CHECK(ComputeDiameter(g).value == 2);
  // Adjacency eigenvalues 3, 1, -2: W = (A + I)/4 has 1, 1/2, -1/4.
  CHECK(std::abs(SecondLargestEigenvalue(UniformWeights(g)).rho - 0.5) < 1e-12);
  CHECK(!f->weighted);

  auto missing = ReadEdgeList("/nonexistent/edges.txt", 0, Directedness::kUndirected);
  CHECK(missing.status().code() == StatusCode::kNotFound);
  auto bad = ReadEdgeList(std::string(MURMUR_TESTDATA_DIR) + "/topology/out_of_range.txt", 50,
                          Directedness::kUndirected);
  CHECK(bad.status().message() == "out_of_range.txt:5: node 99 out of range for 50 nodes");
}

TEST_CASE("The inline kind edges:... builds the file's schedule, and names itself in errors") {
  auto file =
      ReadEdgeList(std::string(MURMUR_TESTDATA_DIR) + "/topology/petersen.txt", 0, Directedness::kUndirected);
  REQUIRE(file.ok());
  const std::string inline_edges = InlineEdgeList(file->graph);
  TopologySpec from_file, from_text;
  from_file.kind = "file";
  from_file.file = std::string(MURMUR_TESTDATA_DIR) + "/topology/petersen.txt";
  from_file.nodes = 0;
  from_text.kind = "edges";
  from_text.edges = inline_edges;
  from_text.nodes = 10;
  auto a = MakeSchedule(from_file);
  auto b = MakeSchedule(from_text);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*b)->GraphAt(0).num_edges() == 15);
  for (NodeId i = 0; i < 10; ++i)
    for (NodeId j = 0; j < 10; ++j) CHECK((*a)->At(0).At(i, j) == (*b)->At(0).At(i, j));
  from_text.edges = "0 1;1 2;2 2";
  from_text.nodes = 3;
  CHECK(MakeSchedule(from_text).status().message() == "topology 'edges':3: self-loop at node 2");
  from_text.edges = "0 1;1 2";
  from_text.nodes = 4;
  CHECK(MakeSchedule(from_text).status().message().find("has 3 nodes (ids 0 .. 2), not the 4 asked for") !=
        std::string::npos);
}

TEST_CASE("Weighted files give custom weights, export round-trips") {
  auto f = ParseEdgeList("# triangle\n0 1 0.25\n1 2 0.25\n0 2 0.5  # heavier\n", "w.txt", 3,
                         Directedness::kUndirected);
  REQUIRE(f.ok());
  REQUIRE(f->weighted);
  CHECK(f->weights.At(0, 0) == 0.25);
  CHECK(f->weights.At(2, 0) == 0.5);
  CHECK(f->weights.Validate(Stochasticity::kDoubly, &f->graph).ok());

  Graph g = f->graph;
  std::ostringstream edges, dot, json;
  WriteEdgeList(g, edges);
  auto back = ParseEdgeList(edges.str(), "back", 3, Directedness::kUndirected);
  REQUIRE(back.ok());
  CHECK(back->graph.Edges().size() == 3);
  WriteDot(g, &f->weights, dot);
  CHECK(dot.str() ==
        "graph murmur {\n  0;\n  1;\n  2;\n  0 -- 1 [label=\"0.25\"];\n  0 -- 2 [label=\"0.5\"];\n"
        "  1 -- 2 [label=\"0.25\"];\n}\n");
  WriteJson(g, nullptr, json);
  CHECK(json.str() == "{\"nodes\": 3, \"directed\": false, \"edges\": [[0, 1], [0, 2], [1, 2]]}\n");
}

}  // namespace
}  // namespace murmur::topology
