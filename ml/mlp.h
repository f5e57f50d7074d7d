// Mlp: a multilayer perceptron with ReLU hidden layers and a softmax output,
// trained with cross-entropy. With no hidden layer it is multinomial logistic
// (softmax) regression.
//
// Layer l maps A_{l-1} (m x in) to Z_l = A_{l-1} W_l + 1 b_l^T with W_l stored
// row-major as "dense<l>.weight" {in, out} and b_l as "dense<l>.bias" {out};
// hidden layers apply ReLU. Everything is batched Eigen matrix code (no
// per-sample loops). The softmax subtracts each row's maximum before
// exponentiating, and the loss is log(sum exp(z - max)) - (z_y - max), so
// neither overflows. Backward pass: G_L = (P - Y) / B, dW_l = A_{l-1}^T G_l,
// db_l = 1^T G_l, G_{l-1} = (G_l W_l^T) .* [Z_{l-1} > 0].
// Initialization: He et al. 2015 normal N(0, 2 / fan_in) for ReLU layers,
// Glorot and Bengio 2010 uniform for the output layer; biases zero.
//
// Thread-safety: as every Model, const and thread-safe; see ml/model.h.
#pragma once

#include <vector>

#include "ml/model.h"

namespace murmur::ml {

struct MlpOptions {
  std::int64_t input_dim = 784;
  std::vector<std::int64_t> hidden;  // empty: softmax regression
  int num_classes = 10;
  // L2 penalty (l2 / 2) * sum ||W_l||^2 on the weights (not the biases).
  double l2 = 0;
  // Rows per chunk of a training batch: the unit of parallel work and of the
  // deterministic gradient sum. Results depend on it, never on the thread count.
  std::int64_t chunk_rows = 32;
};

class Mlp final : public Model {
 public:
  // REQUIRES: every size > 0.
  explicit Mlp(MlpOptions options);

  std::string spec() const override;
  const Layout& layout() const override { return layout_; }
  std::int64_t input_dim() const override { return options_.input_dim; }
  int num_classes() const override { return options_.num_classes; }
  double FlopsPerSample() const override;
  std::unique_ptr<ModelWorkspace> NewWorkspace() const override;
  void InitParams(ParamVector& params, Rng& rng) const override;
  double LossAndGradient(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> batch,
                         ParamVector& grad, ModelWorkspace& ws, ThreadPool* pool = nullptr,
                         std::uint64_t noise_seed = 0) const override;
  void Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
               std::span<std::int32_t> out, ModelWorkspace& ws, ThreadPool* pool = nullptr) const override;
  using Model::Evaluate;
  Evaluation Evaluate(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                      ModelWorkspace& ws, ThreadPool* pool = nullptr) const override;

  const MlpOptions& options() const { return options_; }
  // Layer widths: input_dim, hidden..., num_classes.
  const std::vector<std::int64_t>& widths() const { return widths_; }

 private:
  MlpOptions options_;
  std::vector<std::int64_t> widths_;
  Layout layout_;
};

}  // namespace murmur::ml
