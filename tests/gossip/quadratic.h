// A LocalLearner with a closed-form optimum for gossip tests: node i
// minimizes f_i(x) = 0.5 ||x - b_i||^2 with exact gradients, so the network
// optimum of (1/n) sum_i f_i is the mean of the b_i.
#pragma once

#include "core/learner.h"

namespace murmur::gossip::testing {

class QuadraticLearner final : public LocalLearner {
 public:
  QuadraticLearner(std::vector<float> b, double lr) : b_(std::move(b)), lr_(lr) {}
  double Train(ParamVector& x, int steps) override {
    for (int s = 0; s < steps; ++s) {
      for (std::size_t k = 0; k < x.size(); ++k) x[k] -= static_cast<float>(lr_) * (x[k] - b_[k]);
    }
    return Loss(x);
  }
  double Gradient(const ParamVector& x, ParamVector& g) override {
    for (std::size_t k = 0; k < x.size(); ++k) g[k] = x[k] - b_[k];
    return Loss(x);
  }
  double LearningRate(std::uint64_t) const override { return lr_; }
  double FlopsPerStep() const override { return 1e6; }

 private:
  double Loss(const ParamVector& x) const {
    double l = 0;
    for (std::size_t k = 0; k < x.size(); ++k) l += 0.5 * (x[k] - b_[k]) * (x[k] - b_[k]);
    return l;
  }
  std::vector<float> b_;
  double lr_;
};

}  // namespace murmur::gossip::testing
