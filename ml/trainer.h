// Trainer: mini-batch training of a Model on index lists of a shared Dataset.
//
// Step() is one optimizer step on a given batch (what a simulated node calls
// for each local step); RunEpoch() shuffles the sample list with the stream
// (seed, node, RngPurpose::kBatch) forked by the epoch number and runs Step()
// on consecutive batches, so an epoch's order depends only on (seed, node,
// epoch). The learning rate of each step comes from the schedule evaluated at
// the optimizer's step count. The Trainer owns the gradient buffer, the
// shuffled order and the model workspace: after the first step nothing is
// allocated.
//
// Thread-safety: one Trainer per node or task; `model`, `optimizer` and
// `pool` must outlive it. The pool (optional) splits each batch by chunks
// (see Model::LossAndGradient); results do not depend on its size.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/param_vector.h"
#include "core/thread_pool.h"
#include "ml/model.h"
#include "ml/optimizer.h"
#include "ml/schedule.h"

namespace murmur::ml {

struct TrainerOptions {
  std::int64_t batch_size = 64;
  bool drop_last = false;  // skip a final batch smaller than batch_size
  std::uint64_t seed = 1;
  std::uint64_t node = 0;
};

struct EpochStats {
  double mean_loss = 0;  // mean of the batch losses
  std::int64_t samples = 0;
  std::int64_t steps = 0;
};

class Trainer {
 public:
  Trainer(const Model& model, Optimizer& optimizer, LrSchedule schedule, TrainerOptions options,
          ThreadPool* pool = nullptr);

  // Gradient on `batch`, then one optimizer step. Returns the batch loss.
  // REQUIRES: params shaped by model.layout(); batch non-empty.
  double Step(ParamVector& params, const Dataset& data, std::span<const SampleIndex> batch);

  // One shuffled pass over `samples`; on_batch(batch number, loss) after each step.
  EpochStats RunEpoch(ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                      std::int64_t epoch, const std::function<void(std::int64_t, double)>& on_batch = {});

  // Steps RunEpoch takes over `num_samples` samples.
  std::int64_t BatchesPerEpoch(std::int64_t num_samples) const;

  ModelWorkspace& workspace() { return *workspace_; }
  const TrainerOptions& options() const { return options_; }
  double last_lr() const { return last_lr_; }

 private:
  const Model& model_;
  Optimizer& optimizer_;
  LrSchedule schedule_;
  TrainerOptions options_;
  ThreadPool* pool_;
  std::unique_ptr<ModelWorkspace> workspace_;
  ParamVector grad_;
  std::vector<SampleIndex> order_;
  double last_lr_ = 0;
};

}  // namespace murmur::ml
