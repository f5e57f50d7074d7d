#include "ml/trainer.h"

#include <algorithm>

#include "core/rng.h"

namespace murmur::ml {

Trainer::Trainer(const Model& model, Optimizer& optimizer, LrSchedule schedule, TrainerOptions options,
                 ThreadPool* pool)
    : model_(model),
      optimizer_(optimizer),
      schedule_(schedule),
      options_(options),
      pool_(pool),
      workspace_(model.NewWorkspace()),
      grad_(model.layout()) {
  MURMUR_CHECK(options_.batch_size > 0);
}

double Trainer::Step(ParamVector& params, const Dataset& data, std::span<const SampleIndex> batch) {
  const std::uint64_t noise = Rng(options_.seed, options_.node, RngPurpose::kDropout)
                                  .Fork(static_cast<std::uint64_t>(optimizer_.steps()))
                                  .NextU64();
  double loss = model_.LossAndGradient(params, data, batch, grad_, *workspace_, pool_, noise);
  last_lr_ = schedule_(optimizer_.steps());
  optimizer_.Step(params, grad_, last_lr_);
  return loss;
}

std::int64_t Trainer::BatchesPerEpoch(std::int64_t n) const {
  std::int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

EpochStats Trainer::RunEpoch(ParamVector& params, const Dataset& data, std::span<const SampleIndex> samples,
                             std::int64_t epoch, const std::function<void(std::int64_t, double)>& on_batch) {
  order_.assign(samples.begin(), samples.end());
  Rng rng = Rng(options_.seed, options_.node, RngPurpose::kBatch).Fork(static_cast<std::uint64_t>(epoch));
  rng.Shuffle(std::span<SampleIndex>(order_));
  EpochStats stats;
  const std::size_t b = static_cast<std::size_t>(options_.batch_size);
  const std::int64_t batches = BatchesPerEpoch(static_cast<std::int64_t>(order_.size()));
  double loss_sum = 0;
  for (std::int64_t k = 0; k < batches; ++k) {
    std::size_t begin = static_cast<std::size_t>(k) * b;
    std::size_t end = std::min(order_.size(), begin + b);
    double loss = Step(params, data, std::span<const SampleIndex>(order_).subspan(begin, end - begin));
    loss_sum += loss;
    stats.samples += static_cast<std::int64_t>(end - begin);
    ++stats.steps;
    if (on_batch) on_batch(k, loss);
  }
  stats.mean_loss = stats.steps > 0 ? loss_sum / static_cast<double>(stats.steps) : 0;
  return stats;
}

}  // namespace murmur::ml
