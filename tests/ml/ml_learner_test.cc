// MlLearner: local SGD steps take the step size of the node's schedule.
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <numeric>

#include "ml/ml_learner.h"
#include "ml/mlp.h"
#include "ml/synthetic.h"

namespace murmur::ml {

TEST_CASE("MlLearner step t moves the model by schedule(t) times the batch gradient") {
  BlobsOptions bo;
  bo.num_samples = 200;
  bo.dim = 5;
  Dataset data = MakeGaussianBlobs(bo);
  Mlp model(MlpOptions{bo.dim, {8}, bo.num_classes, 0, 16});
  std::vector<SampleIndex> mine(100);
  std::iota(mine.begin(), mine.end(), SampleIndex{0});
  MlLearnerOptions o;
  o.batch = 16;
  o.lr = 0.1;
  o.schedule.kind = ScheduleKind::kStep;
  o.schedule.lr = 7;  // ignored: o.lr is the base rate
  o.schedule.step_size = 2;
  o.schedule.gamma = 0.5;
  // Twins with one random stream: `stepper` trains, `probe` only computes the
  // same batches' gradients, so stepper's step must be x - lr_t g exactly.
  MlLearner stepper(model, data, mine, o, Rng(3, 1, RngPurpose::kBatch));
  MlLearner probe(model, data, mine, o, Rng(3, 1, RngPurpose::kBatch));
  ParamVector x(model.layout());
  Rng init(3, 0, RngPurpose::kInit);
  model.InitParams(x, init);
  ParamVector g(model.layout());
  const double expected_lr[] = {0.1, 0.1, 0.05, 0.05, 0.025};
  for (int t = 0; t < 5; ++t) {
    CAPTURE(t);
    CHECK(probe.LearningRate(static_cast<std::uint64_t>(t)) == doctest::Approx(expected_lr[t]));
    ParamVector expected = x.Clone();
    probe.Gradient(x, g);
    expected.vec() -= static_cast<float>(expected_lr[t]) * g.vec();
    stepper.Train(x, 1);
    float worst = (x.vec() - expected.vec()).cwiseAbs().maxCoeff();
    CHECK(worst == 0.0f);
  }
  CHECK(stepper.steps() == 5);
}

TEST_CASE("MlLearner cosine rate: lr at step 0, the midpoint at T/2, lr_min at T") {
  BlobsOptions bo;
  bo.num_samples = 10;
  bo.dim = 2;
  Dataset data = MakeGaussianBlobs(bo);
  Mlp model(MlpOptions{bo.dim, {}, bo.num_classes, 0, 4});
  MlLearnerOptions o;
  o.lr = 0.2;
  o.schedule.kind = ScheduleKind::kCosine;
  o.schedule.total_steps = 100;
  o.schedule.min_lr = 0.02;
  std::vector<SampleIndex> mine{0, 1, 2};
  MlLearner l(model, data, mine, o, Rng(1, 0, RngPurpose::kBatch));
  CHECK(l.LearningRate(0) == doctest::Approx(0.2));
  CHECK(l.LearningRate(50) == doctest::Approx(0.11));
  CHECK(l.LearningRate(100) == doctest::Approx(0.02));
  CHECK(l.LearningRate(25) == doctest::Approx(0.02 + 0.18 * (1 + std::cos(std::numbers::pi / 4)) / 2));
}

}  // namespace murmur::ml
