// ModelLearner: gossip::LocalLearner for the daemon, backed by an ml::Model,
// the node's shard of a dataset and plain SGD.
//
// It takes the same steps as the simulator's learner (sim/ml_learner.h): the
// node's sample list is shuffled with Rng(seed, node, kBatch) at the start of
// each epoch and walked in batches, and each step is params -= lr * grad. So a
// daemon and a simulated node with the same seed, data and model train alike.
// (node/ may not depend on sim/, hence this small twin; see docs/daemon.md.)
//
// Thread-safety: Train and Gradient run inside Env::Offload work, never
// concurrently for one learner; the learner owns its workspace and gradient.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/rng.h"
#include "gossip/learner.h"
#include "ml/dataset.h"
#include "ml/model.h"

namespace murmur::node {

class ModelLearner final : public gossip::LocalLearner {
 public:
  // `model` and `train` must outlive the learner. REQUIRES: batch > 0.
  ModelLearner(const ml::Model& model, const ml::Dataset& train, std::span<const ml::SampleIndex> samples,
               int batch, double lr, Rng rng);

  double Train(ParamVector& params, int steps) override;
  double Gradient(const ParamVector& params, ParamVector& grad) override;
  double LearningRate(std::uint64_t) const override { return lr_; }
  double FlopsPerStep() const override;

 private:
  std::span<const ml::SampleIndex> NextBatch();

  const ml::Model& model_;
  const ml::Dataset& train_;
  std::vector<ml::SampleIndex> order_;
  std::size_t cursor_ = 0;
  int batch_;
  double lr_;
  Rng rng_;
  std::unique_ptr<ml::ModelWorkspace> workspace_;
  ParamVector grad_;
};

}  // namespace murmur::node
