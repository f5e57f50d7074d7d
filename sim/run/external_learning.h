// ExternalLearning: a simulation whose nodes train with the caller's
// learners instead of ml::MlLearner on the spec's model. murmur's Python
// package runs learners written in Python this way (python/learner.cc);
// everything else about the run (world, topology, devices, churn,
// compression, algorithms, federated strategies, metrics) is the spec's.
//
// The caller makes one LocalLearner per learning node from the node's share
// of the spec's dataset and partition. Every node starts from `initial`
// (empty: the spec model's initialization, whose layout the learners then
// share), and `evaluate` measures a model on test samples (null: the spec's
// model does, which needs the learners to use its layout).
//
// Thread-safety: with `concurrent` false, every learner call (Train,
// Gradient) and every `evaluate` call is made from the simulation's thread,
// one at a time, in an order that depends only on the scenario; with it
// true, learners run on the simulator's worker pool like murmur's own.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "core/env.h"
#include "core/learner.h"
#include "core/param_vector.h"
#include "core/status.h"
#include "engine/plan.h"
#include "ml/dataset.h"
#include "ml/ml_learner.h"
#include "ml/model.h"
#include "proto/job_spec.pb.h"

namespace murmur::sim {

class Evaluator;
struct World;

// What one node's learner is made from. The references live as long as the run.
struct NodeShare {
  NodeId node = 0;
  std::span<const ml::SampleIndex> samples;  // the node's partition of `train`
  const ml::Dataset* train = nullptr;
  ml::MlLearnerOptions options;  // the spec's batch, lr, momentum, weight decay and schedule
  double flops_per_step = 0;     // one local step of the spec's model at the spec's batch
  std::uint64_t seed = 0;        // the run's seed
};

struct ExternalLearning {
  // Node `share.node`'s learner, for each learning node in id order before
  // the first event. An error stops the run before it starts.
  std::function<Result<std::unique_ptr<LocalLearner>>(const NodeShare& share)> make_learner;
  // Every node's first model; empty: the spec model's initialization.
  ParamVector initial;
  // Accuracy and mean loss of `params` on samples `samples` of `test`; null:
  // the spec's model measures them.
  std::function<ml::Evaluation(const ParamVector& params, const ml::Dataset& test,
                               std::span<const ml::SampleIndex> samples)>
      evaluate;
  bool concurrent = false;
};

// What both runners (gossip and federated) do with a run's learning: the
// world takes the caller's first model, each node gets its learner, and the
// evaluator measures with the caller's function. `external` may be null
// (murmur's own learners), and then these are what a run always did.

// With `external`: checks that the spec's model can measure the caller's
// models when no `evaluate` is given, and that no label-flip attacker needs
// murmur's own data; then makes external->initial (if any) the world's first
// model, shaped by the spec model's layout when it has the spec model's size.
Status AdoptLearning(const ExternalLearning* external, const engine::JobPlan& plan, World& world);

// Node `node`'s learner, training on `samples` of `train`: the caller's
// (external), or murmur's own from the plan (engine::MakeLearner).
Result<std::unique_ptr<LocalLearner>> MakeNodeLearner(const ExternalLearning* external, const World& world,
                                                      const engine::JobPlan& plan, NodeId node,
                                                      const ml::Dataset& train,
                                                      std::span<const ml::SampleIndex> samples);

// The run's evaluator (see sim/run/evaluator.h for the arguments).
std::unique_ptr<Evaluator> MakeEvaluator(const ExternalLearning* external, const World& world,
                                         std::size_t eval_nodes, std::size_t eval_samples, std::uint64_t seed,
                                         ThreadPool& pool);

}  // namespace murmur::sim
