// MLP and softmax regression: loss against a double-precision reference
// written independently here (per-sample loops), gradients against central
// finite differences of that reference, determinism across thread counts.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ml/mlp.h"
#include "ml/model_spec.h"
#include "ml/synthetic.h"

namespace murmur::ml {
namespace {

// Mean cross-entropy of the MLP in double, plus (l2/2) sum ||W||^2.
double ReferenceLoss(const Mlp& model, const std::vector<double>& p, const Dataset& data,
                     std::span<const SampleIndex> batch, double l2) {
  const auto& w = model.widths();
  const Layout& layout = model.layout();
  double total = 0;
  for (SampleIndex s : batch) {
    std::vector<float> x(static_cast<std::size_t>(data.dim));
    data.CopySample(s, x.data());
    std::vector<double> a(x.begin(), x.end());
    for (std::size_t l = 0; l + 1 < w.size(); ++l) {
      const TensorSpec& wt = layout.tensor(2 * l);
      const TensorSpec& bt = layout.tensor(2 * l + 1);
      std::vector<double> z(static_cast<std::size_t>(w[l + 1]));
      for (std::int64_t o = 0; o < w[l + 1]; ++o) {
        double v = p[bt.offset + static_cast<std::size_t>(o)];
        for (std::int64_t i = 0; i < w[l]; ++i)
          v += a[static_cast<std::size_t>(i)] * p[wt.offset + static_cast<std::size_t>(i * w[l + 1] + o)];
        z[static_cast<std::size_t>(o)] = (l + 2 < w.size()) ? std::max(0.0, v) : v;
      }
      a = z;
    }
    double mx = *std::max_element(a.begin(), a.end()), sum = 0;
    for (double v : a) sum += std::exp(v - mx);
    total += std::log(sum) + mx - a[static_cast<std::size_t>(data.labels[s])];
  }
  double loss = total / static_cast<double>(batch.size());
  for (std::size_t l = 0; l + 1 < w.size(); ++l) {
    const TensorSpec& wt = layout.tensor(2 * l);
    for (std::size_t k = 0; k < wt.size; ++k) loss += 0.5 * l2 * p[wt.offset + k] * p[wt.offset + k];
  }
  return loss;
}

Dataset SmallData() {
  BlobsOptions o;
  o.num_samples = 70;
  o.dim = 6;
  o.num_classes = 4;
  o.center_scale = 1.0;
  return MakeGaussianBlobs(o);
}

}  // namespace

TEST_CASE("MLP and softmax gradients match central finite differences of a double reference") {
  Dataset data = SmallData();
  std::vector<SampleIndex> batch = AllIndices(data);
  struct Case {
    std::vector<std::int64_t> hidden;
    double l2;
    std::int64_t chunk;
  };
  for (const Case& c : {Case{{}, 0, 32}, Case{{}, 0.1, 1000}, Case{{5}, 0, 32}, Case{{7, 5}, 0.05, 16}}) {
    CAPTURE(c.hidden.size());
    CAPTURE(c.l2);
    Mlp model(MlpOptions{data.dim, c.hidden, data.num_classes, c.l2, c.chunk});
    ParamVector params(model.layout()), grad(model.layout());
    Rng rng(11, 0, RngPurpose::kInit);
    model.InitParams(params, rng);
    for (std::size_t k = 0; k < params.size(); ++k)
      params[k] += 0.05f * static_cast<float>(rng.Normal());  // nonzero biases
    auto ws = model.NewWorkspace();
    double loss = model.LossAndGradient(params, data, batch, grad, *ws);
    std::vector<double> p(params.data(), params.data() + params.size());
    CHECK(loss == doctest::Approx(ReferenceLoss(model, p, data, batch, c.l2)).epsilon(1e-5));
    const double h = 1e-5;
    double worst = 0;
    for (std::size_t k = 0; k < p.size(); ++k) {
      double keep = p[k];
      p[k] = keep + h;
      double up = ReferenceLoss(model, p, data, batch, c.l2);
      p[k] = keep - h;
      double down = ReferenceLoss(model, p, data, batch, c.l2);
      p[k] = keep;
      double fd = (up - down) / (2 * h);
      worst = std::max(worst, std::abs(fd - grad[k]) / std::max(1e-2, std::abs(fd)));
    }
    CHECK(worst < 1e-3);
  }
}

TEST_CASE("gradients are bit-identical for any thread count") {
  Dataset data = SmallData();
  std::vector<SampleIndex> batch = AllIndices(data);
  Mlp model(MlpOptions{data.dim, {9, 7}, data.num_classes, 0, 8});
  ParamVector params(model.layout()), g1(model.layout()), g3(model.layout());
  Rng rng(5, 0, RngPurpose::kInit);
  model.InitParams(params, rng);
  auto ws1 = model.NewWorkspace();
  auto ws3 = model.NewWorkspace();
  ThreadPool one(1), three(3);
  double l1 = model.LossAndGradient(params, data, batch, g1, *ws1, &one);
  double l3 = model.LossAndGradient(params, data, batch, g3, *ws3, &three);
  CHECK(l1 == l3);
  CHECK(std::equal(g1.data(), g1.data() + g1.size(), g3.data()));
  // Again with the warm workspace: no state leaks from one call into the next.
  double l3b = model.LossAndGradient(params, data, batch, g3, *ws3, &three);
  CHECK(l3b == l1);
  CHECK(std::equal(g1.data(), g1.data() + g1.size(), g3.data()));
}

TEST_CASE("softmax is stable for huge logits") {
  Dataset data = SmallData();
  std::vector<SampleIndex> batch = AllIndices(data);
  Mlp model(MlpOptions{data.dim, {}, data.num_classes, 0, 32});
  ParamVector params(model.layout()), grad(model.layout());
  Rng rng(1, 0, RngPurpose::kInit);
  model.InitParams(params, rng);
  params.vec() *= 1e4f;
  auto ws = model.NewWorkspace();
  double loss = model.LossAndGradient(params, data, batch, grad, *ws);
  CHECK(std::isfinite(loss));
  CHECK(grad.vec().allFinite());
  std::vector<double> p(params.data(), params.data() + params.size());
  CHECK(loss == doctest::Approx(ReferenceLoss(model, p, data, batch, 0)).epsilon(1e-4));
}

TEST_CASE("Predict and Evaluate agree with the labels") {
  Dataset data = SmallData();
  std::vector<SampleIndex> idx = AllIndices(data);
  Mlp model(MlpOptions{data.dim, {8}, data.num_classes, 0, 32});
  ParamVector params(model.layout());
  Rng rng(2, 0, RngPurpose::kInit);
  model.InitParams(params, rng);
  auto ws = model.NewWorkspace();
  std::vector<std::int32_t> pred(idx.size());
  model.Predict(params, data, idx, pred, *ws);
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) correct += pred[i] == data.labels[i];
  Evaluation ev = model.Evaluate(params, data, *ws);
  CHECK(ev.count == 70);
  CHECK(ev.accuracy == doctest::Approx(static_cast<double>(correct) / 70));
  std::vector<double> p(params.data(), params.data() + params.size());
  CHECK(ev.loss == doctest::Approx(ReferenceLoss(model, p, data, idx, 0)).epsilon(1e-5));
}

TEST_CASE("model specs and FLOPs per sample") {
  auto mlp = MakeModel("mlp:256,128", 784, 10);
  REQUIRE(mlp.ok());
  CHECK((*mlp)->spec() == "mlp:256,128");
  CHECK((*mlp)->layout().total_size() == 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  // Forward 2 x 234752 multiply-adds; backward 2 x 234752 for weights + 2 x (256*128 + 128*10) for inputs.
  CHECK((*mlp)->FlopsPerSample() == 2.0 * 234752 + 2.0 * 234752 + 2.0 * (256 * 128 + 128 * 10));
  auto softmax = MakeModel("softmax", 784, 10);
  REQUIRE(softmax.ok());
  CHECK((*softmax)->layout().total_size() == 7850u);
  CHECK((*softmax)->FlopsPerSample() == 4.0 * 7840);
  for (const char* bad : {"", "mlp", "mlp:", "mlp:0", "mlp:-3", "mlp:12,,4", "mlp:abc", "mlp:12x", "cnn",
                          "mlp:100000", "mlp:65536,65536"}) {
    CAPTURE(bad);
    auto m = MakeModel(bad, 784, 10);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kInvalidArgument);
    CHECK(m.status().message().find("model spec") != std::string::npos);
  }
}

}  // namespace murmur::ml
