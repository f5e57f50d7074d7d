// The model factory of every caller that builds a model from a spec string
// (the simulator, murmurd's jobs, murmur train): the one place that knows
// both ml's native models (ml/model_spec.h: softmax, mlp:..., the CNNs) and
// TorchScript modules (ml/torch/torchscript_model.h, "torchscript:FILE.pt").
// ml cannot route "torchscript:" itself: ml/torch depends on ml.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <string>

#include "core/status.h"
#include "ml/dataset.h"
#include "ml/model.h"
#include "ml/model_spec.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine {

// The model named by `spec` for samples of `sample_shape` and `num_classes`
// classes, or an error naming what is wrong (see ml::MakeModel and
// ml::LoadTorchScriptModel).
Result<std::unique_ptr<ml::Model>> MakeModel(std::string_view spec,
                                             std::span<const std::int64_t> sample_shape, int num_classes,
                                             const ml::ModelSpecOptions& options = {});

// The model of a job: spec.model() for the data's sample shape and classes.
// A TorchScript file named by a relative path is looked up in `model_dir`
// when that is not empty (a daemon's data directory). When the spec has a
// model_blake2b, the file's BLAKE2b-512 must equal it, or FailedPrecondition
// names the file and both hashes; `require_hash` makes the field mandatory
// for TorchScript models (murmurd: every daemon must train the same file).
// With `artifact_dir` (a daemon's artifact store), a file there named by the
// model_blake2b is used before the relative path is looked up.
Result<std::unique_ptr<ml::Model>> MakeJobModel(const proto::JobSpec& spec,
                                                std::span<const std::int64_t> sample_shape, int num_classes,
                                                const std::string& model_dir, bool require_hash,
                                                const std::string& artifact_dir = "");

// OK when `model` can train on `train`; otherwise InvalidArgument saying
// why: byte-level text windows hold their own target as their last byte,
// so a model that reads the sample and predicts its label would read the
// answer; only a model that returns its own loss (Model::ReturnsOwnLoss)
// trains on them.
Status CheckModelForData(const ml::Model& model, const ml::Dataset& train);

// Lowercase hex of the BLAKE2b-512 of the file at `path` (what `b2sum` prints).
Result<std::string> ModelFileBlake2b(const std::string& path);

// Checks `spec` before any data is read: a native spec's syntax and bounds
// (ml::CheckModelSpec); a TorchScript file must load.
Status CheckModelSpec(std::string_view spec);

}  // namespace murmur::engine
