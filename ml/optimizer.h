// Optimizers: update a ParamVector in place from a gradient.
//
//   Sgd   stochastic gradient descent with momentum and weight decay, in the
//         form of Sutskever et al. 2013 as written by PyTorch:
//           g <- g + wd x;  v <- mu v + g;
//           heavy ball (Polyak 1964):  x <- x - lr v
//           Nesterov:                  x <- x - lr (g + mu v)
//         mu = 0 gives plain SGD.
//   Adam  Kingma and Ba 2015, Algorithm 1, with bias correction:
//           g <- g + wd x;  m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2
//           x <- x - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
//         or, with decoupled = true, AdamW (Loshchilov and Hutter 2019):
//           x <- x - lr wd x before the Adam step, and no wd in g.
//
// The learning rate comes with every step (from a schedule, ml/schedule.h).
// State (v, m) is sized at construction: Step does not allocate.
//
// Thread-safety: an Optimizer belongs to one node or task at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/param_vector.h"
#include "core/status.h"

namespace murmur::ml {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // REQUIRES: params.size() == grad.size() == the size given at construction.
  virtual void Step(ParamVector& params, const ParamVector& grad, double lr) = 0;
  // Forgets all state (momentum, moments, step count).
  virtual void Reset() = 0;
  // Number of Step calls since construction or Reset.
  virtual std::int64_t steps() const = 0;
};

struct SgdOptions {
  double momentum = 0;  // mu
  bool nesterov = false;
  double weight_decay = 0;  // wd
};

class Sgd final : public Optimizer {
 public:
  Sgd(std::size_t size, SgdOptions options);
  void Step(ParamVector& params, const ParamVector& grad, double lr) override;
  void Reset() override;
  std::int64_t steps() const override { return steps_; }

 private:
  SgdOptions options_;
  Eigen::VectorXf velocity_;
  std::int64_t steps_ = 0;
};

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0;
  bool decoupled = false;  // AdamW
};

class Adam final : public Optimizer {
 public:
  Adam(std::size_t size, AdamOptions options);
  void Step(ParamVector& params, const ParamVector& grad, double lr) override;
  void Reset() override;
  std::int64_t steps() const override { return steps_; }

 private:
  AdamOptions options_;
  Eigen::VectorXf m_, v_;
  std::int64_t steps_ = 0;
};

// One Adam step on x with moments m and v at step number t (1 for the
// first), as Adam::Step takes it: what MlLearner's inner AdamW uses too.
// REQUIRES: x, g, m, v of one size; t >= 1.
void AdamUpdate(std::span<float> x, std::span<const float> g, std::span<float> m, std::span<float> v,
                std::int64_t t, double lr, const AdamOptions& options);

// "sgd" (no momentum), "momentum" (heavy ball), "nesterov", "adam" or
// "adamw" (Adam with decoupled weight decay, Loshchilov and Hutter 2019, as
// the simulator's and murmurd's nodes take it), with `momentum` for the two
// momentum kinds and `weight_decay` for all (added to the gradient, but for
// adamw: x -= lr weight_decay x).
Result<std::unique_ptr<Optimizer>> MakeOptimizer(std::string_view name, std::size_t size, double momentum,
                                                 double weight_decay);

}  // namespace murmur::ml
