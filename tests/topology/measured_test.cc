// Measured pair costs (topology/measured.h): the file murmur peers --rtt-csv
// writes, read back as link costs, and the ring and graph they choose.
#include "topology/measured.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "topology/link_aware.h"

namespace murmur::topology {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("murmur-measured-" + std::to_string(getpid()) + "-" + name))
          .string();
  std::ofstream(path) << text;
  return path;
}

TEST_CASE("Measured round trips become one-way seconds, with throughput and fallbacks") {
  const std::string path = WriteFile("rtt.csv",
                                     "from,to,rtt_ms\n"
                                     "# two measured directions, one of them with a throughput\n"
                                     "0,1,4\n"
                                     "1,0,6,100\n"
                                     "2,0,10\n\n");
  auto m = ReadMeasuredLinks(path);
  REQUIRE(m.ok());
  CHECK(m->nodes == 3);
  const PairCost cost = MeasuredCost(*m, 8e6);  // a megabyte
  CHECK(cost(0, 1) == doctest::Approx(0.002));
  CHECK(cost(1, 0) == doctest::Approx(0.003 + 8e6 / 100e6));
  CHECK(cost(0, 2) == doctest::Approx(0.005));  // measured from 2 only
  CHECK(cost(1, 2) == kUnmeasuredSeconds);
  auto wider = ReadMeasuredLinks(path, 5);
  REQUIRE(wider.ok());
  CHECK(wider->nodes == 5);
  std::remove(path.c_str());
}

TEST_CASE("A malformed measured-links file is refused naming the file and line") {
  const std::pair<const char*, const char*> cases[] = {
      {"0,1\n", "line 1: expected from,to,rtt_ms"},
      {"0,1,2\nx,1,2\n", "line 2: node ids must be integers"},
      {"0,0,2\n", "paired with itself"},
      {"0,1,-2\n", "round trip '-2'"},
      {"0,1,nan\n", "round trip 'nan'"},
      {"0,1,2e7\n", "round trip '2e7'"},
      {"0,1,2,inf\n", "throughput 'inf'"},
      {"0,1,2,1e-300\n", "throughput '1e-300'"},
      {"0,70000,2\n", "node id over"},
      {"0,1,2,3,4\n", "expected from,to,rtt_ms"},
      {"", "no rows"},                               // an empty file
      {"from,to,rtt_ms\n# nothing\n\n", "no rows"},  // a header and comments only
  };
  for (const auto& [text, want] : cases) {
    CAPTURE(text);
    const std::string path = WriteFile("bad.csv", text);
    auto m = ReadMeasuredLinks(path);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message().find(path) != std::string::npos);
    CHECK(m.status().message().find(want) != std::string::npos);
    std::remove(path.c_str());
  }
  CHECK(ReadMeasuredLinks("/nonexistent/rtt.csv").status().code() == StatusCode::kNotFound);
}

TEST_CASE("Measured round trips of two sites: the ring enters each site once, the graph crosses once") {
  // Nodes 0-3 and 4-7 in two sites: 0.2 ms round trips inside, 30 ms across,
  // each direction written as a daemon reports it.
  std::string text = "from,to,rtt_ms\n";
  for (int u = 0; u < 8; ++u)
    for (int v = 0; v < 8; ++v)
      if (u != v)
        text +=
            std::to_string(u) + "," + std::to_string(v) + "," + ((u < 4) == (v < 4) ? "0.2" : "30") + "\n";
  const std::string path = WriteFile("sites.csv", text);
  auto m = ReadMeasuredLinks(path);
  REQUIRE(m.ok());
  const PairCost cost = MeasuredCost(*m, 1e5);
  const std::vector<NodeId> tour = LeastCostTour(8, cost);
  int crossings = 0;
  for (std::size_t i = 0; i < tour.size(); ++i)
    crossings += (tour[i] < 4) != (tour[(i + 1) % tour.size()] < 4);
  CHECK(crossings == 2);
  auto g = LinkAwareGraph(8, 2, cost, 1);
  REQUIRE(g.ok());
  int across = 0;
  for (NodeId u = 0; u < 8; ++u)
    for (NodeId v : g->Neighbors(u)) across += u < v && (u < 4) != (v < 4);
  CHECK(across == 1);  // the spanning tree's one bridge; every other edge stays inside a site
  std::remove(path.c_str());
}

}  // namespace
}  // namespace murmur::topology
