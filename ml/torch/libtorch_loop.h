// LibTorchLoopRate: a plain LibTorch training loop over a TorchScript module,
// the peer that `murmur bench torchscript` measures murmur's TorchScript
// learner against (docs/benchmarks.md). It is what a PyTorch user writes in
// C++: module.train(); per batch, zero the gradients, forward,
// cross-entropy, backward, p -= lr * grad, with one LibTorch thread. The
// batch is converted from the Dataset the way murmur's is (Dataset::Gather),
// so both sides do the same input work.
//
// Thread-safety: a free function; it loads its own module.
#pragma once

#include <string_view>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

// Training samples per second of the module of `spec` ("torchscript:FILE")
// under SGD with `lr` on consecutive batches of `data`, measured for about
// `seconds` after one warm-up pass. REQUIRES: batch >= 1, data non-empty.
// Errors: those of LoadTorchScriptModel, and murmur built without LibTorch.
Result<double> LibTorchLoopRate(std::string_view spec, const Dataset& data, int batch, double lr,
                                double seconds);

}  // namespace murmur::ml
