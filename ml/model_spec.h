// Model specs: the strings that name an architecture on the command line and
// in configs.
//
//   "softmax"         softmax (multinomial logistic) regression
//   "mlp:256,128"     an MLP with ReLU hidden layers of 256 and 128 units
//   "cnn:..."         a convolutional network (grammar in ml/cnn_spec.h)
//   "cnn-fedavg"      McMahan et al. 2017's CNN; "lenet5" LeNet-5 (ml/cnn_spec.h)
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/status.h"
#include "ml/model.h"

namespace murmur::ml {

// Widest hidden layer and largest parameter count a spec may ask for.
inline constexpr std::int64_t kMaxHiddenWidth = 1 << 16;
inline constexpr std::int64_t kMaxParams = std::int64_t{1} << 28;

struct ModelSpecOptions {
  double l2 = 0;                 // see MlpOptions::l2
  std::int64_t chunk_rows = 32;  // see MlpOptions::chunk_rows
};

// Builds the model named by `spec` for samples of `sample_shape` (a
// Dataset's sample_shape(): channels, height, width for images) and
// `num_classes` classes, or InvalidArgument naming what is wrong with the spec.
Result<std::unique_ptr<Model>> MakeModel(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                         int num_classes, const ModelSpecOptions& options = {});
// OK when `spec` is well formed whatever the data (its syntax and bounds),
// or the error MakeModel would give; for checking flags before data is read.
Status CheckModelSpec(std::string_view spec);

// The same for flat samples of `input_dim` values (shape {input_dim}).
Result<std::unique_ptr<Model>> MakeModel(std::string_view spec, std::int64_t input_dim, int num_classes,
                                         const ModelSpecOptions& options = {});

}  // namespace murmur::ml
