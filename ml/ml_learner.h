// MlLearner: a LocalLearner (core/learner.h) backed by a Model and one node's data.
//
// Each node walks its own partition in epochs, reshuffled from its own stream
// (seed, node, kBatch), and takes plain or heavy-ball SGD steps, or AdamW
// steps whose moments stay with the node from round to round (DiLoCo's inner
// optimizer). The step size
// of the node's t-th local step is schedule(t) (ml/schedule.h: constant, step
// or cosine), counted over the node's own steps, so that every node of a
// synchronous run decays at the same pace. Scratch
// memory (the model workspace and the gradient buffer) belongs to the worker
// thread, not the node, so 100,000 nodes cost only their index lists, their
// models and (with momentum) their velocity or (with AdamW) their moments.
//
// Thread-safety: one learner is used by one task at a time; different learners
// run concurrently (the model and dataset are shared read-only).
#pragma once

#include <memory>
#include <vector>

#include "core/learner.h"
#include "core/status.h"
#include "ml/dataset.h"
#include "ml/model.h"
#include "ml/schedule.h"

namespace murmur::ml {

struct MlLearnerOptions {
  int batch = 32;
  double lr = 0.1;          // the base rate: schedule.lr is ignored and this used instead
  double momentum = 0;      // SGD's heavy-ball momentum
  double weight_decay = 0;  // SGD: L2 added to the gradient; AdamW: decoupled, x -= lr wd x
  // AdamW (ml/optimizer.h, Loshchilov and Hutter 2019) instead of SGD, with
  // these decays and epsilon; its step number is the learner's step count.
  bool adamw = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  // Kind, horizon (total_steps, in local steps) and decay of the step size;
  // the default is a constant rate.
  ScheduleOptions schedule;
};

// What a learner carries from step to step, for a checkpoint: how many
// mini-batches it has drawn (its shuffles follow from that and its seed),
// its step count (the schedule's position) and its momentum buffer.
struct MlLearnerState {
  std::uint64_t batches = 0;
  std::uint64_t steps = 0;
  std::vector<float> velocity;  // empty when momentum is off or no step was taken
  std::vector<float> adam_m;    // AdamW's moments; empty without AdamW or before its first step
  std::vector<float> adam_v;
};

class MlLearner final : public LocalLearner {
 public:
  // `model` and `train` must outlive the learner; `samples` is the node's partition.
  MlLearner(const Model& model, const Dataset& train, std::span<const SampleIndex> samples,
            MlLearnerOptions options, Rng rng);

  double Train(ParamVector& params, int steps) override;
  double Gradient(const ParamVector& params, ParamVector& grad) override;
  // schedule(step): the rate of the node's local step number `step`.
  double LearningRate(std::uint64_t step) const override {
    return schedule_(static_cast<std::int64_t>(step));
  }
  double FlopsPerStep() const override;
  std::uint64_t steps() const { return steps_; }

  MlLearnerState ExportState() const { return {batches_, steps_, velocity_, adam_m_, adam_v_}; }
  // Brings a fresh learner (same model, data, samples, options and seed, no
  // batch drawn yet) to `state` by drawing its batches again, so that it goes
  // on exactly as the exported one would. InvalidArgument when the velocity
  // or the moments do not fit the model or this learner has drawn batches already.
  Status RestoreState(const MlLearnerState& state);

 private:
  std::span<const SampleIndex> NextBatch();

  const Model& model_;
  const Dataset& train_;
  std::vector<SampleIndex> order_;
  std::size_t cursor_ = 0;
  MlLearnerOptions options_;
  LrSchedule schedule_;
  Rng rng_;
  Rng noise_;                    // keys each batch's training noise (Model::LossAndGradient's noise_seed)
  std::vector<float> velocity_;  // heavy-ball momentum, sized on first use
  std::vector<float> adam_m_, adam_v_;  // AdamW's moments, sized on first use
  std::uint64_t steps_ = 0;
  std::uint64_t batches_ = 0;  // mini-batches drawn
};

// This thread's scratch for `model`: a workspace and a gradient buffer,
// created on first use and kept for the thread's lifetime.
struct ThreadScratch {
  std::unique_ptr<ModelWorkspace> workspace;
  ParamVector grad;
};
ThreadScratch& ScratchFor(const Model& model);

}  // namespace murmur::ml
