// Synthetic data checked against closed forms: two Gaussian blobs have Bayes
// accuracy Phi(delta / (2 sigma)); a noise-free linear teacher is separable.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ml/dataset_spec.h"
#include "ml/mlp.h"
#include "ml/optimizer.h"
#include "ml/synthetic.h"
#include "ml/trainer.h"

namespace murmur::ml {
namespace {

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double TrainAndTest(const Dataset& train, const Dataset& test, int epochs, double lr) {
  Mlp model(MlpOptions{train.dim, {}, train.num_classes, 0, 32});
  ParamVector params(model.layout());
  Rng init(7, 0, RngPurpose::kInit);
  model.InitParams(params, init);
  Sgd sgd(params.size(), SgdOptions{0.9, false, 0});
  Trainer trainer(model, sgd, LrSchedule(ScheduleOptions{ScheduleKind::kConstant, lr}),
                  TrainerOptions{64, false, 3, 0});
  std::vector<SampleIndex> all = AllIndices(train);
  for (int e = 0; e < epochs; ++e) trainer.RunEpoch(params, train, all, e);
  return model.Evaluate(params, test, trainer.workspace()).accuracy;
}

}  // namespace

TEST_CASE("Gaussian blobs: class means, and softmax regression reaches the Bayes accuracy") {
  BlobsOptions o;
  o.num_classes = 2;
  o.dim = 5;
  o.sigma = 1.0;
  o.center_scale = 0.6;
  o.num_samples = 20000;
  Dataset train = MakeGaussianBlobs(o);
  o.stream = 1;
  Dataset test = MakeGaussianBlobs(o);
  REQUIRE(train.Validate().ok());
  // The same seed gives the same centres in both streams: compare class means.
  Eigen::MatrixXd mean[2] = {Eigen::MatrixXd::Zero(2, o.dim), Eigen::MatrixXd::Zero(2, o.dim)};
  double count[2][2] = {{0, 0}, {0, 0}};
  const Dataset* sets[2] = {&train, &test};
  for (int s = 0; s < 2; ++s) {
    for (std::int64_t i = 0; i < sets[s]->num_samples; ++i) {
      int y = sets[s]->labels[static_cast<std::size_t>(i)];
      for (std::int64_t j = 0; j < o.dim; ++j)
        mean[s](y, j) += sets[s]->features[static_cast<std::size_t>(i * o.dim + j)];
      count[s][y] += 1;
    }
    for (int y = 0; y < 2; ++y) mean[s].row(y) /= count[s][y];
  }
  CHECK((mean[0] - mean[1]).cwiseAbs().maxCoeff() < 0.06);  // 4.5 standard errors of a class mean
  double delta = (mean[0].row(0) - mean[0].row(1)).norm();
  double bayes = Phi(delta / (2 * o.sigma));
  double acc = TrainAndTest(train, test, 3, 0.05);
  CAPTURE(delta);
  CAPTURE(bayes);
  CHECK(acc > bayes - 0.015);
  CHECK(acc < bayes + 0.015);  // no classifier beats Bayes beyond sampling noise (sd 0.004 on 20000)
}

TEST_CASE("Linear teacher without noise is learned almost exactly by softmax regression") {
  TeacherOptions o;
  o.num_samples = 20000;
  o.dim = 10;
  o.num_classes = 4;
  Dataset train = MakeLinearTeacher(o);
  o.stream = 1;
  o.num_samples = 5000;
  Dataset test = MakeLinearTeacher(o);
  auto counts = LabelCounts(train, AllIndices(train));
  for (auto c : counts) CHECK(c > 0);
  CHECK(TrainAndTest(train, test, 10, 0.1) > 0.95);
}

}  // namespace murmur::ml

namespace murmur::ml {
namespace {

TEST_CASE("synthetic:KIND:N has N training samples, the first ones those of the default size") {
  auto base = LoadDatasetSpec("synthetic:blobs", "", 3).value();
  auto big = LoadDatasetSpec("synthetic:blobs:30000", "", 3).value();
  CHECK(base.train.num_samples == 20000);
  CHECK(big.train.num_samples == 30000);
  CHECK(big.test.num_samples == 5000);
  CHECK(big.test.features == base.test.features);  // the test set does not depend on N
  CHECK(std::equal(base.train.features.begin(), base.train.features.end(), big.train.features.begin()));
  auto teacher = LoadDatasetSpec("synthetic:teacher:7", "", 3).value();
  CHECK(teacher.train.num_samples == 7);
  for (const char* bad : {"synthetic:blobs:", "synthetic:blobs:0", "synthetic:blobs:12x",
                          "synthetic:blobs:-4", "synthetic:blobs:100000001", "synthetic:noise"}) {
    CAPTURE(bad);
    auto r = LoadDatasetSpec(bad, "", 3);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find(bad) != std::string::npos);
  }
}

}  // namespace
}  // namespace murmur::ml
