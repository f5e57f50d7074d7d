#include "topology/schedule.h"

#include <doctest/doctest.h>

#include <vector>

#include "topology/factory.h"
#include "topology/generators.h"

namespace murmur::topology {
namespace {

TEST_CASE("Random matching: a perfect matching per round, determined by seed and round") {
  for (NodeId n : {1u, 2u, 7u, 64u}) {
    CAPTURE(n);
    RandomMatchingSchedule a(n, 9), b(n, 9);
    for (std::uint64_t t : {0ull, 3ull, 1ull, 1000000ull}) {  // any order
      CAPTURE(t);
      const Graph& g = a.GraphAt(t);
      CHECK(g.num_edges() == n / 2);
      for (NodeId i = 0; i < n; ++i) CHECK(g.Degree(i) <= 1);
      CHECK(a.At(t).Validate(Stochasticity::kDoubly, &g).ok());
      CHECK(a.At(t).IsSymmetric());
      CHECK(a.At(t).ToDense() == b.At(t).ToDense());
    }
    CHECK(a.period() == 0);
  }
  RandomMatchingSchedule m(64, 9);
  Eigen::MatrixXd r0 = m.At(0).ToDense();
  CHECK(r0 != m.At(1).ToDense());
  RandomMatchingSchedule other(64, 10);
  CHECK(r0 != other.At(0).ToDense());
}

TEST_CASE("One-peer exponential: node i averages with i + 2^(t mod tau)") {
  OnePeerExponentialSchedule s(12);
  CHECK(s.period() == 4);
  for (std::uint64_t t = 0; t < 9; ++t) {
    CAPTURE(t);
    const NodeId hop = 1u << (t % 4);
    for (NodeId i = 0; i < 12; ++i) {
      CHECK(s.At(t).At(i, i) == 0.5);
      CHECK(s.At(t).At(i, (i + hop) % 12) == 0.5);
      CHECK(s.GraphAt(t).Degree(i) == 1);
    }
  }
  OnePeerExponentialSchedule one(1), two(2);
  CHECK(one.At(5).At(0, 0) == 1.0);
  CHECK(two.At(0).At(0, 1) == 0.5);
}

TEST_CASE("MakeSchedule rejects unknown kinds and impossible parameters") {
  TopologySpec spec;
  spec.kind = "mesh";
  CHECK(MakeSchedule(spec).status().message() == "unknown topology 'mesh'");
  spec.kind = "hypercube";
  spec.nodes = 12;
  CHECK(MakeSchedule(spec).status().message() == "hypercube needs a power-of-two node count, got 12");
  spec.kind = "ring";
  spec.nodes = 0;
  CHECK(!MakeSchedule(spec).ok());
  spec.nodes = 1u << 30;
  CHECK(!MakeSchedule(spec).ok());
  CHECK(!ParseWeightOptions("lazy-push-sum").ok());
  CHECK(ParseWeightOptions("lazy-mh").value().lazy);
  spec.kind = "torus";
  spec.nodes = 24;  // 4 x 6
  auto s = MakeSchedule(spec);
  REQUIRE(s.ok());
  CHECK((*s)->GraphAt(0).num_edges() == 48);
}

}  // namespace
}  // namespace murmur::topology
