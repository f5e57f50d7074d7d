#include "sim/run/external_learning.h"

#include <algorithm>

#include "engine/node_kit.h"
#include "sim/run/evaluator.h"
#include "sim/run/world.h"

namespace murmur::sim {

Status AdoptLearning(const ExternalLearning* external, const engine::JobPlan& plan, World& world) {
  const proto::JobSpec& spec = plan.spec();
  if (external == nullptr) return Status::Ok();
  if (!external->make_learner) return Status::InvalidArgument("external learning without a learner factory");
  const std::size_t native = world.model->layout().total_size();
  if (!external->initial.empty()) {
    if (!external->evaluate && external->initial.size() != native) {
      return Status::InvalidArgument("the learners' model has " + std::to_string(external->initial.size()) +
                                     " parameters and the spec's model '" + spec.model() + "' " +
                                     std::to_string(native) +
                                     ": the spec's model cannot measure it, so an evaluation is needed");
    }
    if (external->initial.size() == native) {  // the spec model's tensors, so that it can measure it
      ParamVector initial(world.model->layout());
      std::copy(external->initial.span().begin(), external->initial.span().end(), initial.span().begin());
      world.initial = std::move(initial);
    } else {
      world.initial = external->initial.Clone();
    }
  }
  const bool flips =
      plan.federated() && plan.fed().attack == federated::AttackKind::kLabelFlip &&
      std::find(plan.fed().attackers.begin(), plan.fed().attackers.end(), true) != plan.fed().attackers.end();
  if (flips)
    return Status::InvalidArgument(
        "spec field 'attack': label-flip attackers train on murmur's flipped copy of the data, which the "
        "caller's learners do not read");
  return Status::Ok();
}

Result<std::unique_ptr<LocalLearner>> MakeNodeLearner(const ExternalLearning* external, const World& world,
                                                      const engine::JobPlan& plan, NodeId node,
                                                      const ml::Dataset& train,
                                                      std::span<const ml::SampleIndex> samples) {
  if (external == nullptr)
    return std::unique_ptr<LocalLearner>(engine::MakeLearner(plan, *world.model, train, samples, node));
  const ml::MlLearnerOptions& options = plan.learner();
  NodeShare share;
  share.node = node;
  share.samples = samples;
  share.train = &train;
  share.options = options;
  // As ml::MlLearner counts a step: a batch, or the whole partition when it is smaller.
  const auto batch = std::min<std::size_t>(static_cast<std::size_t>(options.batch),
                                           std::max<std::size_t>(samples.size(), 1));
  share.flops_per_step = world.model->FlopsPerSample() * static_cast<double>(batch);
  share.seed = plan.spec().seed();
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<LocalLearner> learner, external->make_learner(share));
  if (learner == nullptr)
    return Status::InvalidArgument("the learner factory made no learner for node " + std::to_string(node));
  return learner;
}

std::unique_ptr<Evaluator> MakeEvaluator(const ExternalLearning* external, const World& world,
                                         std::size_t eval_nodes, std::size_t eval_samples, std::uint64_t seed,
                                         ThreadPool& pool) {
  const ml::Dataset& test = world.data.test;
  if (external == nullptr || !external->evaluate) {
    return std::make_unique<Evaluator>(*world.model, test, eval_nodes, eval_samples, seed, pool);
  }
  auto measure = [external, &test](const ParamVector& params, std::span<const ml::SampleIndex> samples,
                                   ThreadPool*) { return external->evaluate(params, test, samples); };
  return std::make_unique<Evaluator>(measure, world.initial.layout(), external->concurrent, test, eval_nodes,
                                     eval_samples, seed, pool);
}

}  // namespace murmur::sim
