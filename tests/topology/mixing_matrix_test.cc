#include "topology/mixing_matrix.h"

#include <doctest/doctest.h>

#include <vector>

#include "core/rng.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::topology {
namespace {

TEST_CASE("Validate names the offending row, column or entry") {
  const NodeId n = 20;
  std::vector<Triplet> t;
  for (NodeId i = 0; i < n; ++i) t.push_back({i, i, i == 17 ? 0.93 : 1.0});
  MixingMatrix w = MixingMatrix::FromEntries(n, t).value();
  Status s = w.Validate(Stochasticity::kRow);
  CHECK(s.message() == "row 17 sums to 0.93, not 1 within 1e-06");

  std::vector<Triplet> neg = {{0, 0, 1.5}, {0, 1, -0.5}, {1, 1, 1.0}};
  CHECK(MixingMatrix::FromEntries(2, neg).value().Validate(Stochasticity::kRow).message() ==
        "W(0, 1) = -0.5 is negative");

  // Row stochastic but not column stochastic.
  std::vector<Triplet> rows = {{0, 0, 0.5}, {0, 1, 0.5}, {1, 1, 1.0}};
  MixingMatrix r = MixingMatrix::FromEntries(2, rows).value();
  CHECK(r.Validate(Stochasticity::kRow).ok());
  CHECK(r.Validate(Stochasticity::kDoubly).message() == "column 0 sums to 0.5, not 1 within 1e-06");

  // Off the graph: W(0, 2) on a path 0 - 1 - 2.
  std::vector<Edge> path = {{0, 1}, {1, 2}};
  Graph g = Graph::FromEdges(3, path).value();
  std::vector<Triplet> off = {{0, 0, 0.5}, {0, 2, 0.5}, {1, 1, 1}, {2, 2, 0.5}, {2, 0, 0.5}};
  CHECK(MixingMatrix::FromEntries(3, off).value().Validate(Stochasticity::kDoubly, &g).message() ==
        "W(0, 2) is not on an edge 2 -> 0");

  std::vector<Triplet> twice = {{0, 0, 0.5}, {0, 0, 0.5}};
  CHECK(!MixingMatrix::FromEntries(1, twice).ok());
  std::vector<Triplet> outside = {{0, 3, 1}};
  CHECK(!MixingMatrix::FromEntries(2, outside).ok());
}

TEST_CASE("Apply, ApplyRows and ApplyParams agree with the dense product") {
  Graph g = RandomRegular(50, 3, 5).value();
  MixingMatrix w = MetropolisHastingsWeights(g);
  Eigen::MatrixXd dense = w.ToDense();
  Rng rng(3);
  std::vector<double> x(50), y(50);
  for (double& v : x) v = rng.Normal();
  w.Apply(x, y);
  Eigen::VectorXd ref = dense * Eigen::Map<Eigen::VectorXd>(x.data(), 50);
  for (int i = 0; i < 50; ++i) CHECK(y[i] == doctest::Approx(ref(i)).epsilon(1e-12));

  RowMatrixXf xs(50, 7), ys(50, 7);
  for (int i = 0; i < 50; ++i)
    for (int j = 0; j < 7; ++j) xs(i, j) = rng.UniformFloat();
  w.ApplyRows(xs, ys);
  Eigen::MatrixXd ref_rows = dense * xs.cast<double>();
  CHECK((ys.cast<double>() - ref_rows).cwiseAbs().maxCoeff() < 1e-5);

  std::vector<ParamVector> in, out_serial, out_pool;
  for (int i = 0; i < 50; ++i) {
    in.emplace_back(33);
    out_serial.emplace_back(33);
    out_pool.emplace_back(33);
    for (std::size_t k = 0; k < 33; ++k) in.back()[k] = rng.UniformFloat();
  }
  ThreadPool pool(3);
  w.ApplyParams(in, out_serial);
  w.ApplyParams(in, out_pool, &pool);
  for (int i = 0; i < 50; ++i)
    for (std::size_t k = 0; k < 33; ++k) REQUIRE(out_serial[i][k] == out_pool[i][k]);  // any thread count
  double ref0 = 0;
  for (const MixingEntry& e : w.Row(0)) ref0 += e.weight * in[e.col][5];
  CHECK(out_serial[0][5] == doctest::Approx(ref0).epsilon(1e-6));
}

// The reference renormalization, computed densely from its definition.
Eigen::MatrixXd RemoveOfflineReference(const Eigen::MatrixXd& w, const std::vector<std::uint8_t>& alive) {
  const auto n = w.rows();
  Eigen::MatrixXd r = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!alive[i]) {
      r(i, i) = 1;
      continue;
    }
    for (Eigen::Index j = 0; j < n; ++j) {
      if (alive[j])
        r(i, j) += w(i, j);
      else
        r(i, i) += w(i, j);
    }
  }
  return r;
}

TEST_CASE("RemoveOffline isolates dead nodes and keeps W stochastic and symmetric") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Graph g = RandomRegular(40, 4, seed).value();
    MixingMatrix w = MetropolisHastingsWeights(g);
    Rng rng(seed, 0, RngPurpose::kDevice);
    std::vector<std::uint8_t> alive(40);
    for (auto& a : alive) a = rng.Bernoulli(0.7);
    MixingMatrix r = RemoveOffline(w, alive);
    CHECK(r.Validate(Stochasticity::kDoubly, &g).ok());
    CHECK(r.IsSymmetric());
    CHECK((r.ToDense() - RemoveOfflineReference(w.ToDense(), alive)).cwiseAbs().maxCoeff() < 1e-15);
    for (NodeId i = 0; i < 40; ++i)
      if (!alive[i]) CHECK(r.Row(i).size() == 1);

    // Push-sum: the column rule keeps columns stochastic (mass is conserved).
    MixingMatrix p = PushSumWeights(Exponential(40));
    MixingMatrix pr = RemoveOffline(p, alive, Stochasticity::kColumn);
    CHECK(pr.Validate(Stochasticity::kColumn).ok());
    CHECK((pr.ToDense().transpose() - RemoveOfflineReference(p.ToDense().transpose(), alive))
              .cwiseAbs()
              .maxCoeff() < 1e-15);
  }
  // Everyone dead: the identity. Everyone alive: unchanged.
  MixingMatrix w = UniformWeights(Ring(5));
  std::vector<std::uint8_t> none(5, 0), all(5, 1);
  CHECK(RemoveOffline(w, none).ToDense() == Eigen::MatrixXd::Identity(5, 5));
  CHECK(RemoveOffline(w, all).ToDense() == w.ToDense());
}

TEST_CASE("Push-sum weights are column stochastic and conserve mass") {
  for (NodeId n : {1u, 2u, 5u, 16u, 37u}) {
    CAPTURE(n);
    Graph g = Exponential(n);
    MixingMatrix p = PushSumWeights(g);
    CHECK(p.Validate(Stochasticity::kColumn, &g).ok());
    // Node i splits its mass over itself and its out-neighbours.
    for (NodeId i = 0; i < n; ++i)
      for (NodeId j : g.Neighbors(i)) CHECK(p.At(j, i) == doctest::Approx(1.0 / (g.Degree(i) + 1)));
    Rng rng(n);
    std::vector<double> x(n), w(n, 1.0), x2(n), w2(n);
    double total = 0;
    for (double& v : x) total += (v = rng.Uniform(-1, 3));
    double mean = total / n;
    for (int round = 0; round < 200; ++round) {
      p.Apply(x, x2);
      p.Apply(w, w2);
      x.swap(x2);
      w.swap(w2);
      double sum = 0;
      for (double v : x) sum += v;
      REQUIRE(sum == doctest::Approx(total).epsilon(1e-12));
    }
    // Push-sum ratios converge to the average (Kempe et al. 2003).
    for (NodeId i = 0; i < n; ++i) CHECK(x[i] / w[i] == doctest::Approx(mean).epsilon(1e-9));
  }
}

TEST_CASE("Custom weights fill the self weight and reject rows over 1") {
  std::vector<Edge> e = {{0, 1}, {1, 2}};
  std::vector<double> w = {0.25, 0.5};
  MixingMatrix m = CustomWeights(3, e, w, Directedness::kUndirected).value();
  CHECK(m.At(0, 0) == 0.75);
  CHECK(m.At(1, 1) == 0.25);
  CHECK(m.Validate(Stochasticity::kDoubly).ok());
  std::vector<double> big = {0.75, 0.5};
  CHECK(CustomWeights(3, e, big, Directedness::kUndirected).status().message() ==
        "row 1: edge weights sum to 1.250000, more than 1");
}

}  // namespace
}  // namespace murmur::topology
