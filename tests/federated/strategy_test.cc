#include "federated/strategy.h"

#include <doctest/doctest.h>

#include <vector>

namespace murmur::federated {
namespace {

// Expected values computed by hand from Reddi et al. (2021), Algorithm 2,
// with x = 1, Delta = 0.1, lr = 0.01, beta1 = 0.9, beta2 = 0.99, tau = 1e-3, v0 = tau^2
// (double precision in Python: m = 0.01, v as per rule, x + lr m / (sqrt(v) + tau)).
TEST_CASE("Adaptive server optimizers take Reddi et al.'s first step") {
  struct Case {
    ServerOptimizerKind kind;
    double expected;
  };
  for (Case c : {Case{ServerOptimizerKind::kFedAdam, 1.0090502831185222},
                 Case{ServerOptimizerKind::kFedAdagrad, 1.00099004999875},
                 Case{ServerOptimizerKind::kFedYogi, 1.0090498756211208}}) {
    CAPTURE(ServerOptimizerName(c.kind));
    ServerOptimizerOptions o;
    o.kind = c.kind;
    o.lr = 0.01;
    ServerOptimizer opt(o, 1);
    std::vector<float> x{1.0f};
    std::vector<double> d{0.1};
    opt.Apply(x, d);
    CHECK(x[0] == doctest::Approx(c.expected).epsilon(1e-7));
  }
}

TEST_CASE("FedAvg moves by lr Delta and FedAvgM accumulates momentum") {
  ServerOptimizerOptions o;
  ServerOptimizer avg(o, 2);
  std::vector<float> x{1.0f, -2.0f};
  std::vector<double> d{0.5, 0.25};
  avg.Apply(x, d);
  CHECK(x[0] == 1.5f);
  CHECK(x[1] == -1.75f);

  o.kind = ServerOptimizerKind::kFedAvgM;
  ServerOptimizer m(o, 1);
  std::vector<float> y{1.0f};
  std::vector<double> d1{0.1}, d2{-0.05};
  m.Apply(y, d1);
  CHECK(y[0] == doctest::Approx(1.1));
  m.Apply(y, d2);  // v = 0.9 * 0.1 - 0.05 = 0.04
  CHECK(y[0] == doctest::Approx(1.14));
}

TEST_CASE("FedAvgM with Nesterov momentum follows DiLoCo's outer sequence computed by hand") {
  ServerOptimizerOptions o;
  o.kind = ServerOptimizerKind::kFedAvgM;
  o.nesterov = true;
  o.momentum = 0.9;
  o.lr = 0.7;
  ServerOptimizer n(o, 1);
  std::vector<float> y{1.0f};
  // v1 = 0.1, x1 = 1 + 0.7 (0.1 + 0.09) = 1.133; v2 = 0.09 - 0.05 = 0.04,
  // x2 = 1.133 + 0.7 (-0.05 + 0.036) = 1.1232; v3 = 0.036 + 0.2 = 0.236,
  // x3 = 1.1232 + 0.7 (0.2 + 0.2124) = 1.41188.
  std::vector<double> d1{0.1}, d2{-0.05}, d3{0.2};
  n.Apply(y, d1);
  CHECK(y[0] == doctest::Approx(1.133));
  n.Apply(y, d2);
  CHECK(y[0] == doctest::Approx(1.1232));
  n.Apply(y, d3);
  CHECK(y[0] == doctest::Approx(1.41188));
  CHECK(n.first_moment()[0] == doctest::Approx(0.236));
}

TEST_CASE("FedAvg with lr 1 lands exactly on x + Delta computed in double") {
  // A model difference y - x taken in double and added back in double gives y exactly.
  ServerOptimizer avg({}, 3);
  std::vector<float> x{1.0f, 1e-8f, -3.0e-5f}, y{1e-8f, 1.0f, 7.0e-6f};
  std::vector<double> d(3);
  for (int j = 0; j < 3; ++j) d[j] = static_cast<double>(y[j]) - x[j];
  avg.Apply(x, d);
  CHECK(x == y);
}

TEST_CASE("Server optimizer names parse and unknown names are refused") {
  CHECK(ParseServerOptimizer("fedyogi").value() == ServerOptimizerKind::kFedYogi);
  CHECK(ParseServerOptimizer("sgd").status().message().find("'sgd'") != std::string::npos);
  CHECK(DefaultServerLr(ServerOptimizerKind::kFedAdam) == 0.01);
  CHECK(DefaultServerLr(ServerOptimizerKind::kFedAvg) == 1.0);
}

}  // namespace
}  // namespace murmur::federated
