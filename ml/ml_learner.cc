#include "ml/ml_learner.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/check.h"
#include "ml/optimizer.h"

namespace murmur::ml {

namespace {
ScheduleOptions WithBaseRate(ScheduleOptions s, double lr) {
  s.lr = lr;
  return s;
}
}  // namespace

ThreadScratch& ScratchFor(const Model& model) {
  // Keyed by address, so a model freed and another built at the same address
  // (one test after another on one thread) must not get the old one's
  // buffers: the entry remembers the architecture it was made for.
  struct Entry {
    ThreadScratch scratch;
    std::string spec;
    std::int64_t input_dim = 0;
    int num_classes = 0;
  };
  thread_local std::map<const Model*, Entry> entries;
  Entry& e = entries[&model];
  if (!e.scratch.workspace || e.spec != model.spec() || e.input_dim != model.input_dim() ||
      e.num_classes != model.num_classes()) {
    e.scratch.workspace = model.NewWorkspace();
    e.scratch.grad = ParamVector(model.layout());
    e.spec = model.spec();
    e.input_dim = model.input_dim();
    e.num_classes = model.num_classes();
  }
  return e.scratch;
}

MlLearner::MlLearner(const Model& model, const Dataset& train, std::span<const SampleIndex> samples,
                     MlLearnerOptions options, Rng rng)
    : model_(model),
      train_(train),
      order_(samples.begin(), samples.end()),
      options_(options),
      schedule_(WithBaseRate(options.schedule, options.lr)),
      rng_(rng),
      noise_(rng.Fork(static_cast<std::uint64_t>(RngPurpose::kDropout))) {
  MURMUR_CHECK(options_.batch > 0);
  rng_.Shuffle(std::span<SampleIndex>(order_));
}

double MlLearner::FlopsPerStep() const {
  auto b = std::min<std::size_t>(static_cast<std::size_t>(options_.batch),
                                 std::max<std::size_t>(order_.size(), 1));
  return model_.FlopsPerSample() * static_cast<double>(b);
}

// The next `batch` samples of the node's shuffled order; a new shuffle at
// each epoch's end. A node with fewer samples than a batch uses all of them.
std::span<const SampleIndex> MlLearner::NextBatch() {
  const std::size_t b = std::min<std::size_t>(static_cast<std::size_t>(options_.batch), order_.size());
  if (cursor_ + b > order_.size()) {
    rng_.Shuffle(std::span<SampleIndex>(order_));
    cursor_ = 0;
  }
  std::span<const SampleIndex> batch(order_.data() + cursor_, b);
  cursor_ += b;
  ++batches_;
  return batch;
}

Status MlLearner::RestoreState(const MlLearnerState& state) {
  if (batches_ != 0) return Status::InvalidArgument("learner state: this learner has drawn batches already");
  const std::size_t n = model_.layout().total_size();
  for (const auto& [name, v] : {std::pair{"velocity", &state.velocity}, std::pair{"adam_m", &state.adam_m},
                                std::pair{"adam_v", &state.adam_v}}) {
    if (!v->empty() && v->size() != n)
      return Status::InvalidArgument(std::string("learner state: ") + name + " has " +
                                     std::to_string(v->size()) + " elements, the model has " +
                                     std::to_string(n));
  }
  if (state.adam_m.size() != state.adam_v.size())
    return Status::InvalidArgument("learner state: adam_m and adam_v differ in size");
  for (std::uint64_t i = 0; i < state.batches; ++i) NextBatch();
  steps_ = state.steps;
  velocity_ = state.velocity;
  adam_m_ = state.adam_m;
  adam_v_ = state.adam_v;
  return Status::Ok();
}

double MlLearner::Gradient(const ParamVector& params, ParamVector& grad) {
  if (order_.empty()) {
    grad.SetZero();
    return 0;
  }
  ThreadScratch& s = ScratchFor(model_);
  // The batch's noise seed (dropout masks) follows from the node's stream and
  // the batch number, so a restored learner draws the same masks.
  const std::uint64_t noise = noise_.Fork(batches_).NextU64();
  double loss = model_.LossAndGradient(params, train_, NextBatch(), grad, *s.workspace, nullptr, noise);
  // AdamW decays the weights in its step instead.
  if (options_.weight_decay > 0 && !options_.adamw)
    grad.vec() += static_cast<float>(options_.weight_decay) * params.vec();
  return loss;
}

double MlLearner::Train(ParamVector& params, int steps) {
  if (order_.empty() || steps <= 0) return 0;
  ThreadScratch& s = ScratchFor(model_);
  AdamOptions adamw;
  adamw.beta1 = options_.beta1;
  adamw.beta2 = options_.beta2;
  adamw.epsilon = options_.epsilon;
  adamw.weight_decay = options_.weight_decay;
  adamw.decoupled = true;
  double total = 0;
  for (int k = 0; k < steps; ++k) {
    const auto lr = static_cast<float>(LearningRate(steps_));
    total += Gradient(params, s.grad);
    if (options_.adamw) {
      if (adam_m_.empty()) {
        adam_m_.assign(params.size(), 0.0f);
        adam_v_.assign(params.size(), 0.0f);
      }
      AdamUpdate(params.span(), s.grad.span(), adam_m_, adam_v_, static_cast<std::int64_t>(steps_) + 1, lr,
                 adamw);
    } else if (options_.momentum > 0) {
      if (velocity_.empty()) velocity_.assign(params.size(), 0.0f);
      Eigen::Map<Eigen::VectorXf> v(velocity_.data(), static_cast<Eigen::Index>(velocity_.size()));
      v = static_cast<float>(options_.momentum) * v + s.grad.vec();
      params.vec() -= lr * v;
    } else {
      params.vec() -= lr * s.grad.vec();
    }
    ++steps_;
  }
  return total / steps;
}

}  // namespace murmur::ml
