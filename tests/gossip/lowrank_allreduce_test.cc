// PowerSGD inside the all-reduce (gossip/lowrank_reduce.h) against a second
// implementation written here in double: PowerSGD (Vogels et al. 2019,
// Alg. 1 with error feedback and warm start) applied to the mean of the
// nodes' progress, which the two all-reduces of factors must reproduce by
// linearity; and the bytes of the two all-reduces, counted.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/rng.h"
#include "gossip/lowrank_reduce.h"
#include "tests/gossip/allreduce_harness.h"

namespace murmur::gossip {
namespace {

using testing::RingRun;
using testing::RunRingNodes;

using Matrix = std::vector<std::vector<double>>;  // row-major, rows x cols

Matrix Multiply(const Matrix& a, const Matrix& b) {
  Matrix c(a.size(), std::vector<double>(b[0].size(), 0.0));
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t k = 0; k < b.size(); ++k)
      for (std::size_t j = 0; j < b[0].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

Matrix Transpose(const Matrix& a) {
  Matrix t(a[0].size(), std::vector<double>(a.size()));
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j = 0; j < a[0].size(); ++j) t[j][i] = a[i][j];
  return t;
}

// Classical Gram-Schmidt on the columns, in double.
void Orthonormalize(Matrix& p) {
  const std::size_t rows = p.size(), cols = p[0].size();
  for (std::size_t c = 0; c < cols; ++c) {
    for (std::size_t prev = 0; prev < c; ++prev) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += p[i][prev] * p[i][c];
      for (std::size_t i = 0; i < rows; ++i) p[i][c] -= dot * p[i][prev];
    }
    double norm = 0;
    for (std::size_t i = 0; i < rows; ++i) norm += p[i][c] * p[i][c];
    norm = std::sqrt(norm);
    for (std::size_t i = 0; i < rows; ++i) p[i][c] /= norm;
  }
}

TEST_CASE(
    "PowerSGD inside the all-reduce takes PowerSGD's step on the mean progress, with warm start and error "
    "feedback, against a reference in double") {
  // w: 6 x 8 at rank 2 (2 (6 + 8) = 28 < 48: compressed), b: 3 values (whole).
  Layout layout;
  layout.Add("w", {6, 8});
  layout.Add("b", {3});
  const std::size_t size = layout.total_size(), rows = 6, cols = 8, rank = 2;
  const double lr = 0.1;
  const int h = 3, rounds = 4;
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling}) {
    for (NodeId n : {4u, 5u}) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(collective));
      std::vector<std::vector<float>> x0s(n, std::vector<float>(size)), targets(n, std::vector<float>(size));
      for (std::size_t k = 0; k < size; ++k) x0s[0][k] = static_cast<float>(std::sin(0.7 * k));
      for (NodeId i = 0; i < n; ++i) {
        x0s[i] = x0s[0];  // one start, as a job's common initial model
        Rng rng(21, i, RngPurpose::kGeneric);
        for (float& v : targets[i]) v = static_cast<float>(rng.Normal());
      }
      RingAllReduceOptions o;
      o.rounds = rounds;
      o.local_steps = h;
      o.collective = collective;
      o.lowrank = rank;
      o.lowrank_seed = 9;
      o.lowrank_layout = layout;
      const RingRun run =
          RunRingNodes(std::vector<RingAllReduceOptions>(n, o), lr, x0s, targets, {}, &layout);

      // The reference: x common, mean residual e, Q warm-started.
      const std::vector<float> q0 = LowRankReduce(layout, size, rank, true, 9).q();
      Matrix q(cols, std::vector<double>(rank));
      for (std::size_t c = 0; c < cols; ++c)
        for (std::size_t r = 0; r < rank; ++r) q[c][r] = q0[c * rank + r];
      std::vector<double> x(x0s[0].begin(), x0s[0].end()), e(size, 0.0);
      for (int t = 0; t < rounds; ++t) {
        std::vector<double> m(size, 0.0);  // mean progress + mean residual
        for (NodeId i = 0; i < n; ++i) {
          std::vector<double> xi = x;
          for (int s = 0; s < h; ++s)
            for (std::size_t k = 0; k < size; ++k) xi[k] -= lr * (xi[k] - targets[i][k]);
          for (std::size_t k = 0; k < size; ++k) m[k] += (x[k] - xi[k]) / n;
        }
        for (std::size_t k = 0; k < size; ++k) m[k] += e[k];
        Matrix mw(rows, std::vector<double>(cols));
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) mw[i][j] = m[i * cols + j];
        Matrix p = Multiply(mw, q);
        Orthonormalize(p);
        q = Multiply(Transpose(mw), p);
        const Matrix approx = Multiply(p, Transpose(q));
        std::vector<double> agreed = m;  // b: the mean itself
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < cols; ++j) agreed[i * cols + j] = approx[i][j];
        for (std::size_t k = 0; k < size; ++k) {
          e[k] = m[k] - agreed[k];
          x[k] -= agreed[k];
        }
      }
      double worst = 0, residual = 0;
      for (std::size_t k = 0; k < rows * cols; ++k) residual = std::max(residual, std::abs(e[k]));
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(run.models[i] == run.models[0]);  // one agreed step, bit for bit
        for (std::size_t k = 0; k < size; ++k) worst = std::max(worst, std::abs(run.models[i][k] - x[k]));
        CHECK(run.failed[i] == 0);
      }
      CHECK(residual > 0.01);  // rank 2 of 6 x 8 drops something, which error feedback carries
      CHECK(worst < 2e-5);
    }
  }
}

TEST_CASE(
    "PowerSGD inside the all-reduce sends r (rows + cols) values per compressed tensor through the ring") {
  Layout layout;
  layout.Add("w", {40, 30});
  layout.Add("v", {30, 1});  // one column: whole
  const std::size_t size = layout.total_size();
  const NodeId n = 5;
  const std::uint32_t rank = 3;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(size, 0.5f)), targets = x0s;
  RingAllReduceOptions o;
  o.rounds = 1;
  o.lowrank = rank;
  o.lowrank_layout = layout;
  const RingRun run = RunRingNodes(std::vector<RingAllReduceOptions>(n, o), 0.1, x0s, targets, {}, &layout);
  // Two ring all-reduces: of 40 x 3 + 30 values, then of 30 x 3; node i
  // receives every segment but two of each (docs/algorithms.md).
  auto received = [&](std::size_t len, NodeId i) {
    const NodeId from = (i + n - 1) % n;
    auto seg = [&](NodeId k) {
      const auto [b, e] = RingSegment(len, n, k % n);
      return e - b;
    };
    return 2 * len - seg(from + 1) - seg(from + 2);
  };
  for (NodeId i = 0; i < n; ++i) {
    CAPTURE(i);
    CHECK(run.received[i] == received(40 * rank + 30, i) + received(30 * rank, i));
    CHECK(run.received[i] * 5 <
          2 * size);  // against the ring's ~2 (n - 1) / n of the model: 5x fewer and more
  }
}

}  // namespace
}  // namespace murmur::gossip
