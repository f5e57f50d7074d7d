// PowerSGD inside the all-reduce (gossip/lowrank_reduce.h) against a second
// implementation written here in double: PowerSGD (Vogels et al. 2019,
// Alg. 1 with error feedback and warm start) applied to the mean of the
// nodes' progress, which the two all-reduces of factors must reproduce by
// linearity; and the bytes of the two all-reduces, counted.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "gossip/lowrank_reduce.h"
#include "gossip/ring_allreduce.h"
#include "sim/net/simulator.h"
#include "tests/gossip/allreduce_harness.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"
#include "topology/weights.h"

namespace murmur::gossip {
namespace {

using testing::Groups;
using testing::QuadraticLearner;
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

// PowerSGD on the mean progress of the nodes, in double, for the layout
// w: rows x cols (compressed at `rank`), b (whole): the warm-start Q and the
// mean residual carried from step to step.
struct PowerSgdOnMean {
  PowerSgdOnMean(const Layout& layout, std::size_t tensor_rows, std::size_t tensor_cols, std::size_t rank,
                 std::uint64_t seed)
      : rows(tensor_rows),
        cols(tensor_cols),
        q(cols, std::vector<double>(rank)),
        e(layout.total_size(), 0.0) {
    const std::vector<float> q0 =
        LowRankReduce(layout, layout.total_size(), static_cast<std::uint32_t>(rank), true, seed).q();
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t r = 0; r < rank; ++r) q[c][r] = q0[c * rank + r];
  }
  // The agreed progress for the nodes' mean progress `d` (the mean residual added).
  std::vector<double> Step(const std::vector<double>& d) {
    std::vector<double> m = d;
    for (std::size_t k = 0; k < m.size(); ++k) m[k] += e[k];
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
    for (std::size_t k = 0; k < m.size(); ++k) e[k] = m[k] - agreed[k];
    return agreed;
  }
  // The largest |residual| of the compressed tensor.
  double Residual() const {
    double r = 0;
    for (std::size_t k = 0; k < rows * cols; ++k) r = std::max(r, std::abs(e[k]));
    return r;
  }
  std::size_t rows, cols;
  Matrix q;
  std::vector<double> e;
};

// w: 6 x 8, compressed at rank 2 (2 (6 + 8) = 28 < 48), and b: 3 values (whole).
Layout MatrixAndVector() {
  Layout layout;
  layout.Add("w", {6, 8});
  layout.Add("b", {3});
  return layout;
}

// n nodes from one start, x0[k] = start(k) (as a job's common initial
// model), node i minimizing 0.5 ||x - b_i||^2 with b_i ~ N(0, 1) from (seed, i).
struct Problem {
  std::vector<std::vector<float>> x0s, targets;
};
Problem CommonStart(NodeId n, std::size_t size, std::uint64_t seed, double (*start)(double)) {
  Problem p{std::vector<std::vector<float>>(n, std::vector<float>(size)),
            std::vector<std::vector<float>>(n, std::vector<float>(size))};
  for (NodeId i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < size; ++k) p.x0s[i][k] = static_cast<float>(start(static_cast<double>(k)));
    Rng rng(seed, i, RngPurpose::kGeneric);
    for (float& v : p.targets[i]) v = static_cast<float>(rng.Normal());
  }
  return p;
}

// PowerSGD at `rank` inside the all-reduce, `rounds` rounds of h local
// steps (the rest of `o` as given).
RingAllReduceOptions LowRankOptions(std::uint64_t rounds, int h, Collective collective, std::uint32_t rank,
                                    std::uint64_t seed, const Layout& layout, RingAllReduceOptions o = {}) {
  o.rounds = rounds;
  o.local_steps = h;
  o.collective = collective;
  o.lowrank = rank;
  o.lowrank_seed = seed;
  o.lowrank_layout = layout;
  return o;
}

// The reference of a low-rank all-reduce: `rounds` rounds in which every
// node takes h steps of rate lr from the common x toward its target, and x
// moves by PowerSGD's agreed step on the mean progress.
std::vector<double> LocalSgdWithPowerSgd(std::vector<double> x,
                                         const std::vector<std::vector<float>>& targets, int rounds, int h,
                                         double lr, PowerSgdOnMean& power) {
  const std::size_t n = targets.size();
  for (int t = 0; t < rounds; ++t) {
    std::vector<double> d(x.size(), 0.0);  // mean progress
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<double> xi = x;
      for (int s = 0; s < h; ++s)
        for (std::size_t k = 0; k < x.size(); ++k) xi[k] -= lr * (xi[k] - targets[i][k]);
      for (std::size_t k = 0; k < x.size(); ++k) d[k] += (x[k] - xi[k]) / static_cast<double>(n);
    }
    const std::vector<double> agreed = power.Step(d);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] -= agreed[k];
  }
  return x;
}

TEST_CASE(
    "PowerSGD inside the all-reduce takes PowerSGD's step on the mean progress, with warm start and error "
    "feedback, against a reference in double") {
  const Layout layout = MatrixAndVector();
  const std::size_t size = layout.total_size(), rows = 6, cols = 8, rank = 2;
  const double lr = 0.1;
  const int h = 3, rounds = 4;
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling}) {
    for (NodeId n : {4u, 5u}) {
      CAPTURE(n);
      CAPTURE(static_cast<int>(collective));
      const auto [x0s, targets] = CommonStart(n, size, 21, [](double k) { return std::sin(0.7 * k); });
      const RingAllReduceOptions o = LowRankOptions(rounds, h, collective, rank, 9, layout);
      const RingRun run =
          RunRingNodes(std::vector<RingAllReduceOptions>(n, o), lr, x0s, targets, {}, &layout);

      // The reference: x common, mean residual e, Q warm-started.
      PowerSgdOnMean power(layout, rows, cols, rank, 9);
      const std::vector<double> x =
          LocalSgdWithPowerSgd({x0s[0].begin(), x0s[0].end()}, targets, rounds, h, lr, power);
      double worst = 0;
      const double residual = power.Residual();
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
    "PowerSGD inside a hierarchical all-reduce whose groups mix to one mean takes PowerSGD's step on the "
    "mean progress of every node, against the reference in double") {
  const Layout layout = MatrixAndVector();
  const std::size_t size = layout.total_size(), rows = 6, cols = 8, rank = 2;
  const double lr = 0.1;
  const int h = 3, rounds = 4;
  for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling}) {
    for (const auto& [g, m] : {std::pair<NodeId, NodeId>{2, 3}, {3, 2}, {2, 4}}) {
      CAPTURE(static_cast<int>(collective));
      CAPTURE(g);
      CAPTURE(m);
      const NodeId n = g * m;
      const auto [x0s, targets] = CommonStart(n, size, 29, [](double k) { return std::sin(0.4 * k); });
      const topology::MixingMatrix w =
          topology::MakeWeights(topology::Complete(g), {topology::WeightRule::kMetropolisHastings, false})
              .value();
      std::vector<RingAllReduceOptions> options = Groups(g, m, w);
      for (RingAllReduceOptions& o : options) o = LowRankOptions(rounds, h, collective, rank, 3, layout, o);
      const RingRun run = RunRingNodes(options, lr, x0s, targets, {}, &layout);
      PowerSgdOnMean power(layout, rows, cols, rank, 3);  // on the mean progress of every node
      const std::vector<double> x =
          LocalSgdWithPowerSgd({x0s[0].begin(), x0s[0].end()}, targets, rounds, h, lr, power);
      double worst = 0;
      for (NodeId i = 0; i < n; ++i) {
        CAPTURE(i);
        CHECK(run.failed[i] == 0);
        CHECK(run.models[i] == run.models[i / m * m]);  // one group, one model, bit for bit
        for (std::size_t k = 0; k < size; ++k) worst = std::max(worst, std::abs(run.models[i][k] - x[k]));
      }
      CHECK(power.Residual() > 0.01);
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

TEST_CASE(
    "PowerSGD inside an overlapped all-reduce: the anchor takes the one-step-delayed outer step on the "
    "agreed "
    "low-rank progress, against a reference in double") {
  const Layout layout = MatrixAndVector();
  const std::size_t size = layout.total_size(), rows = 6, cols = 8, rank = 2;
  const double lr = 0.1;
  const int h = 3;
  const std::uint64_t rounds = 6;
  for (OuterKind kind : {OuterKind::kNone, OuterKind::kNesterov}) {
    for (Collective collective : {Collective::kRing, Collective::kHalvingDoubling}) {
      for (NodeId n : {4u, 5u}) {
        CAPTURE(n);
        CAPTURE(static_cast<int>(collective));
        CAPTURE(static_cast<int>(kind));
        const auto [x0s, targets] = CommonStart(n, size, 23, [](double k) { return std::cos(0.3 * k); });
        RingAllReduceOptions overlapped;
        overlapped.overlap = true;
        RingAllReduceOptions o = LowRankOptions(rounds, h, collective, rank, 5, layout, overlapped);
        o.outer.kind = kind;
        o.outer.lr = 0.7;
        const RingRun run =
            RunRingNodes(std::vector<RingAllReduceOptions>(n, o), lr, x0s, targets, {}, &layout);

        // Phase p trains from each node's x while round p - 1 reduces; then
        // the anchor steps on round p - 1's agreed progress and
        // x_i = theta - (phase p's progress of node i), whose mean round p
        // compresses. After the last round every node holds the anchor.
        PowerSgdOnMean power(layout, rows, cols, rank, 5);
        std::vector<double> theta(x0s[0].begin(), x0s[0].end()), momentum(size, 0.0);
        std::vector<std::vector<double>> x(n, theta), d(n, std::vector<double>(size));
        auto phase = [&] {
          for (NodeId i = 0; i < n; ++i) {
            const std::vector<double> start = x[i];
            for (int s = 0; s < h; ++s)
              for (std::size_t k = 0; k < size; ++k) x[i][k] -= lr * (x[i][k] - targets[i][k]);
            for (std::size_t k = 0; k < size; ++k) d[i][k] = start[k] - x[i][k];
          }
        };
        auto mean = [&] {
          std::vector<double> m(size, 0.0);
          for (NodeId i = 0; i < n; ++i)
            for (std::size_t k = 0; k < size; ++k) m[k] += d[i][k] / n;
          return m;
        };
        auto outer = [&](const std::vector<double>& g) {  // g: the agreed progress
          for (std::size_t k = 0; k < size; ++k) {
            double step = g[k];
            if (kind == OuterKind::kNesterov) {
              momentum[k] = o.outer.momentum * momentum[k] + g[k];
              step = g[k] + o.outer.momentum * momentum[k];
            }
            theta[k] -= kind == OuterKind::kNone ? g[k] : o.outer.lr * step;
          }
        };
        phase();
        std::vector<double> reducing = mean();  // round 0's mean progress
        for (std::uint64_t p = 1; p < rounds; ++p) {
          phase();
          outer(power.Step(reducing));
          for (NodeId i = 0; i < n; ++i)
            for (std::size_t k = 0; k < size; ++k) x[i][k] = theta[k] - d[i][k];
          reducing = mean();
        }
        outer(power.Step(reducing));
        double worst = 0;
        for (NodeId i = 0; i < n; ++i) {
          CAPTURE(i);
          CHECK(run.failed[i] == 0);
          CHECK(run.models[i] == run.models[0]);  // one anchor, bit for bit
          for (std::size_t k = 0; k < size; ++k)
            worst = std::max(worst, std::abs(run.models[i][k] - theta[k]));
        }
        CHECK(power.Residual() > 0.01);  // rank 2 of 6 x 8 drops something, which error feedback carries
        CHECK(worst < 2e-5);
      }
    }
  }
}

// Rounds [first, last) of n low-rank all-reduce nodes on w: 6 x 8, b: 3,
// each from `states` when given (else x0); their states at the end.
std::vector<NodeState> RunLowRank(std::uint64_t first, std::uint64_t last,
                                  const std::vector<NodeState>* states) {
  const Layout layout = MatrixAndVector();
  const NodeId n = 4;
  sim::Simulator sim(sim::SimulatorOptions{}, std::vector<sim::DeviceProfile>(n));
  std::vector<std::unique_ptr<QuadraticLearner>> learners;
  std::vector<std::unique_ptr<RingAllReduceNode>> nodes;
  auto none = CodecSpec::Parse("none").value();
  for (NodeId i = 0; i < n; ++i) {
    std::vector<float> b(layout.total_size());
    Rng rng(4, i, RngPurpose::kGeneric);
    for (float& v : b) v = static_cast<float>(rng.Normal());
    learners.push_back(std::make_unique<QuadraticLearner>(b, 0.1));
    RingAllReduceOptions o;
    o.rounds = last;
    o.first_round = first;
    o.local_steps = 3;
    o.lowrank = 2;
    o.lowrank_layout = layout;
    o.outer.kind = OuterKind::kNesterov;
    nodes.push_back(std::make_unique<RingAllReduceNode>(
        sim.env(i), n, *learners.back(), ParamVector(layout),
        std::make_unique<Codec>(none, i, Layout(), Rng(7, i, RngPurpose::kCompression)), o, nullptr));
    if (states != nullptr) REQUIRE(nodes.back()->ImportState((*states)[i]).ok());
    sim.SetSink(i, nodes.back().get());
  }
  for (auto& node : nodes) node->Start();
  sim.RunUntil(Nanos::max());
  std::vector<NodeState> out;
  for (auto& node : nodes) {
    CHECK(node->finished());
    out.push_back(node->ExportState().value());
  }
  return out;
}

TEST_CASE(
    "A low-rank all-reduce stopped after round 3 and resumed from its exported state (residual, warm-start "
    "Q, "
    "outer momentum) ends as a run never stopped") {
  const std::vector<NodeState> whole = RunLowRank(0, 6, nullptr);
  const std::vector<NodeState> half = RunLowRank(0, 3, nullptr);
  REQUIRE(half[0].wide.count("lowrank/q") == 1);
  CHECK(half[0].wide.at("lowrank/q").size() == 8 * 2);
  CHECK(half[0].vectors.count("lowrank/residual") == 1);
  const std::vector<NodeState> resumed = RunLowRank(3, 6, &half);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    CAPTURE(i);
    CHECK(half[i].vectors.at("x") != whole[i].vectors.at("x"));
    CHECK(resumed[i].vectors.at("x") == whole[i].vectors.at("x"));
    CHECK(resumed[i].wide.at("lowrank/q") == whole[i].wide.at("lowrank/q"));
  }
  // A state of another rank is refused by name.
  NodeState wrong = half[0];
  wrong.wide["lowrank/q"].push_back(0.0);
  const Layout layout = MatrixAndVector();
  LowRankReduce reduce(layout, layout.total_size(), 2, true, 0);
  CHECK(reduce.ImportState(wrong).message().find("'lowrank/q'") != std::string::npos);
}

}  // namespace
}  // namespace murmur::gossip
