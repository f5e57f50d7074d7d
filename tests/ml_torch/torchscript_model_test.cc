// TorchScript models against outside truths: the native MLP (a second,
// independent implementation) step for step, PyTorch's own loss, gradient
// and BatchNorm statistics written by make_fixtures.py, and the closed-form
// FLOPs of a dense network; and the errors a user sees.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "ml/dataset_spec.h"
#include "ml/model_spec.h"
#include "ml/synthetic.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml {
namespace {

std::string Fixture(const std::string& name) { return std::string(MURMUR_TORCH_FIXTURES) + "/" + name; }
std::string Spec(const std::string& name) { return "torchscript:" + Fixture(name); }

std::unique_ptr<Model> Load(const std::string& name, std::vector<std::int64_t> shape, int classes) {
  auto model = LoadTorchScriptModel(Spec(name), shape, classes);
  REQUIRE_MESSAGE(model.ok(), model.status().ToString());
  return std::move(model).value();
}

// A loaded model with its saved initial values, a gradient and a workspace.
struct Ready {
  Ready(const std::string& name, std::vector<std::int64_t> shape, int classes)
      : model(Load(name, std::move(shape), classes)), p(model->layout()), g(model->layout()) {
    Rng rng(1, 0, RngPurpose::kInit);
    model->InitParams(p, rng);
    ws = model->NewWorkspace();
  }
  std::unique_ptr<Model> model;
  ParamVector p, g;
  std::unique_ptr<ModelWorkspace> ws;
};

// The rows of a fixture's text file, one vector of numbers per line.
std::vector<std::vector<double>> ReadRows(const std::string& name) {
  std::ifstream in(Fixture(name));
  REQUIRE_MESSAGE(in.good(), Fixture(name));
  std::vector<std::vector<double>> rows;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    rows.emplace_back();
    for (double v; fields >> v;) rows.back().push_back(v);
  }
  return rows;
}

// The batch of make_fixtures.py: 8 samples of 1x6x6 (or 36 flat features), 3 classes.
Dataset FixtureBatch(std::vector<std::int64_t> shape) {
  Dataset d;
  d.name = "cnn_bn";
  auto x = ReadRows("cnn_bn.x.txt");
  auto y = ReadRows("cnn_bn.y.txt");
  d.num_samples = static_cast<std::int64_t>(x.size());
  d.dim = 36;
  d.shape = std::move(shape);
  d.num_classes = 3;
  for (const auto& row : x) d.features.insert(d.features.end(), row.begin(), row.end());
  for (const auto& row : y) d.labels.push_back(static_cast<std::int32_t>(row.at(0)));
  REQUIRE(d.Validate().ok());
  return d;
}

void CheckClose(std::span<const float> got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

// What TrainSideBySide measured: the worst relative difference of the two
// models' losses, and the native model's first and last loss.
struct SideBySide {
  double worst = 0, first = 0, last = 0;
};

// `native` and `ts`, a TorchScript export of its architecture, trained side
// by side from the export's initial weights with plain SGD at `lr` on the
// same batches (consecutive samples of `data`, `batch` at a time) for
// `steps` steps. The weights are copied into the native Layout as they lie,
// but a Linear's {out, in} weight, which is transposed to the native dense
// layer's {in, out}.
SideBySide TrainSideBySide(const Model& ts, const Model& native, const Dataset& data, std::size_t batch,
                           float lr, int steps) {
  ParamVector p_ts(ts.layout()), p_nat(native.layout());
  REQUIRE(ts.layout().num_tensors() == native.layout().num_tensors());
  Rng rng(1, 0, RngPurpose::kInit);
  ts.InitParams(p_ts, rng);
  for (std::size_t t = 0; t < ts.layout().num_tensors(); ++t) {
    std::span<const float> from = p_ts.tensor_span(t);
    std::span<float> to = p_nat.tensor_span(t);
    REQUIRE(from.size() == to.size());
    const auto& shape = ts.layout().tensor(t).shape;
    if (shape.size() != 2) {
      std::copy(from.begin(), from.end(), to.begin());
      continue;
    }
    const auto out = static_cast<std::size_t>(shape[0]), in = static_cast<std::size_t>(shape[1]);
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i) to[i * out + o] = from[o * in + i];
  }
  ParamVector g_ts(ts.layout()), g_nat(native.layout());
  auto ws_ts = ts.NewWorkspace();
  auto ws_nat = native.NewWorkspace();
  std::vector<SampleIndex> samples(batch);
  SideBySide r;
  for (int step = 0; step < steps; ++step) {
    for (std::size_t i = 0; i < batch; ++i) samples[i] = static_cast<SampleIndex>(step * batch + i);
    const double a = ts.LossAndGradient(p_ts, data, samples, g_ts, *ws_ts);
    const double b = native.LossAndGradient(p_nat, data, samples, g_nat, *ws_nat);
    r.worst = std::max(r.worst, std::abs(a - b) / std::abs(b));
    if (step == 0) r.first = b;
    r.last = b;
    p_ts.vec() -= lr * g_ts.vec();
    p_nat.vec() -= lr * g_nat.vec();
  }
  return r;
}

}  // namespace

TEST_CASE("torchscript: the Layout lists named_parameters with their shapes, then float buffers") {
  auto mlp = Load("mlp.pt", {20}, 10);
  const Layout& l = mlp->layout();
  REQUIRE(l.num_tensors() == 4);
  CHECK(l.tensor(0).name == "0.weight");
  CHECK(l.tensor(0).shape == std::vector<std::int64_t>{32, 20});
  CHECK(l.tensor(1).name == "0.bias");
  CHECK(l.tensor(2).shape == std::vector<std::int64_t>{10, 32});
  CHECK(l.total_size() == 32 * 20 + 32 + 10 * 32 + 10);

  auto cnn = Load("cnn_bn.pt", {1, 6, 6}, 3);
  std::vector<std::string> names;
  for (const TensorSpec& t : cnn->layout().tensors()) names.push_back(t.name);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias",
                                          "buffer:1.running_mean", "buffer:1.running_var"});
}

TEST_CASE("torchscript: an MLP export gives the native mlp:32's losses over 100 SGD steps within 1e-4") {
  auto data = LoadDatasetSpec("synthetic:blobs", "", 3);
  REQUIRE(data.ok());
  auto ts = Load("mlp.pt", {20}, 10);
  auto native = MakeModel("mlp:32", 20, 10);
  REQUIRE(native.ok());
  const SideBySide r = TrainSideBySide(*ts, **native, data->train, 32, 0.1f, 100);
  MESSAGE("worst relative loss difference over 100 steps: " << r.worst);
  CHECK(r.worst < 1e-4);
  CHECK(r.last < 0.5 * r.first);  // it learned: the comparison is not between two constant runs
}

TEST_CASE("torchscript: a CNN export gives the native CNN's losses over 100 SGD steps within 1e-4") {
  // The native cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32 and its PyTorch export
  // (make_fixtures.py), from the export's initial weights, on the same
  // batches of random 8-bit images: convolution, GroupNorm, both poolings
  // and dense layers of two independent implementations, step for step.
  Dataset data;
  data.name = "random images";
  data.num_samples = 1600;
  data.dim = 784;
  data.shape = {1, 28, 28};
  data.num_classes = 10;
  Rng rng(7, 0, RngPurpose::kGeneric);
  for (std::int64_t i = 0; i < data.num_samples * data.dim; ++i)
    data.features.push_back(static_cast<float>(rng.UniformInt(256)) * (1.0f / 255.0f));
  for (std::int64_t i = 0; i < data.num_samples; ++i)
    data.labels.push_back(static_cast<std::int32_t>(rng.UniformInt(10)));
  REQUIRE(data.Validate().ok());
  auto ts = Load("cnn_gn.pt", data.shape, 10);
  auto native = MakeModel("cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32", data.shape, 10);
  REQUIRE(native.ok());
  const SideBySide r = TrainSideBySide(*ts, **native, data, 16, 0.05f, 100);
  MESSAGE("worst relative loss difference over 100 steps: " << r.worst << " (loss " << r.first << " to "
                                                            << r.last << ")");
  CHECK(r.worst < 1e-4);
  CHECK(r.last < r.first);  // the weights moved: the comparison is not between two constant runs
}

TEST_CASE("torchscript: loss, gradient and BatchNorm statistics match PyTorch's own") {
  Dataset d = FixtureBatch({1, 6, 6});
  Ready r("cnn_bn.pt", {1, 6, 6}, 3);
  auto& [model, p, g, ws] = r;
  std::vector<SampleIndex> all = AllIndices(d);
  double loss = model->LossAndGradient(p, d, all, g, *ws);
  auto want = ReadRows("cnn_bn.grad.txt");
  REQUIRE(want.size() == 9);
  CHECK(loss == doctest::Approx(want[0][0]).epsilon(1e-5));
  for (std::size_t t = 0; t < 6; ++t) {
    CAPTURE(model->layout().tensor(t).name);
    CheckClose(g.tensor_span(t), want[t + 1], 1e-4);
  }
  // The training forward pass updated the running statistics in the vector;
  // buffers have no gradient.
  CheckClose(p.tensor_span(6), want[7], 1e-5);
  CheckClose(p.tensor_span(7), want[8], 1e-5);
  for (std::size_t t = 6; t < 8; ++t)
    for (float v : g.tensor_span(t)) CHECK(v == 0.0f);
}

TEST_CASE("torchscript: forward(x, y) returns its own loss, and its gradient matches PyTorch's") {
  Dataset d = FixtureBatch({36});
  Ready r("loss_forward.pt", {36}, 3);
  auto& [model, p, g, ws] = r;
  std::vector<SampleIndex> all = AllIndices(d);
  double loss = model->LossAndGradient(p, d, all, g, *ws);
  auto want = ReadRows("loss_forward.grad.txt");
  REQUIRE(want.size() == 3);
  CHECK(loss == doctest::Approx(want[0][0]).epsilon(1e-5));
  CheckClose(g.tensor_span(0), want[1], 1e-4);
  CheckClose(g.tensor_span(1), want[2], 1e-4);
  Evaluation ev = model->Evaluate(p, d, all, *ws);
  CHECK(ev.loss == doctest::Approx(want[0][0]).epsilon(1e-5));  // no BatchNorm or dropout: eval = train
  CHECK(ev.accuracy == 0);
}

TEST_CASE("torchscript: eval mode uses the running statistics, training mode the batch's") {
  Dataset d = FixtureBatch({1, 6, 6});
  Ready r("cnn_bn.pt", {1, 6, 6}, 3);
  auto& [model, p, g, ws] = r;
  std::vector<SampleIndex> all = AllIndices(d);
  // With running mean 0 and variance 1 (the initial buffers), eval-mode
  // BatchNorm is the identity times its weight plus bias, unlike training
  // mode's normalization by the batch: the losses differ.
  double eval_loss = model->Evaluate(p, d, all, *ws).loss;
  double train_loss = model->LossAndGradient(p, d, all, g, *ws);
  CHECK(train_loss == doctest::Approx(ReadRows("cnn_bn.grad.txt")[0][0]).epsilon(1e-5));
  CHECK(std::abs(eval_loss - train_loss) > 1e-4);
  // Evaluating changes nothing: twice gives the same.
  CHECK(model->Evaluate(p, d, all, *ws).loss == model->Evaluate(p, d, all, *ws).loss);
}

TEST_CASE("torchscript: dropout masks are a function of the step's inputs, on any thread") {
  auto data = LoadDatasetSpec("synthetic:blobs", "", 3);
  REQUIRE(data.ok());
  // Other modules loaded first (the same nn.Sequential class, renamed by
  // TorchScript's importer) once hid dropout from the graph scan.
  Load("mlp.pt", {20}, 10);
  Load("cnn_bn.pt", {1, 6, 6}, 3);
  auto model = Load("bn_dropout.pt", {20}, 10);
  ParamVector p(model->layout());
  Rng rng(1, 0, RngPurpose::kInit);
  model->InitParams(p, rng);
  std::vector<SampleIndex> batch(64), other(64);
  for (std::size_t i = 0; i < 64; ++i)
    batch[i] = static_cast<SampleIndex>(i), other[i] = static_cast<SampleIndex>(i);
  std::swap(other[0], other[1]);  // the same samples, another order: another mask
  // Each thread starts from the same parameters (the step writes the BatchNorm
  // statistics into them) and computes three gradients.
  auto run = [&](std::vector<float>& out) {
    ParamVector mine(model->layout()), g(model->layout());
    auto ws = model->NewWorkspace();
    for (const auto* b : {&batch, &batch, &other}) {
      mine.CopyFrom(p);
      model->LossAndGradient(mine, data->train, *b, g, *ws);
      out.insert(out.end(), g.data(), g.data() + g.size());
    }
  };
  std::vector<float> a, b;
  std::thread t1([&] { run(a); }), t2([&] { run(b); });
  t1.join();
  t2.join();
  CHECK(a == b);
  const std::size_t n = p.size();
  CHECK(std::equal(a.begin(), a.begin() + n, a.begin() + n));       // same inputs, same mask
  CHECK(!std::equal(a.begin(), a.begin() + n, a.begin() + 2 * n));  // another order, another mask
}

TEST_CASE("torchscript: FLOPs per sample are three forward passes of a dense network's 2 in out") {
  auto mlp = Load("mlp.pt", {20}, 10);
  const double forward = 2.0 * (20 * 32 + 32 * 10);
  CHECK(mlp->FlopsPerSample() >= 3 * forward);
  CHECK(mlp->FlopsPerSample() <= 3 * forward * 1.1);  // bias and ReLU are a few percent at most
}

TEST_CASE("torchscript: bad files and mismatched data get errors naming the file") {
  auto missing = LoadTorchScriptModel(Spec("no_such.pt"), std::vector<std::int64_t>{20}, 10);
  REQUIRE(!missing.ok());
  CHECK(missing.status().message().find("no_such.pt") != std::string::npos);
  CHECK(missing.status().message().find("No such file") != std::string::npos);

  auto garbage = LoadTorchScriptModel(Spec("not_torchscript.pt"), std::vector<std::int64_t>{20}, 10);
  REQUIRE(!garbage.ok());
  CHECK(garbage.status().message().find("not_torchscript.pt' is not a TorchScript archive") !=
        std::string::npos);
  CHECK(!CheckTorchScriptModel(Spec("not_torchscript.pt")).ok());
  CHECK(CheckTorchScriptModel(Spec("mlp.pt")).ok());

  auto classes = LoadTorchScriptModel(Spec("mlp.pt"), std::vector<std::int64_t>{20}, 5);
  REQUIRE(!classes.ok());
  CHECK(classes.status().message().find(
            "returned shape [2, 10]; the data has 5 classes, so expected [2, 5]") != std::string::npos);

  auto features = LoadTorchScriptModel(Spec("mlp.pt"), std::vector<std::int64_t>{1, 28, 28}, 10);
  REQUIRE(!features.ok());
  CHECK(features.status().message().find("forward on a batch of shape [2, 1, 28, 28] failed") !=
        std::string::npos);

  auto empty = LoadTorchScriptModel("torchscript:", std::vector<std::int64_t>{20}, 10);
  REQUIRE(!empty.ok());
  CHECK(empty.status().message().find("names no file") != std::string::npos);
}

}  // namespace murmur::ml
