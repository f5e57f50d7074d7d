// Trainer: epochs cover each sample once, and training is reproducible bit
// for bit for a seed, whatever the number of threads.
#include <doctest/doctest.h>

#include <algorithm>

#include "ml/mlp.h"
#include "ml/optimizer.h"
#include "ml/synthetic.h"
#include "ml/trainer.h"

namespace murmur::ml {
namespace {

ParamVector Train(const Model& model, const Dataset& data, int threads, std::uint64_t seed) {
  ParamVector params(model.layout());
  Rng init(seed, 0, RngPurpose::kInit);
  model.InitParams(params, init);
  Adam adam(params.size(), AdamOptions{});
  ThreadPool pool(threads);
  ScheduleOptions s{ScheduleKind::kCosine, 0.01};
  s.total_steps = 40;
  s.warmup_steps = 5;
  Trainer trainer(model, adam, LrSchedule(s), TrainerOptions{50, false, seed, 0}, &pool);
  std::vector<SampleIndex> all = AllIndices(data);
  for (int e = 0; e < 2; ++e) trainer.RunEpoch(params, data, all, e);
  return params;
}

}  // namespace

TEST_CASE("training is bit-identical across thread counts and differs across seeds") {
  BlobsOptions o;
  o.num_samples = 1000;
  o.dim = 12;
  Dataset data = MakeGaussianBlobs(o);
  Mlp model(MlpOptions{o.dim, {16}, o.num_classes, 0, 16});
  ParamVector a = Train(model, data, 1, 1);
  ParamVector b = Train(model, data, 2, 1);
  ParamVector c = Train(model, data, 4, 1);
  ParamVector d = Train(model, data, 1, 2);
  CHECK(std::equal(a.data(), a.data() + a.size(), b.data()));
  CHECK(std::equal(a.data(), a.data() + a.size(), c.data()));
  CHECK_FALSE(std::equal(a.data(), a.data() + a.size(), d.data()));
}

TEST_CASE("an epoch visits each sample once, in batches, with the last one short") {
  BlobsOptions o;
  o.num_samples = 230;
  o.dim = 3;
  Dataset data = MakeGaussianBlobs(o);
  Mlp model(MlpOptions{o.dim, {}, o.num_classes, 0, 32});
  ParamVector params(model.layout());
  Sgd sgd(params.size(), SgdOptions{});
  Trainer trainer(model, sgd, LrSchedule(ScheduleOptions{ScheduleKind::kConstant, 0.1}),
                  TrainerOptions{64, false, 1, 0});
  std::vector<SampleIndex> half;
  for (SampleIndex i = 0; i < 230; i += 2) half.push_back(i);  // 115 samples
  CHECK(trainer.BatchesPerEpoch(115) == 2);
  std::int64_t calls = 0;
  EpochStats st =
      trainer.RunEpoch(params, data, half, 0, [&](std::int64_t k, double) { CHECK(k == calls++); });
  CHECK(st.steps == 2);
  CHECK(st.samples == 115);
  CHECK(sgd.steps() == 2);
  Trainer dropping(model, sgd, LrSchedule(ScheduleOptions{}), TrainerOptions{64, true, 1, 0});
  CHECK(dropping.BatchesPerEpoch(115) == 1);
}

}  // namespace murmur::ml
