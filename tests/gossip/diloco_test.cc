// DiLoCo over gossip (gossip/decentralized_sgd.h, options.outer) on
// closed-form problems: the outer optimizers against their sequences
// computed here in double, and the outer SGD at rate 1 against D-PSGD.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gossip/codec.h"
#include "tests/gossip/allreduce_harness.h"
#include "tests/gossip/quadratic.h"
#include "topology/generators.h"

namespace murmur::gossip {
namespace {

using testing::Expected;
using testing::kDim;
using testing::QuadraticLearner;
using testing::RingRun;
using testing::Run;
using testing::RunNodes;
using testing::RunRing;
using testing::RunRingNodes;
using testing::WorstGap;

TEST_CASE("DiLoCo with H = 1 and outer SGD at rate 1 is D-PSGD bit for bit, on a complete graph and a ring") {
  for (const topology::Graph& g : {topology::Complete(6), topology::Ring(6)}) {
    for (int h : {1, 4}) {
      CAPTURE(h);
      DecentralizedSgdOptions dpsgd;
      dpsgd.rounds = 25;
      dpsgd.local_steps = h;
      DecentralizedSgdOptions diloco = dpsgd;
      diloco.outer.kind = OuterKind::kSgd;
      diloco.outer.lr = 1.0;
      const Run a = RunNodes(g, dpsgd, 0.1), b = RunNodes(g, diloco, 0.1);
      CHECK(a.models == b.models);
      CHECK(a.models[0] != a.models[1]);  // heterogeneous nodes: not one vector everywhere
    }
  }
}

TEST_CASE("DiLoCo's outer SGD, Nesterov and Adam steps follow their sequences computed in double") {
  struct Case {
    OuterKind kind;
    double lr, momentum;
  };
  for (const topology::Graph& g : {topology::Complete(5), topology::Ring(7)}) {
    CAPTURE(g.num_nodes());
    for (const Case& c : {Case{OuterKind::kSgd, 0.5, 0}, Case{OuterKind::kNesterov, 0.7, 0.9},
                          Case{OuterKind::kAdam, 0.05, 0.9}}) {
      CAPTURE(static_cast<int>(c.kind));
      DecentralizedSgdOptions o;
      o.rounds = 40;
      o.local_steps = 5;
      o.outer.kind = c.kind;
      o.outer.lr = c.lr;
      o.outer.momentum = c.momentum;
      const Run run = RunNodes(g, o, 0.05);
      const auto want = Expected(g, o, 0.05, run.targets);
      CHECK(WorstGap(run, want) < 1e-4);
      // The recursion is not trivial: the run moved away from x0 and, on the
      // ring, the nodes still disagree.
      CHECK(std::abs(want[0][0] - (-2.5)) > 0.1);
    }
  }
}

TEST_CASE("A value coding with ',choco' is sent as CHOCO's coded differences") {
  const CodecSpec int8 = CodecSpec::Parse("int8").value();
  CHECK(int8.full_model_safe);
  const CodecSpec differences = CodecSpec::Parse("int8,choco").value();
  CHECK_FALSE(differences.full_model_safe);
  CHECK(differences.value_coding);
  CHECK(differences.error_feedback);
  const CodecSpec both = CodecSpec::Parse("fp16,no-ef,choco").value();
  CHECK_FALSE(both.full_model_safe);
  CHECK_FALSE(both.error_feedback);
  CHECK_FALSE(CodecSpec::Parse("none,choco").value().lossless_fp32);
  CHECK_FALSE(CodecSpec::Parse("topk:0.01,choco").value().value_coding);
  const auto bad = CodecSpec::Parse("int8,chocolate");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("int8,chocolate") != std::string::npos);
}

TEST_CASE("DiLoCo with exact averaging reaches the optimum of the average objective, compressed too") {
  // Quadratics with one curvature: the fixed point of local steps plus exact
  // averaging is the mean of the b_i, whatever H, and Nesterov's outer
  // momentum gets every node there, whole models in fp32 or int8 (within
  // int8's rounding of each model it sends: 1/127 of the largest value). CHOCO's
  // top-50% differences mix only part of the way each round, so the nodes
  // keep a disagreement of the order of their local drift; but their mean
  // is exact (the CHOCO terms s_i - x^_i sum to zero under a doubly
  // stochastic W, and the outer step is linear in g), so it alone must land
  // on the optimum.
  // int8 CHOCO differences (",choco": for DiLoCo, the coded pseudo-gradients)
  // carry what int8 rounds off into the next round, so the mean lands on the
  // optimum as exactly as fp32's.
  for (const std::string codec : {"none", "int8", "topk:0.5", "int8,choco"}) {
    CAPTURE(codec);
    const bool choco = codec == "topk:0.5";
    DecentralizedSgdOptions o;
    o.rounds = 150;
    o.local_steps = 10;
    o.outer.kind = OuterKind::kNesterov;
    o.outer.lr = 0.7;
    o.outer.momentum = 0.9;
    if (choco) o.gamma = 0.5;
    const Run run = RunNodes(topology::Complete(6), o, 0.05, codec.c_str());
    for (std::size_t k = 0; k < kDim; ++k) {
      double optimum = 0, mean = 0;
      for (const auto& b : run.targets) optimum += b[k] / static_cast<double>(run.targets.size());
      for (const auto& x : run.models) mean += x[k] / static_cast<double>(run.models.size());
      // int8 rounds each model it sends (no error feedback on whole models).
      CHECK(std::abs(mean - optimum) < (codec == "int8" ? 0.02 : 1e-3));
      if (!choco)
        for (const auto& x : run.models) CHECK(std::abs(x[k] - optimum) < 0.02);
    }
  }
}

TEST_CASE(
    "Local tensors (FedBN): mixing and outer steps leave a node's buffer tensors as its own training left "
    "them") {
  // x = (w: 4 values, buffer:s: 2). The quadratics are separable, so with
  // local buffers the w coordinates run exactly as without (bit for bit),
  // and each buffer coordinate follows the node's own local steps alone:
  // b_i + (1 - lr)^(rounds H) (x0 - b_i).
  Layout layout;
  layout.Add("w", {4});
  layout.Add("buffer:s", {2});
  const double lr = 0.05;
  auto own = [&](double x0, double b, int steps) {
    double x = x0;
    for (int s = 0; s < steps; ++s) x -= lr * (x - b);
    return x;
  };
  struct Case {
    MixOrder order;
    OuterKind outer;
  };
  for (const Case& c : {Case{MixOrder::kAdaptThenCombine, OuterKind::kNone},
                        Case{MixOrder::kCombineThenAdapt, OuterKind::kNone},
                        Case{MixOrder::kAdaptThenCombine, OuterKind::kNesterov}}) {
    CAPTURE(static_cast<int>(c.order));
    CAPTURE(static_cast<int>(c.outer));
    DecentralizedSgdOptions o;
    o.rounds = 20;
    o.local_steps = 3;
    o.order = c.order;
    o.outer.kind = c.outer;
    const Run shared = RunNodes(topology::Ring(5), o, lr, "none", &layout);
    o.local = LocalTensors(layout, kBufferTensorPrefix);
    REQUIRE(o.local.size() == 2);
    const Run local = RunNodes(topology::Ring(5), o, lr, "none", &layout);
    for (std::size_t i = 0; i < local.models.size(); ++i) {
      CAPTURE(i);
      for (std::size_t k = 0; k < 4; ++k) CHECK(local.models[i][k] == shared.models[i][k]);
      for (std::size_t k = 4; k < 6; ++k)
        CHECK(local.models[i][k] ==
              doctest::Approx(own(static_cast<double>(k) - 2.5, local.targets[i][k], 60)).epsilon(1e-5));
    }
    CHECK(shared.models[0][4] != local.models[0][4]);  // without it the buffers are mixed
  }
  // The ring all-reduce: the same.
  const NodeId n = 4;
  std::vector<std::vector<float>> x0s(n, std::vector<float>(kDim)), targets(n, std::vector<float>(kDim));
  for (NodeId i = 0; i < n; ++i)
    for (std::size_t k = 0; k < kDim; ++k) {
      x0s[i][k] = 1.0f;
      targets[i][k] = static_cast<float>(i + k);
    }
  RingAllReduceOptions r;
  r.rounds = 10;
  r.local_steps = 2;
  const RingRun shared = RunRing(n, r, lr, x0s, targets, {}, &layout);
  r.local = LocalTensors(layout, kBufferTensorPrefix);
  const RingRun local = RunRing(n, r, lr, x0s, targets, {}, &layout);
  for (NodeId i = 0; i < n; ++i) {
    CAPTURE(i);
    for (std::size_t k = 0; k < 4; ++k) CHECK(local.models[i][k] == shared.models[i][k]);
    for (std::size_t k = 4; k < 6; ++k)
      CHECK(local.models[i][k] == doctest::Approx(own(1.0, targets[i][k], 20)).epsilon(1e-5));
  }
}

}  // namespace
}  // namespace murmur::gossip
