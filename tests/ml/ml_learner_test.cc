// MlLearner: local SGD steps take the step size of the node's schedule; a
// learner restored from an exported state goes on as the original.
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

TEST_CASE("A fresh MlLearner restored from an exported state trains on exactly as the original") {
  BlobsOptions bo;
  bo.num_samples = 100;
  bo.dim = 4;
  Dataset data = MakeGaussianBlobs(bo);
  Mlp model(MlpOptions{bo.dim, {6}, bo.num_classes, 0, 16});
  std::vector<SampleIndex> mine(30);  // 30 samples in batches of 8: a reshuffle every 3 batches
  std::iota(mine.begin(), mine.end(), SampleIndex{0});
  MlLearnerOptions o;
  o.batch = 8;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.weight_decay = 1e-3;
  MlLearner original(model, data, mine, o, Rng(5, 2, RngPurpose::kBatch));
  ParamVector x(model.layout());
  Rng init(5, 0, RngPurpose::kInit);
  model.InitParams(x, init);
  ParamVector g(model.layout());
  original.Train(x, 7);
  original.Gradient(x, g);  // gradients draw batches too
  MlLearnerState state = original.ExportState();
  CHECK(state.batches == 8);
  CHECK(state.steps == 7);
  CHECK(state.velocity.size() == x.size());
  MlLearner restored(model, data, mine, o, Rng(5, 2, RngPurpose::kBatch));
  REQUIRE(restored.RestoreState(state).ok());
  ParamVector y = x.Clone();
  original.Train(x, 5);
  restored.Train(y, 5);
  CHECK((x.vec() - y.vec()).cwiseAbs().maxCoeff() == 0.0f);
  // Without the state, the fresh learner's batches and momentum differ.
  MlLearner fresh(model, data, mine, o, Rng(5, 2, RngPurpose::kBatch));
  ParamVector z = y.Clone();
  fresh.Train(z, 1);
  original.Train(x, 1);
  CHECK((x.vec() - z.vec()).cwiseAbs().maxCoeff() > 0.0f);
  // Only a fresh learner can be restored, and the velocity must fit the model.
  CHECK(restored.RestoreState(state).code() == StatusCode::kInvalidArgument);
  MlLearner other(model, data, mine, o, Rng(5, 2, RngPurpose::kBatch));
  state.velocity.resize(3);
  CHECK(other.RestoreState(state).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("MlLearner's AdamW follows Loshchilov and Hutter's Algorithm 2, written here in double") {
  BlobsOptions bo;
  bo.num_samples = 120;
  bo.dim = 5;
  Dataset data = MakeGaussianBlobs(bo);
  Mlp model(MlpOptions{bo.dim, {8}, bo.num_classes, 0, 16});
  std::vector<SampleIndex> mine(50);
  std::iota(mine.begin(), mine.end(), SampleIndex{0});
  MlLearnerOptions o;
  o.batch = 16;
  o.lr = 0.01;
  o.adamw = true;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.weight_decay = 0.1;
  // Twins: `stepper` trains; `probe` computes the same batches' gradients
  // (without weight decay: AdamW decays the weights in its step).
  MlLearner stepper(model, data, mine, o, Rng(4, 1, RngPurpose::kBatch));
  MlLearner probe(model, data, mine, o, Rng(4, 1, RngPurpose::kBatch));
  ParamVector x(model.layout());
  Rng init(4, 0, RngPurpose::kInit);
  model.InitParams(x, init);
  const std::size_t n = x.size();
  std::vector<double> ref(x.span().begin(), x.span().end()), m(n, 0.0), v(n, 0.0);
  ParamVector g(model.layout());
  double worst = 0;
  for (int t = 1; t <= 12; ++t) {
    probe.Gradient(x, g);
    // Gradients at the learner's float iterate; the reference's own state in double.
    for (std::size_t i = 0; i < n; ++i) {
      const double gi = g.span()[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
      const double m_hat = m[i] / (1 - std::pow(o.beta1, t));
      const double v_hat = v[i] / (1 - std::pow(o.beta2, t));
      ref[i] -= o.lr * (o.weight_decay * ref[i] + m_hat / (std::sqrt(v_hat) + o.epsilon));
    }
    stepper.Train(x, 1);
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(x.span()[i] - ref[i]));
  }
  MESSAGE("largest difference from the double reference over 12 steps: " << worst);
  CHECK(worst < 2e-5);
  // Adam's steps are about lr each: 12 of them move weights by up to 0.12.
  ParamVector start(model.layout());
  Rng again(4, 0, RngPurpose::kInit);
  model.InitParams(start, again);
  CHECK((x.vec() - start.vec()).cwiseAbs().maxCoeff() > 0.05f);

  // Its moments travel with the exported state: a restored twin goes on bit for bit.
  MlLearnerState state = stepper.ExportState();
  CHECK(state.adam_m.size() == n);
  CHECK(state.adam_v.size() == n);
  CHECK(state.velocity.empty());
  MlLearner restored(model, data, mine, o, Rng(4, 1, RngPurpose::kBatch));
  REQUIRE(restored.RestoreState(state).ok());
  ParamVector y = x.Clone();
  stepper.Train(x, 4);
  restored.Train(y, 4);
  CHECK((x.vec() - y.vec()).cwiseAbs().maxCoeff() == 0.0f);
  MlLearner other(model, data, mine, o, Rng(4, 1, RngPurpose::kBatch));
  state.adam_v.resize(3);
  CHECK(other.RestoreState(state).code() == StatusCode::kInvalidArgument);
}

}  // namespace murmur::ml
