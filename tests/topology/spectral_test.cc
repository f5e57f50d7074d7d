// Closed-form spectra: the truths the spectral code is checked against.
#include "topology/spectral.h"

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "topology/generators.h"
#include "topology/schedule.h"
#include "topology/weights.h"

namespace murmur::topology {
namespace {

constexpr double kPi = std::numbers::pi;

SpectralOptions Iterative() {
  SpectralOptions o;
  o.dense_limit = 0;
  o.dense_nonsymmetric_limit = 0;
  return o;
}

TEST_CASE("Ring with weights 1/3: rho = 1/3 + 2/3 cos(2 pi / n)") {
  for (NodeId n : {3u, 4u, 5u, 6u, 7u, 8u, 16u, 17u, 64u, 100u, 257u, 1000u}) {
    CAPTURE(n);
    MixingMatrix w = UniformWeights(Ring(n));
    CHECK(w.At(0, 1) == 1.0 / 3);
    const double expected = 1.0 / 3 + 2.0 / 3 * std::cos(2 * kPi / n);
    SpectralInfo s = SecondLargestEigenvalue(w);
    CHECK(std::abs(s.rho - expected) < 1e-9);
    if (n >= 16 && n <= 257) {  // Lanczos on the deflated operator gives the same
      SpectralInfo it = SecondLargestEigenvalue(w, Iterative());
      REQUIRE(it.converged);
      CHECK(std::abs(it.rho - expected) < 1e-9);
    }
    // Lazy weights: every eigenvalue moves to (1 + lambda)/2 >= 1/3.
    CHECK(std::abs(SecondLargestEigenvalue(Lazy(w)).rho - (1 + expected) / 2) < 1e-9);
  }
}

TEST_CASE("Complete graph with uniform weights averages in one round: rho = 0") {
  for (NodeId n = 1; n <= 40; ++n) {
    CAPTURE(n);
    CHECK(std::abs(SecondLargestEigenvalue(UniformWeights(Complete(n))).rho) < 1e-12);
  }
}

TEST_CASE("2-D torus with weights 1/5: eigenvalues (1 + 2 cos(2 pi a/p) + 2 cos(2 pi b/q))/5") {
  for (auto [p, q] :
       std::vector<std::pair<NodeId, NodeId>>{{3, 3}, {3, 4}, {4, 4}, {5, 8}, {10, 10}, {7, 12}}) {
    CAPTURE(p);
    CAPTURE(q);
    double expected = 0;
    for (NodeId a = 0; a < p; ++a)
      for (NodeId b = 0; b < q; ++b)
        if (a != 0 || b != 0)
          expected = std::max(
              expected, std::abs(1 + 2 * std::cos(2 * kPi * a / p) + 2 * std::cos(2 * kPi * b / q)) / 5);
    MixingMatrix w = UniformWeights(Torus(p, q));
    CHECK(std::abs(SecondLargestEigenvalue(w).rho - expected) < 1e-9);
    if (p * q >= 40) CHECK(std::abs(SecondLargestEigenvalue(w, Iterative()).rho - expected) < 1e-9);
  }
}

TEST_CASE("Hypercube with weights 1/(k+1): rho = (k-1)/(k+1)") {
  // Adjacency eigenvalues of the k-cube are k - 2j (j = 0..k).
  for (std::uint32_t k = 1; k <= 9; ++k) {
    CAPTURE(k);
    MixingMatrix w = UniformWeights(Hypercube(1u << k));
    CHECK(std::abs(SecondLargestEigenvalue(w).rho - (k - 1.0) / (k + 1.0)) < 1e-9);
  }
}

TEST_CASE("Star with Metropolis-Hastings weights: rho = 1 - 1/n") {
  // W = leaves keep 1 - 1/n, hub averages: eigenvalues 1, 1 - 1/n (n - 2 times), 0.
  for (NodeId n : {3u, 4u, 10u, 50u}) {
    CAPTURE(n);
    CHECK(std::abs(SecondLargestEigenvalue(MetropolisHastingsWeights(Star(n))).rho - (1 - 1.0 / n)) < 1e-9);
  }
}

TEST_CASE("Static exponential graph: circulant spectrum (1 + sum_k w^(m 2^k))/(tau + 1)") {
  for (NodeId n : {3u, 5u, 6u, 8u, 12u, 16u, 100u, 1000u}) {
    CAPTURE(n);
    const std::uint32_t tau = CeilLog2(n);
    double expected = 0;
    for (NodeId m = 1; m < n; ++m) {
      std::complex<double> lambda = 1;
      for (std::uint32_t k = 0; k < tau; ++k) lambda += std::polar(1.0, 2 * kPi * m * double(1u << k) / n);
      expected = std::max(expected, std::abs(lambda) / (tau + 1));
    }
    MixingMatrix w = UniformWeights(Exponential(n));
    CHECK(w.Validate(Stochasticity::kDoubly).ok());
    SpectralInfo s = SecondLargestEigenvalue(w);
    REQUIRE(s.converged);
    CHECK(std::abs(s.rho - expected) < 1e-8);
    // Ying et al. 2021, Prop. 1: for even n, rho = (tau - 1)/(tau + 1).
    if (n % 2 == 0) CHECK(std::abs(expected - (tau - 1.0) / (tau + 1.0)) < 1e-12);
  }
}

TEST_CASE("Random 4-regular graphs are near-Ramanujan: rho ~ (1 + 2 sqrt(3))/5") {
  // Friedman 2008: the second adjacency eigenvalue of a random d-regular graph
  // is 2 sqrt(d - 1) + o(1), so W = (A + I)/(d + 1) has rho -> (1 + 2 sqrt(3))/5.
  Graph g = RandomRegular(4000, 4, 11).value();
  SpectralInfo s = SecondLargestEigenvalue(UniformWeights(g));
  REQUIRE(s.converged);
  CHECK(s.method == "Lanczos (Spectra)");
  CHECK(std::abs(s.rho - (1 + 2 * std::sqrt(3.0)) / 5) < 0.01);
  // Dense and Lanczos agree on a smaller one.
  MixingMatrix small = UniformWeights(RandomRegular(600, 4, 12).value());
  CHECK(std::abs(SecondLargestEigenvalue(small).rho - SecondLargestEigenvalue(small, Iterative()).rho) <
        1e-9);
}

TEST_CASE("n = 1 and n = 2 have sensible spectra") {
  CHECK(SecondLargestEigenvalue(UniformWeights(Ring(1))).rho == 0);
  CHECK(std::abs(SecondLargestEigenvalue(UniformWeights(Ring(2))).rho) < 1e-15);
  CHECK(SecondLargestEigenvalue(MixingMatrix::Identity(2)).rho == doctest::Approx(1.0));
  CHECK(SecondLargestEigenvalue(MixingMatrix()).rho == 0);
}

std::vector<MixingMatrix> Rounds(Schedule& s, std::uint64_t first, std::uint64_t count) {
  std::vector<MixingMatrix> out;
  for (std::uint64_t t = first; t < first + count; ++t) out.push_back(s.At(t));
  return out;
}

TEST_CASE("One-peer exponential: log2 n rounds average exactly when n = 2^k") {
  for (std::uint32_t k = 1; k <= 8; ++k) {
    const NodeId n = 1u << k;
    CAPTURE(n);
    OnePeerExponentialSchedule s(n);
    CHECK(s.period() == k);
    const Eigen::MatrixXd j = Eigen::MatrixXd::Constant(n, n, 1.0 / n);
    for (std::uint64_t start : {0ull, 1ull, 5ull}) {  // any k consecutive rounds
      Eigen::MatrixXd p = Eigen::MatrixXd::Identity(n, n);
      for (std::uint64_t t = start; t < start + k; ++t) {
        REQUIRE(s.At(t).Validate(Stochasticity::kDoubly, &s.GraphAt(t)).ok());
        p = s.At(t).ToDense() * p;
      }
      CHECK((p - j).cwiseAbs().maxCoeff() < 1e-12);
    }
    CHECK(ProductContraction(Rounds(s, 0, k)).rho < 1e-12);
  }
}

TEST_CASE("One-peer exponential: n = 6 does not average exactly in 3 rounds") {
  OnePeerExponentialSchedule s(6);
  CHECK(s.period() == 3);
  Eigen::MatrixXd p = Eigen::MatrixXd::Identity(6, 6);
  for (std::uint64_t t = 0; t < 3; ++t) p = s.At(t).ToDense() * p;
  const double error = (p - Eigen::MatrixXd::Constant(6, 6, 1.0 / 6)).cwiseAbs().maxCoeff();
  MESSAGE("n = 6: max |P - 11^T/n| after 3 rounds = " << error);
  // Shifts 1, 2, 4 mod 6 reach the offsets {0..7} mod 6: offsets 0 and 1 twice.
  // P = (I + S)(I + S^2)(I + S^4)/8 with S^6 = I, so entries are 2/8 or 1/8.
  CHECK(error == doctest::Approx(0.25 - 1.0 / 6).epsilon(1e-12));
  const double contraction = ProductContraction(Rounds(s, 0, 3)).rho;
  MESSAGE("n = 6: contraction of one period = " << contraction);
  CHECK(contraction > 0.1);
  CHECK(contraction < 1);
}

TEST_CASE("Period contraction: dense SVD and Lanczos agree, and random matchings contract") {
  OnePeerExponentialSchedule s(300);
  SpectralOptions dense;
  dense.dense_nonsymmetric_limit = 1000;
  auto rounds = Rounds(s, 0, s.period());
  SpectralInfo a = ProductContraction(rounds, dense);
  SpectralInfo b = ProductContraction(rounds, Iterative());
  REQUIRE(b.converged);
  CHECK(std::abs(a.rho - b.rho) < 1e-8);
  // One round is the lazy shift (I + S)/2, a normal matrix with eigenvalues
  // (1 + e^(2 pi i m/n))/2: its contraction is max_{m != 0} |cos(pi m/n)| = cos(pi/n).
  CHECK(std::abs(ProductContraction(Rounds(s, 0, 1), dense).rho - std::cos(kPi / 300)) < 1e-9);
  RandomMatchingSchedule m(64, 3);
  double c = ProductContraction(Rounds(m, 0, 30)).rho;
  CHECK(c < 0.5);
}

}  // namespace
}  // namespace murmur::topology

namespace murmur::topology {
namespace {

TEST_CASE("A disconnected graph has spectral gap exactly 0, never a negative zero") {
  // Two disjoint edges: rho = 1 up to rounding, so 1 - rho is 0 or -2e-16.
  const std::vector<Edge> edges = {{0, 1}, {2, 3}};
  const Graph g = Graph::FromEdges(4, edges).value();
  const SpectralInfo info = SecondLargestEigenvalue(MetropolisHastingsWeights(g));
  CHECK(info.rho == doctest::Approx(1.0));
  CHECK(info.gap() == 0.0);
  CHECK_FALSE(std::signbit(info.gap()));
}

}  // namespace
}  // namespace murmur::topology
