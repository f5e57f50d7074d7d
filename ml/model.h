// Model: a classifier whose parameters live in a ParamVector.
//
// A Model object holds only the architecture (the Layout and sizes), never
// parameters or scratch memory, so one Model serves any number of nodes on
// any number of threads: every method is const and thread-safe. Parameters
// are passed in; scratch memory comes from a ModelWorkspace that the caller
// owns, one per thread of use, sized on first use and then reused, so a
// training step does not allocate. Samples are named by index into a shared
// Dataset and gathered into the workspace.
//
// Implementations: ml/mlp.h (the MLP; with no hidden layer it is softmax
// regression) and ml/cnn.h (convolutional networks). ml/model_spec.h builds
// one from a string like "mlp:256,128" or "cnn-fedavg".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/param_vector.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "ml/dataset.h"

namespace murmur::ml {

// Per-thread scratch memory of a Model; create with Model::NewWorkspace.
class ModelWorkspace {
 public:
  virtual ~ModelWorkspace() = default;
};

struct Evaluation {
  double accuracy = 0;  // fraction of samples whose argmax prediction equals the label
  double loss = 0;      // mean cross-entropy (without the L2 term)
  std::int64_t count = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  // The spec string that builds this model ("softmax", "mlp:256,128").
  virtual std::string spec() const = 0;
  virtual const Layout& layout() const = 0;
  virtual std::int64_t input_dim() const = 0;
  virtual int num_classes() const = 0;
  // Floating-point operations of one training sample, forward and backward
  // (what an Env charges for a step: batch size x this).
  virtual double FlopsPerSample() const = 0;
  // Whether the model computes its own loss from a whole sample and its
  // label (a TorchScript forward(x, y)), rather than predicting the label
  // from the sample; only such a model may train on samples that hold
  // their own targets (byte-level text windows, ml/text.h).
  virtual bool ReturnsOwnLoss() const { return false; }

  virtual std::unique_ptr<ModelWorkspace> NewWorkspace() const = 0;

  // Fills `params` with a fresh random initialization.
  // REQUIRES: params.size() == layout().total_size().
  virtual void InitParams(ParamVector& params, Rng& rng) const = 0;

  // Mean cross-entropy over `batch` (plus the model's L2 term) and its
  // gradient, written to `grad`. With a pool, the batch is split into fixed
  // chunks whose gradients are summed in chunk order: the result is bit for
  // bit the same for any number of threads. `noise_seed` keys the step's
  // training randomness (dropout masks) so that it too is the same for any
  // thread count; callers pass a fresh value per step.
  // REQUIRES: batch non-empty, indices < data.num_samples, data.dim ==
  // input_dim(), labels < num_classes(), grad.size() == params.size() ==
  // layout().total_size(), `ws` from this model's NewWorkspace.
  virtual double LossAndGradient(const ParamVector& params, const Dataset& data,
                                 std::span<const SampleIndex> batch, ParamVector& grad, ModelWorkspace& ws,
                                 ThreadPool* pool = nullptr, std::uint64_t noise_seed = 0) const = 0;

  // Writes the most likely class of each sample to out[i]. REQUIRES: out.size() == samples.size().
  virtual void Predict(const ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                       std::span<std::int32_t> out, ModelWorkspace& ws, ThreadPool* pool = nullptr) const = 0;

  // Accuracy and mean loss over `samples`.
  virtual Evaluation Evaluate(const ParamVector& params, const Dataset& data,
                              std::span<const SampleIndex> samples, ModelWorkspace& ws,
                              ThreadPool* pool = nullptr) const = 0;
  // Accuracy and mean loss over the whole dataset.
  Evaluation Evaluate(const ParamVector& params, const Dataset& data, ModelWorkspace& ws,
                      ThreadPool* pool = nullptr) const {
    std::vector<SampleIndex> all = AllIndices(data);
    return Evaluate(params, data, all, ws, pool);
  }
};

}  // namespace murmur::ml
