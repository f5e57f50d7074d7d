// TorchScript models: any PyTorch module that a user saved with
// torch.jit.script(module).save("FILE.pt") (or torch.jit.trace), trained by
// murmur as an ml::Model, through LibTorch (an optional dependency).
//
// Spec: "torchscript:FILE.pt" (FILE relative to the working directory, or
// absolute). The model's Layout lists the module's named parameters, in
// named_parameters() order with their names and shapes, then its
// floating-point buffers (BatchNorm's running_mean and running_var) under
// "buffer:" + name. Buffers are shared: they are averaged with the
// parameters like any other tensor of the ParamVector; their gradient is
// zero, and a training step writes the values that the module's forward pass
// gave them (BatchNorm's running averages) into the buffer tensors of the
// `params` it was given, as PyTorch does in place. Integer buffers
// (num_batches_tracked) stay in each thread's copy of the module; they only
// matter for BatchNorm(momentum=None).
//
// Loss: when forward takes one input, forward(x) returns the logits [B,
// classes] and the loss is their mean cross-entropy. When forward takes two,
// forward(x, y) (y: int64 labels [B]) returns the mean loss itself, for
// anything that is not plain classification; such a model has no
// predictions: its Evaluate reports the loss and accuracy 0, and Predict
// writes -1.
//
// Initial values: InitParams writes the module's saved parameter and buffer
// values (the user's initialization is kept), not a random draw.
//
// Threads: every method is const and thread-safe. Each ModelWorkspace (one
// per thread) holds its own clone of the module whose parameters are
// re-pointed, without copies, at the ParamVector of each call (from_blob
// views), with their .grad() views into the gradient vector, so backward
// writes the gradient in place. LibTorch runs one intra-op thread on every
// thread that calls it; the ThreadPool argument is not used: a batch runs
// whole on the calling thread (BatchNorm sees the whole batch), so results do
// not depend on the pool's size. Modules that draw random numbers (dropout; found in their methods' graphs
// or by two training passes under two seeds at load) draw from LibTorch's
// one global generator; murmur reseeds it on each training step from a hash
// of the batch's values and labels and the parameters, under a
// process-wide lock, so masks are a function of the step's inputs (each
// node's batches come from its own stream): a simulation gives the same
// result for any number of threads, and murmurd's daemons the simulator's.
// Such steps run one at a time.
//
// These functions are in every program; LibTorch is not: the first call
// opens the TorchScript plugin (ml/torch/torch_plugin.h), so a process that
// never asks for a TorchScript model never loads LibTorch. Without LibTorch
// (cmake -DMURMUR_TORCH=OFF, or AUTO without libtorch-dev) each returns an
// error that says how to get it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "ml/model.h"
#include "ml/model_spec.h"

namespace murmur::ml {

inline constexpr std::string_view kTorchScriptPrefix = "torchscript:";
// The largest model file murmur reads: kMaxParams float32 values and room for the code.
inline constexpr std::size_t kMaxTorchScriptFileBytes =
    static_cast<std::size_t>(kMaxParams) * 4 + (64u << 20);

// True when `spec` names a TorchScript model ("torchscript:...").
bool IsTorchScriptSpec(std::string_view spec);

// The file named by a "torchscript:FILE" spec, or InvalidArgument when the
// spec is not one or names no file.
Result<std::string> TorchScriptPath(std::string_view spec);

// True when murmur was built with LibTorch.
bool TorchScriptAvailable();

// Loads the module of `spec` ("torchscript:FILE.pt") for samples of
// `sample_shape` and `num_classes` classes. It runs forward once, in eval
// mode, on a batch of two zero samples and checks the output: logits [2,
// num_classes] (one-input forward) or a scalar loss (forward(x, y)). Errors
// name the file: missing, not a TorchScript archive, no forward method,
// wrong output shape, no parameters, too many parameters, or murmur built
// without LibTorch.
Result<std::unique_ptr<Model>> LoadTorchScriptModel(std::string_view spec,
                                                    std::span<const std::int64_t> sample_shape,
                                                    int num_classes);

// Checks that the file of `spec` loads as a TorchScript module, without the
// data's shape (for a command that checks its flags before reading data).
Status CheckTorchScriptModel(std::string_view spec);

}  // namespace murmur::ml
