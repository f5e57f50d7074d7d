#include "node/model_learner.h"

#include <algorithm>

#include "core/check.h"

namespace murmur::node {

ModelLearner::ModelLearner(const ml::Model& model, const ml::Dataset& train,
                           std::span<const ml::SampleIndex> samples, int batch, double lr, Rng rng)
    : model_(model),
      train_(train),
      order_(samples.begin(), samples.end()),
      batch_(batch),
      lr_(lr),
      rng_(rng),
      workspace_(model.NewWorkspace()),
      grad_(model.layout()) {
  MURMUR_CHECK(batch_ > 0);
  rng_.Shuffle(std::span<ml::SampleIndex>(order_));
}

double ModelLearner::FlopsPerStep() const {
  const auto b = std::min<std::size_t>(static_cast<std::size_t>(batch_), std::max<std::size_t>(order_.size(), 1));
  return model_.FlopsPerSample() * static_cast<double>(b);
}

std::span<const ml::SampleIndex> ModelLearner::NextBatch() {
  const std::size_t b = std::min<std::size_t>(static_cast<std::size_t>(batch_), order_.size());
  if (cursor_ + b > order_.size()) {
    rng_.Shuffle(std::span<ml::SampleIndex>(order_));
    cursor_ = 0;
  }
  std::span<const ml::SampleIndex> batch(order_.data() + cursor_, b);
  cursor_ += b;
  return batch;
}

double ModelLearner::Gradient(const ParamVector& params, ParamVector& grad) {
  if (order_.empty()) {
    grad.SetZero();
    return 0;
  }
  return model_.LossAndGradient(params, train_, NextBatch(), grad, *workspace_);
}

double ModelLearner::Train(ParamVector& params, int steps) {
  if (order_.empty() || steps <= 0) return 0;
  double total = 0;
  const auto lr = static_cast<float>(lr_);
  for (int k = 0; k < steps; ++k) {
    total += Gradient(params, grad_);
    params.vec() -= lr * grad_.vec();
  }
  return total / steps;
}

}  // namespace murmur::node
