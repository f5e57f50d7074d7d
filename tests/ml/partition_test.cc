// Partitioners: coverage, determinism, and measured non-IID-ness.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "ml/partition.h"

namespace murmur::ml {
namespace {

// Labels only: `per_class` samples of each of `classes` classes, interleaved.
Dataset Labels(int classes, int per_class) {
  Dataset ds;
  ds.name = "labels";
  ds.num_classes = classes;
  ds.dim = 1;
  ds.num_samples = static_cast<std::int64_t>(classes) * per_class;
  ds.features.assign(static_cast<std::size_t>(ds.num_samples), 0.0f);
  for (std::int64_t i = 0; i < ds.num_samples; ++i)
    ds.labels.push_back(static_cast<std::int32_t>(i % classes));
  return ds;
}

void CheckExactCover(const Partition& p, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (std::size_t j = 0; j < p.num_nodes(); ++j)
    for (SampleIndex i : p.node(j)) {
      REQUIRE(i < n);
      ++seen[i];
    }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  CHECK(p.total_samples() == n);
}

bool SamePartition(const Partition& a, const Partition& b) {
  if (a.num_nodes() != b.num_nodes()) return false;
  for (std::size_t j = 0; j < a.num_nodes(); ++j)
    if (!std::ranges::equal(a.node(j), b.node(j))) return false;
  return true;
}

}  // namespace

TEST_CASE("every partitioner assigns every sample exactly once, deterministically by seed") {
  Dataset ds = Labels(10, 600);
  const std::size_t n = static_cast<std::size_t>(ds.num_samples);
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    CAPTURE(seed);
    auto make = [&](int which, std::uint64_t s) -> Partition {
      Rng rng(s, 0, RngPurpose::kPartition);
      switch (which) {
        case 0: return PartitionIid(n, 7, rng);
        case 1: return *PartitionDirichlet(ds, 20, DirichletOptions{0.1, 0, 1}, rng);
        case 2: return *PartitionDirichlet(ds, 20, DirichletOptions{100, 0, 1}, rng);
        case 3: return *PartitionShards(ds, 30, ShardOptions{2, true}, rng);
        case 4: return *PartitionShards(ds, 13, ShardOptions{3, false}, rng);
        default: return *PartitionQuantitySkew(n, 25, QuantitySkewOptions{0.3, 2}, rng);
      }
    };
    for (int which = 0; which < 6; ++which) {
      CAPTURE(which);
      Partition p = make(which, seed);
      CheckExactCover(p, n);
      CHECK(SamePartition(p, make(which, seed)));
      CHECK_FALSE(SamePartition(p, make(which, seed + 100)));
    }
  }
}

TEST_CASE("IID parts differ in size by at most one and are close to the global label mix") {
  Dataset ds = Labels(10, 6000);
  Rng rng(1, 0, RngPurpose::kPartition);
  Partition p = PartitionIid(static_cast<std::size_t>(ds.num_samples), 7, rng);
  std::size_t lo = ds.labels.size(), hi = 0;
  for (std::size_t j = 0; j < 7; ++j)
    lo = std::min(lo, p.node(j).size()), hi = std::max(hi, p.node(j).size());
  CHECK(hi - lo <= 1);
  double tv = MeanLabelTotalVariation(ds, p);
  MESSAGE("IID mean TV (7 nodes x 8571 samples): " << tv);
  CHECK(tv < 0.03);  // sampling noise alone: about 0.013 here
}

TEST_CASE("Dirichlet: large alpha is close to IID, small alpha is concentrated (measured TV)") {
  Dataset ds = Labels(10, 6000);
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    CAPTURE(seed);
    Rng rng(seed, 0, RngPurpose::kPartition);
    double tv_large =
        MeanLabelTotalVariation(ds, *PartitionDirichlet(ds, 10, DirichletOptions{1000, 0, 1}, rng));
    double tv_one = MeanLabelTotalVariation(ds, *PartitionDirichlet(ds, 10, DirichletOptions{1, 0, 1}, rng));
    double tv_small =
        MeanLabelTotalVariation(ds, *PartitionDirichlet(ds, 10, DirichletOptions{0.1, 0, 1}, rng));
    MESSAGE("mean TV over 10 nodes: alpha 1000 " << tv_large << ", alpha 1 " << tv_one << ", alpha 0.1 "
                                                 << tv_small);
    CHECK(tv_large < 0.04);
    CHECK(tv_one > 0.2);
    CHECK(tv_one < tv_small);
    CHECK(tv_small > 0.5);
  }
}

TEST_CASE("Dirichlet minimum per node is honoured or reported") {
  Dataset ds = Labels(10, 600);
  Rng rng(3, 0, RngPurpose::kPartition);
  auto p = PartitionDirichlet(ds, 10, DirichletOptions{0.5, 50, 1000}, rng);
  REQUIRE(p.ok());
  for (std::size_t j = 0; j < 10; ++j) CHECK(p->node(j).size() >= 50);
  auto impossible = PartitionDirichlet(ds, 10, DirichletOptions{0.01, 590, 5}, rng);
  CHECK(impossible.status().code() == StatusCode::kFailedPrecondition);
  CHECK(PartitionDirichlet(ds, 10, DirichletOptions{0, 0, 1}, rng).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("shards give each node exactly k classes and equal sizes (McMahan et al. 2017)") {
  Dataset ds = Labels(10, 6000);
  struct Case {
    std::size_t nodes;
    int k;
  };
  for (Case c : {Case{100, 2}, Case{50, 3}, Case{20, 1}}) {
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      CAPTURE(c.nodes);
      CAPTURE(c.k);
      CAPTURE(seed);
      Rng rng(seed, 0, RngPurpose::kPartition);
      auto p = PartitionShards(ds, c.nodes, ShardOptions{c.k, true}, rng);
      REQUIRE(p.ok());
      std::vector<std::int64_t> hist = LabelHistogram(ds, *p);
      for (std::size_t j = 0; j < c.nodes; ++j) {
        int classes = 0;
        for (int y = 0; y < 10; ++y) classes += hist[j * 10 + static_cast<std::size_t>(y)] > 0;
        CHECK(classes == c.k);
        CHECK(p->node(j).size() == 60000 / c.nodes);
      }
    }
  }
  // A class with more shards than there are nodes cannot be spread out.
  Dataset one = Labels(1, 100);
  Rng rng(1, 0, RngPurpose::kPartition);
  CHECK(PartitionShards(one, 5, ShardOptions{2, true}, rng).status().code() ==
        StatusCode::kFailedPrecondition);
}

TEST_CASE("quantity skew: node sizes have the Dirichlet coefficient of variation") {
  // With sizes q ~ Dir(beta) over N nodes, E[mean((q_i - 1/N)^2)] N^2 = (N - 1) / (N beta + 1).
  const std::size_t n = 100000, nodes = 100;
  for (double beta : {0.5, 2.0}) {
    double cv2 = 0;
    const int seeds = 30;
    for (int seed = 1; seed <= seeds; ++seed) {
      Rng rng(static_cast<std::uint64_t>(seed), 0, RngPurpose::kPartition);
      auto p = PartitionQuantitySkew(n, nodes, QuantitySkewOptions{beta, 0}, rng);
      REQUIRE(p.ok());
      double s = 0;
      for (std::size_t j = 0; j < nodes; ++j) {
        double d = static_cast<double>(p->node(j).size()) / n - 1.0 / nodes;
        s += d * d;
      }
      cv2 += s / nodes * nodes * nodes / seeds;
    }
    double expected = (nodes - 1.0) / (nodes * beta + 1.0);
    CAPTURE(beta);
    MESSAGE("quantity skew beta " << beta << ": CV^2 " << cv2 << ", closed form " << expected);
    CHECK(cv2 == doctest::Approx(expected).epsilon(0.1));
  }
}

TEST_CASE("label histogram sums to the global label counts") {
  Dataset ds = Labels(10, 600);
  Rng rng(9, 0, RngPurpose::kPartition);
  auto p = PartitionDirichlet(ds, 8, DirichletOptions{0.3, 0, 1}, rng);
  REQUIRE(p.ok());
  auto hist = LabelHistogram(ds, *p);
  for (int y = 0; y < 10; ++y) {
    std::int64_t total = 0;
    for (std::size_t j = 0; j < 8; ++j) total += hist[j * 10 + static_cast<std::size_t>(y)];
    CHECK(total == 600);
  }
}

}  // namespace murmur::ml
