// Optimizers against closed forms and hand-computed steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ml/optimizer.h"

namespace murmur::ml {
namespace {

// Runs `steps` steps with a gradient g(x) on a 1-D parameter starting at x0.
template <typename Grad>
std::vector<double> Run(Optimizer& opt, double x0, int steps, double lr, Grad g) {
  ParamVector x(1), grad(1);
  x[0] = static_cast<float>(x0);
  std::vector<double> out;
  for (int t = 0; t < steps; ++t) {
    grad[0] = static_cast<float>(g(x[0]));
    opt.Step(x, grad, lr);
    out.push_back(x[0]);
  }
  return out;
}

}  // namespace

TEST_CASE("plain SGD on a quadratic follows x_t = (1 - lr a)^t x_0") {
  Sgd sgd(1, SgdOptions{});
  auto xs = Run(sgd, 2.0, 20, 0.1, [](double x) { return 3.0 * x; });
  for (int t = 1; t <= 20; ++t) CHECK(xs[t - 1] == doctest::Approx(2.0 * std::pow(0.7, t)).epsilon(1e-5));
  CHECK(sgd.steps() == 20);
}

TEST_CASE("heavy-ball and Nesterov momentum under a constant gradient match their closed forms") {
  // v_t = g (1 - mu^t) / (1 - mu). Heavy ball moves lr v_t; Nesterov moves lr (g + mu v_t) = lr g (1 -
  // mu^{t+1}) / (1 - mu).
  const double mu = 0.9, lr = 0.01, g = 2.0;
  Sgd heavy(1, SgdOptions{mu, false, 0});
  Sgd nesterov(1, SgdOptions{mu, true, 0});
  auto h = Run(heavy, 0, 30, lr, [&](double) { return g; });
  auto n = Run(nesterov, 0, 30, lr, [&](double) { return g; });
  double xh = 0, xn = 0;
  for (int t = 1; t <= 30; ++t) {
    xh -= lr * g * (1 - std::pow(mu, t)) / (1 - mu);
    xn -= lr * g * (1 - std::pow(mu, t + 1)) / (1 - mu);
    CAPTURE(t);
    CHECK(h[t - 1] == doctest::Approx(xh).epsilon(1e-5));
    CHECK(n[t - 1] == doctest::Approx(xn).epsilon(1e-5));
  }
}

TEST_CASE("weight decay alone shrinks geometrically") {
  Sgd sgd(1, SgdOptions{0, false, 0.5});
  auto xs = Run(sgd, 4.0, 10, 0.1, [](double) { return 0.0; });
  CHECK(xs[9] == doctest::Approx(4.0 * std::pow(0.95, 10)).epsilon(1e-5));
}

TEST_CASE("Adam's first steps on f(x) = (x - 3)^2 / 2 match hand computation") {
  // x0 = 0, lr 0.1, beta 0.9 / 0.999, eps 1e-8. Step 1: g = -3, m_hat = -3,
  // v_hat = 9, x1 = 0.1 (1 - 3.3e-9). Step 2: g = -2.9, m = -0.56, v = 0.017401,
  // m_hat = -2.947368, v_hat = 8.704852, x2 = 0.1998973. Step 3 likewise.
  Adam adam(1, AdamOptions{});
  auto xs = Run(adam, 0.0, 3, 0.1, [](double x) { return x - 3; });
  CHECK(xs[0] == doctest::Approx(0.09999999966666669).epsilon(1e-6));
  CHECK(xs[1] == doctest::Approx(0.19989729224944813).epsilon(1e-6));
  CHECK(xs[2] == doctest::Approx(0.2996184760421757).epsilon(1e-6));
  adam.Reset();
  CHECK(adam.steps() == 0);
  auto again = Run(adam, 0.0, 1, 0.1, [](double x) { return x - 3; });
  CHECK(again[0] == doctest::Approx(xs[0]).epsilon(1e-6));
}

TEST_CASE("AdamW decays the weights outside the adaptive step") {
  // With a zero gradient Adam's step is zero, leaving only x <- (1 - lr wd) x.
  AdamOptions o;
  o.weight_decay = 0.1;
  o.decoupled = true;
  Adam adamw(1, o);
  auto xs = Run(adamw, 5.0, 3, 0.5, [](double) { return 0.0; });
  CHECK(xs[2] == doctest::Approx(5.0 * std::pow(0.95, 3)).epsilon(1e-6));
}

TEST_CASE("Adam over a long vector, in blocks, gives each element the step of a one-parameter Adam") {
  // 5,000 parameters (two blocks and a tail) against 5,000 one-parameter
  // Adams, with and without decoupled weight decay: every element takes the
  // scalar's step bit for bit, whichever block it falls in, vector lanes and
  // the scalar tail alike (Eigen's approximate "fast" square root, which
  // differed in the last bits between them and between CPU makers, is off:
  // EIGEN_FAST_MATH=0, cmake/MurmurOptions.cmake).
  for (bool decoupled : {false, true}) {
    CAPTURE(decoupled);
    AdamOptions o;
    o.weight_decay = 0.01;
    o.decoupled = decoupled;
    const std::size_t n = 5000;
    Adam whole(n, o);
    ParamVector x(n), g(n), xi(1), gi(1);
    for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    auto grad = [](std::size_t i, int t) { return std::cos(0.11f * static_cast<float>(i * (t + 1))); };
    for (int t = 0; t < 3; ++t) {
      for (std::size_t i = 0; i < n; ++i) g[i] = grad(i, t);
      whole.Step(x, g, 0.01);
    }
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      Adam alone(1, o);
      xi[0] = std::sin(0.37f * static_cast<float>(i));
      for (int t = 0; t < 3; ++t) {
        gi[0] = grad(i, t);
        alone.Step(xi, gi, 0.01);
      }
      worst = std::max(worst, std::abs(static_cast<double>(x[i]) - xi[0]));
    }
    CHECK(worst == 0);
  }
}

TEST_CASE("MakeOptimizer names and bad values") {
  for (const char* name : {"sgd", "momentum", "nesterov", "adam", "adamw"}) {
    CAPTURE(name);
    CHECK(MakeOptimizer(name, 4, 0.9, 0).ok());
  }
  CHECK(MakeOptimizer("rmsprop", 4, 0.9, 0).status().code() == StatusCode::kInvalidArgument);
  CHECK(MakeOptimizer("rmsprop", 4, 0.9, 0).status().message().find("adam or adamw") != std::string::npos);
  // "adamw" is Adam with decoupled decay (murmur sim's adamw): a zero gradient
  // leaves x (1 - lr wd); "adam" adds the decay to the gradient instead.
  for (const char* name : {"adamw", "adam"}) {
    CAPTURE(name);
    auto opt = MakeOptimizer(name, 1, 0.9, 0.1);
    REQUIRE(opt.ok());
    auto xs = Run(**opt, 5.0, 1, 0.5, [](double) { return 0.0; });
    if (std::string(name) == "adamw") {
      CHECK(xs[0] == doctest::Approx(5.0 * 0.95).epsilon(1e-6));
    } else {
      CHECK(xs[0] == doctest::Approx(5.0 - 0.5).epsilon(1e-6));  // Adam's first step is lr sign(g)
    }
  }
  CHECK_FALSE(MakeOptimizer("momentum", 4, 1.0, 0).ok());
  CHECK_FALSE(MakeOptimizer("sgd", 4, 0.9, -1).ok());
}

}  // namespace murmur::ml
