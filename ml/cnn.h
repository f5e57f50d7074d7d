// Cnn: a convolutional network over image samples (C x H x W), trained with
// softmax cross-entropy like the MLP (ml/mlp.h).
//
// The network is a list of layers (ml/cnn_spec.h parses them from a spec such
// as "cnn:c32k5p2,pool2,c64k5p2,pool2,d512") followed by a dense classifier
// to num_classes logits. Layers: 2-D convolution (stride, zero padding),
// max and average pooling, dense, group normalization, dropout; convolution,
// dense and group-norm layers may apply a ReLU to their output. A dense layer
// reads the whole sample as a flat vector (C, H, W order), so flattening is
// implicit.
//
// Parameters, in layer order, in the ParamVector's Layout:
//   convolution  "conv<l>.weight" {out, in * k * k} (PyTorch's {out, in, k, k}
//                flattened), "conv<l>.bias" {out}
//   dense        "dense<l>.weight" {in, out} (as ml/mlp.h: X W), "dense<l>.bias" {out}
//   group norm   "norm<l>.weight" {channels} (gamma), "norm<l>.bias" {channels} (beta)
// where l is the layer's position in the list.
//
// A convolution runs as im2col plus one Eigen GEMM per sample (Y = W cols + b)
// and its backward pass as two (dW += dY cols^T, dcols = W^T dY, then col2im);
// the kernels are in ml/layers.h. As every Model, a batch is cut into fixed
// chunks summed in chunk order (ml/chunks.h): results are bit for bit the same
// for any thread count. Scratch memory lives in the per-thread workspace, so a
// step allocates nothing once the workspace is warm.
//
// Initialization: He et al. 2015 normal N(0, 2 / fan_in) for convolutions and
// hidden dense layers, Glorot and Bengio 2010 uniform for the classifier;
// biases zero; group norm gamma 1, beta 0.
//
// Thread-safety: as every Model, const and thread-safe; see ml/model.h.
#pragma once

#include <string>
#include <vector>

#include "ml/layers.h"
#include "ml/model.h"

namespace murmur::ml {

enum class CnnLayerKind { kConv, kMaxPool, kAvgPool, kDense, kGroupNorm, kDropout };

struct CnnLayer {
  CnnLayerKind kind = CnnLayerKind::kConv;
  // Convolution: output channels; dense: units; pooling: window (and stride);
  // group norm: groups.
  std::int64_t size = 0;
  std::int64_t kernel = 0, stride = 1, pad = 0;  // convolution
  double p = 0;                                  // dropout: probability of dropping a value
  bool relu = false;                             // convolution, dense, group norm: ReLU after
};

struct CnnOptions {
  std::string spec;  // what spec() returns: the preset name or the "cnn:..." text
  Shape3 input;
  std::vector<CnnLayer> layers;  // without the classifier, which is added
  int num_classes = 10;
  double l2 = 0;                 // (l2 / 2) sum ||W||^2 over convolution and dense weights
  std::int64_t chunk_rows = 32;  // see MlpOptions::chunk_rows
  // Convolutions of stride 1 run as direct kernels where the build has them
  // (ml/direct_conv.h); false: im2col and a GEMM everywhere (the tests
  // check each against the other).
  bool direct_conv = true;
};

class Cnn final : public Model {
 public:
  // The shape of every layer's output, or InvalidArgument naming the layer
  // that does not fit (a window larger than its input, groups that do not
  // divide the channels, ...). The last entry is the classifier's.
  static Result<std::vector<Shape3>> Shapes(const CnnOptions& options);

  // REQUIRES: Shapes(options) is OK.
  explicit Cnn(CnnOptions options);

  std::string spec() const override { return options_.spec; }
  const Layout& layout() const override { return layout_; }
  std::int64_t input_dim() const override { return options_.input.size(); }
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

  // One layer as built: its settings, shapes and parameter tensors (indices
  // into layout(), -1 for none).
  struct Stage {
    CnnLayer layer;
    Shape3 in, out;
    int weight = -1, bias = -1;
  };
  const std::vector<Stage>& stages() const { return stages_; }
  const CnnOptions& options() const { return options_; }

 private:
  CnnOptions options_;
  std::vector<Stage> stages_;  // the layers, then the classifier
  Layout layout_;
  std::int64_t eval_rows_;  // rows per chunk when evaluating
};

}  // namespace murmur::ml
