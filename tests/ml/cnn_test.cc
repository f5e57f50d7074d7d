// The convolutional model: its loss against a double-precision reference
// written independently here (direct loops: no im2col, no GEMM), every
// layer's gradient against central finite differences of that reference, the
// parameter counts of the published architectures, determinism across thread
// counts, dropout's statistics, and the spec errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "core/rng.h"
#include "core/thread_pool.h"
#include "ml/cnn.h"
#include "ml/cnn_spec.h"
#include "ml/layers.h"
#include "ml/model_spec.h"
#include "ml/npy.h"

namespace murmur::ml {
namespace {

using Vec = std::vector<double>;

// n random images of `shape` with values in [0, 1) and random labels.
Dataset RandomImages(Shape3 shape, int classes, std::int64_t n, std::uint64_t seed) {
  Dataset d;
  d.name = "random images";
  d.num_samples = n;
  d.dim = shape.size();
  d.shape = {shape.c, shape.h, shape.w};
  d.num_classes = classes;
  Rng rng(seed);
  d.features.resize(static_cast<std::size_t>(n * d.dim));
  for (float& v : d.features) v = rng.UniformFloat();
  for (std::int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<std::int32_t>(rng.UniformInt(classes)));
  return d;
}

std::unique_ptr<Cnn> Build(const std::string& spec, Shape3 input, int classes, double l2 = 0) {
  auto o = ParseCnnSpec(spec, input, classes, std::int64_t{1} << 28);
  REQUIRE_MESSAGE(o.ok(), o.status().ToString());
  o->l2 = l2;
  o->chunk_rows = 4;
  return std::make_unique<Cnn>(*o);
}

// One layer of the reference: direct loops in double over one sample.
Vec ReferenceLayer(const Cnn::Stage& st, const Vec& p, const Layout& layout, const Vec& x) {
  const Shape3 in = st.in, out = st.out;
  Vec y(static_cast<std::size_t>(out.size()), 0.0);
  auto at = [](const Shape3& s, std::int64_t c, std::int64_t h, std::int64_t w) {
    return static_cast<std::size_t>((c * s.h + h) * s.w + w);
  };
  const CnnLayer& L = st.layer;
  switch (L.kind) {
    case CnnLayerKind::kConv: {
      const std::size_t w0 = layout.tensor(static_cast<std::size_t>(st.weight)).offset;
      const std::size_t b0 = layout.tensor(static_cast<std::size_t>(st.bias)).offset;
      for (std::int64_t o = 0; o < out.c; ++o)
        for (std::int64_t oy = 0; oy < out.h; ++oy)
          for (std::int64_t ox = 0; ox < out.w; ++ox) {
            double v = p[b0 + static_cast<std::size_t>(o)];
            for (std::int64_t c = 0; c < in.c; ++c)
              for (std::int64_t i = 0; i < L.kernel; ++i)
                for (std::int64_t j = 0; j < L.kernel; ++j) {
                  const std::int64_t iy = oy * L.stride - L.pad + i, ix = ox * L.stride - L.pad + j;
                  if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w) continue;
                  const auto wi = static_cast<std::size_t>(((o * in.c + c) * L.kernel + i) * L.kernel + j);
                  v += p[w0 + wi] * x[at(in, c, iy, ix)];
                }
            y[at(out, o, oy, ox)] = v;
          }
      break;
    }
    case CnnLayerKind::kMaxPool:
    case CnnLayerKind::kAvgPool:
      for (std::int64_t c = 0; c < out.c; ++c)
        for (std::int64_t oy = 0; oy < out.h; ++oy)
          for (std::int64_t ox = 0; ox < out.w; ++ox) {
            double best = -1e300, sum = 0;
            for (std::int64_t i = 0; i < L.size; ++i)
              for (std::int64_t j = 0; j < L.size; ++j) {
                const double v = x[at(in, c, oy * L.size + i, ox * L.size + j)];
                best = std::max(best, v);
                sum += v;
              }
            y[at(out, c, oy, ox)] =
                L.kind == CnnLayerKind::kMaxPool ? best : sum / static_cast<double>(L.size * L.size);
          }
      break;
    case CnnLayerKind::kDense: {
      const std::size_t w0 = layout.tensor(static_cast<std::size_t>(st.weight)).offset;
      const std::size_t b0 = layout.tensor(static_cast<std::size_t>(st.bias)).offset;
      const std::int64_t n_in = in.size(), n_out = out.size();
      for (std::int64_t o = 0; o < n_out; ++o) {
        double v = p[b0 + static_cast<std::size_t>(o)];
        for (std::int64_t i = 0; i < n_in; ++i)
          v += x[static_cast<std::size_t>(i)] * p[w0 + static_cast<std::size_t>(i * n_out + o)];
        y[static_cast<std::size_t>(o)] = v;
      }
      break;
    }
    case CnnLayerKind::kGroupNorm: {
      const std::size_t g0 = layout.tensor(static_cast<std::size_t>(st.weight)).offset;
      const std::size_t b0 = layout.tensor(static_cast<std::size_t>(st.bias)).offset;
      const std::int64_t per = in.c / L.size * in.h * in.w;
      for (std::int64_t g = 0; g < L.size; ++g) {
        double mean = 0, var = 0;
        for (std::int64_t i = g * per; i < (g + 1) * per; ++i) mean += x[static_cast<std::size_t>(i)];
        mean /= static_cast<double>(per);
        for (std::int64_t i = g * per; i < (g + 1) * per; ++i)
          var += std::pow(x[static_cast<std::size_t>(i)] - mean, 2);
        var /= static_cast<double>(per);
        for (std::int64_t i = g * per; i < (g + 1) * per; ++i) {
          const auto c = static_cast<std::size_t>(i / (in.h * in.w));
          y[static_cast<std::size_t>(i)] =
              p[g0 + c] * (x[static_cast<std::size_t>(i)] - mean) / std::sqrt(var + 1e-5) + p[b0 + c];
        }
      }
      break;
    }
    case CnnLayerKind::kDropout: FAIL("the reference has no dropout");
  }
  if (L.relu)
    for (double& v : y) v = std::max(0.0, v);
  return y;
}

// Mean cross-entropy in double, plus (l2/2) sum ||W||^2 over conv and dense weights.
double ReferenceLoss(const Cnn& model, const Vec& p, const Dataset& data,
                     std::span<const SampleIndex> batch) {
  double total = 0;
  for (SampleIndex s : batch) {
    std::vector<float> xf(static_cast<std::size_t>(data.dim));
    data.CopySample(s, xf.data());
    Vec a(xf.begin(), xf.end());
    for (const Cnn::Stage& st : model.stages()) a = ReferenceLayer(st, p, model.layout(), a);
    const double mx = *std::max_element(a.begin(), a.end());
    double sum = 0;
    for (double v : a) sum += std::exp(v - mx);
    total += std::log(sum) + mx - a[static_cast<std::size_t>(data.labels[s])];
  }
  double loss = total / static_cast<double>(batch.size());
  for (const Cnn::Stage& st : model.stages()) {
    if (st.layer.kind != CnnLayerKind::kConv && st.layer.kind != CnnLayerKind::kDense) continue;
    const TensorSpec& t = model.layout().tensor(static_cast<std::size_t>(st.weight));
    for (std::size_t i = 0; i < t.size; ++i)
      loss += 0.5 * model.options().l2 * p[t.offset + i] * p[t.offset + i];
  }
  return loss;
}

// The model's loss and gradient against the reference's loss and its central
// differences, for every parameter.
void CheckAgainstReference(const std::string& spec, Shape3 input, double l2) {
  CAPTURE(spec);
  auto model = Build(spec, input, 3, l2);
  Dataset data = RandomImages(input, 3, 10, 11);
  std::vector<SampleIndex> batch = {0, 3, 5, 9, 2, 7, 1};  // two chunks of 4 and 3
  ParamVector params(model->layout()), grad(model->layout());
  Rng rng(5);
  model->InitParams(params, rng);
  // Nonzero biases and norm shifts, so that they matter.
  for (float& v : params.span()) v += 0.05f * static_cast<float>(rng.Normal());
  auto ws = model->NewWorkspace();
  // The gradient is written, not added: neither what grad held nor what an
  // earlier batch left in the workspace's chunks may show through.
  std::fill(grad.span().begin(), grad.span().end(), 1e3f);
  const std::vector<SampleIndex> other = {8, 4, 6, 0, 1};
  model->LossAndGradient(params, data, other, grad, *ws);
  const double loss = model->LossAndGradient(params, data, batch, grad, *ws);
  Vec p(params.span().begin(), params.span().end());
  CHECK(loss == doctest::Approx(ReferenceLoss(*model, p, data, batch)).epsilon(1e-5));
  const double h = 1e-5;
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double keep = p[i];
    p[i] = keep + h;
    const double up = ReferenceLoss(*model, p, data, batch);
    p[i] = keep - h;
    const double down = ReferenceLoss(*model, p, data, batch);
    p[i] = keep;
    const double fd = (up - down) / (2 * h);
    err += std::pow(fd - grad.span()[i], 2);
    norm += fd * fd;
    CHECK_MESSAGE(std::abs(fd - grad.span()[i]) <= 1e-4 + 1e-3 * std::abs(fd), "parameter ", i);
  }
  CHECK(std::sqrt(err / norm) < 1e-4);
}

TEST_CASE(
    "Convolution (stride, padding), max and average pooling and dense layers: loss and every gradient") {
  CheckAgainstReference("cnn:c4k3p1,pool2,c6k3s2p1,avg2,d8", {2, 8, 8}, 0);
  CheckAgainstReference("cnn:c3k2s2,d5", {1, 7, 7}, 0.01);  // odd sizes, no padding, L2 on the weights
  CheckAgainstReference("cnn:c3k2,pool2,c2k2,avg2,d4", {1, 8, 8},
                        0);  // windows that leave a row and a column
}

TEST_CASE("Group normalization after a convolution and after a dense layer: loss and every gradient") {
  CheckAgainstReference("cnn:c4k3,gn2,pool2,d6,gn3", {2, 6, 6}, 0);
  CheckAgainstReference("cnn:c6k3p1,gn1,max3", {1, 6, 6}, 0);  // one group: layer norm over C, H, W
}

TEST_CASE("im2col matches its definition and col2im is its adjoint, for every small geometry") {
  Rng rng(3);
  int geometries = 0;
  for (std::int64_t h = 1; h <= 6; ++h)
    for (std::int64_t w = 1; w <= 7; ++w)
      for (std::int64_t k = 1; k <= 4; ++k)
        for (std::int64_t stride = 1; stride <= 3; ++stride)
          for (std::int64_t pad = 0; pad < k; ++pad) {
            if (k > h + 2 * pad || k > w + 2 * pad) continue;
            const ConvGeometry g{{2, h, w}, 1, k, stride, pad};
            const Shape3 o = g.out();
            INFO("h ", h, " w ", w, " k ", k, " stride ", stride, " pad ", pad);
            std::vector<float> x(static_cast<std::size_t>(g.in.size())), dx(x.size(), 99.0f);
            for (float& v : x) v = static_cast<float>(rng.UniformInt(100)) - 50;
            const auto n = static_cast<std::size_t>(g.patch() * o.h * o.w);
            std::vector<float> cols(n, -1.0f), c(n);
            for (float& v : c) v = static_cast<float>(rng.UniformInt(100)) - 50;
            Im2Col(g, x.data(), cols.data());
            double lhs = 0;
            for (std::int64_t ch = 0; ch < 2; ++ch)
              for (std::int64_t i = 0; i < k; ++i)
                for (std::int64_t j = 0; j < k; ++j)
                  for (std::int64_t oy = 0; oy < o.h; ++oy)
                    for (std::int64_t ox = 0; ox < o.w; ++ox) {
                      const std::int64_t iy = oy * stride - pad + i, ix = ox * stride - pad + j;
                      const bool in = iy >= 0 && iy < h && ix >= 0 && ix < w;
                      const auto at =
                          static_cast<std::size_t>((((ch * k + i) * k + j) * o.h + oy) * o.w + ox);
                      CHECK(cols[at] == (in ? x[static_cast<std::size_t>((ch * h + iy) * w + ix)] : 0.0f));
                      lhs += static_cast<double>(cols[at]) * c[at];
                    }
            // <im2col(x), c> = <x, col2im(c)>: the backward pass is the forward's transpose.
            Col2Im(g, c.data(), dx.data());
            double rhs = 0;
            for (std::size_t i = 0; i < x.size(); ++i) rhs += static_cast<double>(x[i]) * dx[i];
            CHECK(lhs == rhs);
            // Through a zero-padded copy (stride 1; other strides ignore it): the same bits.
            std::vector<float> padded(static_cast<std::size_t>(g.padded_size()), -7.0f), cols2(n, -1.0f),
                dx2(x.size(), -99.0f);
            Im2Col(g, x.data(), cols2.data(), padded.data());
            Col2Im(g, c.data(), dx2.data(), padded.data());
            CHECK(cols2 == cols);
            CHECK(dx2 == dx);
            ++geometries;
          }
  CHECK(geometries > 300);
}

TEST_CASE("Max pooling takes each window's first maximum and routes its gradient there alone") {
  // Two channels of 4 x 5: 2 x 2 windows leave the last column out; ties
  // (the plateau of 3s, the -1s) go to the first in row-major order.
  const Shape3 in{2, 4, 5};
  const std::vector<float> x = {3,  3,  1, 0, 9,  //
                                3,  3,  2, 5, 9,  //
                                -1, -1, 7, 7, 9,  //
                                -1, -1, 7, 8, 9,  //
                                0,  1,  4, 4, 0,  //
                                2,  0,  4, 3, 0,  //
                                5,  6,  0, 0, 0,  //
                                8,  7,  0, 1, 0};
  std::vector<float> y(8);
  std::vector<std::int32_t> argmax(8);
  MaxPoolForward(in, 2, x.data(), y.data(), argmax.data());
  CHECK(y == std::vector<float>{3, 5, -1, 8, 2, 4, 8, 1});
  CHECK(argmax == std::vector<std::int32_t>{0, 8, 10, 18, 25, 22, 35, 38});
  std::vector<float> dx(x.size(), 42.0f);
  const std::vector<float> dy = {1, 2, 3, 4, 5, 6, 7, 8};
  MaxPoolBackward(in, 2, dy.data(), argmax.data(), dx.data());
  for (std::size_t i = 0; i < dx.size(); ++i) {
    const auto hit = std::find(argmax.begin(), argmax.end(), static_cast<std::int32_t>(i));
    CHECK(dx[i] == (hit == argmax.end() ? 0.0f : dy[static_cast<std::size_t>(hit - argmax.begin())]));
  }
  // 3 x 3 windows (the generic path) on a 3 x 3 input of ties: the corner.
  const std::vector<float> flat(9, 1.0f);
  float top = 0;
  std::int32_t where = -1;
  MaxPoolForward({1, 3, 3}, 3, flat.data(), &top, &where);
  CHECK(top == 1.0f);
  CHECK(where == 0);
}

TEST_CASE("The published architectures have their published parameter counts") {
  const std::int64_t mnist[] = {1, 28, 28};
  auto fedavg = MakeModel("cnn-fedavg", mnist, 10);
  REQUIRE(fedavg.ok());
  CHECK((*fedavg)->layout().total_size() == 1663370);  // McMahan et al. 2017, on 28x28x1
  auto lenet = MakeModel("lenet5", mnist, 10);
  REQUIRE(lenet.ok());
  CHECK((*lenet)->layout().total_size() == 61706);
  CHECK((*lenet)->spec() == "lenet5");
  // The preset is its spec, layer for layer.
  auto spelled = MakeModel("cnn:c32k5p2,pool2,c64k5p2,pool2,d512", mnist, 10);
  REQUIRE(spelled.ok());
  CHECK((*spelled)->layout() == (*fedavg)->layout());
  CHECK((*fedavg)->layout().tensor(0).name == "conv0.weight");
  CHECK((*fedavg)->layout().tensor(0).shape == std::vector<std::int64_t>{32, 25});
}

TEST_CASE("The gradient is bit for bit the same for 1, 2 and 3 threads, and dropout masks too") {
  // The second convolution's 72-entry patches run on the direct kernels
  // where the build has them (ml/direct_conv.h), the first's 27 on im2col.
  auto model = Build("cnn:c8k3p1,gn4,c16k3p1,pool2,drop0.25,d16", {3, 8, 8}, 4);
  Dataset data = RandomImages({3, 8, 8}, 4, 40, 3);
  std::vector<SampleIndex> batch = AllIndices(data);
  ParamVector params(model->layout());
  Rng rng(1);
  model->InitParams(params, rng);
  std::vector<float> first;
  double first_loss = 0;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    ThreadPool pool(threads);
    ParamVector grad(model->layout());
    auto ws = model->NewWorkspace();
    const double loss = model->LossAndGradient(params, data, batch, grad, *ws, &pool, 77);
    if (first.empty()) {
      first.assign(grad.span().begin(), grad.span().end());
      first_loss = loss;
    } else {
      CHECK(loss == first_loss);
      CHECK(std::equal(first.begin(), first.end(), grad.span().begin()));
    }
  }
  // Another noise seed draws other masks, so another gradient.
  ParamVector grad(model->layout());
  auto ws = model->NewWorkspace();
  (void)model->LossAndGradient(params, data, batch, grad, *ws, nullptr, 78);
  CHECK(!std::equal(first.begin(), first.end(), grad.span().begin()));
}

TEST_CASE("Dropout keeps values at rate 1 - p, scaled by 1 / (1 - p), and its gradient is the mask's") {
  const std::int64_t n = 100000;
  std::vector<float> x(n, 2.0f), y(n), scale(n);
  DropoutForward(n, 0.3, 9, 0, x.data(), y.data(), scale.data());
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    REQUIRE((scale[i] == 0.0f || scale[i] == 1.0f / 0.7f));
    CHECK(y[i] == x[i] * scale[i]);
    kept += scale[i] > 0;
  }
  // Binomial(100000, 0.7): sd 145; 5 sd either side.
  CHECK(std::abs(static_cast<double>(kept) - 70000.0) < 5 * 145);
  // Central differences of the model with dropout, at a fixed noise seed
  // (fixed masks), in float: a smooth network (no ReLU to cross), whose norm
  // parameters get their gradient through the dropout's backward pass.
  auto model = Build("cnn:gn1,drop0.5", {2, 5, 5}, 3);
  Dataset data = RandomImages({2, 5, 5}, 3, 6, 4);
  std::vector<SampleIndex> batch = AllIndices(data);
  ParamVector params(model->layout()), grad(model->layout()), scratch(model->layout());
  Rng rng(2);
  model->InitParams(params, rng);
  auto ws = model->NewWorkspace();
  (void)model->LossAndGradient(params, data, batch, grad, *ws, nullptr, 5);
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const float keep = params.span()[i], h = 1e-2f;
    params.span()[i] = keep + h;
    const double up = model->LossAndGradient(params, data, batch, scratch, *ws, nullptr, 5);
    params.span()[i] = keep - h;
    const double down = model->LossAndGradient(params, data, batch, scratch, *ws, nullptr, 5);
    params.span()[i] = keep;
    const double fd = (up - down) / (2.0 * h);
    err += std::pow(fd - grad.span()[i], 2);
    norm += fd * fd;
  }
  CHECK(std::sqrt(err / norm) < 1e-3);
  // Evaluation does not drop: the same predictions twice, whatever the seed of training.
  std::vector<std::int32_t> a(batch.size()), b(batch.size());
  model->Predict(params, data, batch, a, *ws);
  model->Predict(params, data, batch, b, *ws);
  CHECK(a == b);
}

TEST_CASE("Bad convolutional specs are refused, naming the layer and what is wrong") {
  const std::int64_t mnist[] = {1, 28, 28};
  struct Case {
    const char* spec;
    const char* says;
  };
  for (const Case& c :
       {Case{"cnn:", "has no layers"}, Case{"cnn:c32", "should read c<channels>k<kernel>"},
        Case{"cnn:c32k5x", "'x' left over"}, Case{"cnn:q3", "unknown"},
        Case{"cnn:c8k3,gn3", "3 groups do not divide 8 channels"}, Case{"cnn:c8k29", "kernel does not fit"},
        Case{"cnn:pool29", "window does not fit"}, Case{"cnn:drop1", "P in [0, 1)"},
        Case{"cnn:c0k3", "channels 0"}, Case{"cnn:c4096k5p2,c4096k5p2", "parameters"},
        Case{"cnn:c4096k1,c4096k1,c4096k1,c4096k1,c4096k1,c4096k1", "activation values"}}) {
    CAPTURE(c.spec);
    auto m = MakeModel(c.spec, mnist, 10);
    REQUIRE(!m.ok());
    CHECK(m.status().message().find(c.says) != std::string::npos);
    CHECK(m.status().message().find(c.spec) != std::string::npos);
  }
  auto flat = MakeModel("lenet5", 784, 10);
  REQUIRE(!flat.ok());
  CHECK(flat.status().message().find("needs image samples") != std::string::npos);
  // A TorchScript file without its prefix: the error says how to name it.
  for (const char* file : {"cnn.pt", "models/cnn.pth", "/tmp/lm"}) {
    CAPTURE(file);
    auto bare = MakeModel(file, mnist, 10);
    REQUIRE(!bare.ok());
    CHECK(bare.status().message().find(std::string("a TorchScript file is named torchscript:") + file) !=
          std::string::npos);
  }
  CHECK(MakeModel("mlpp", mnist, 10).status().message().find("torchscript:FILE.pt") != std::string::npos);
}

TEST_SUITE("slow") {
  // A second, independent implementation: PyTorch (tests/ml/torch_cnn_reference.py)
  // trains the same network from the same weights on the same batches.
  TEST_CASE("The CNN follows PyTorch step for step: 100 SGD steps with the same losses within 1e-4") {
    const auto dir =
        std::filesystem::temp_directory_path() / ("murmur_torch_cnn_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string script = std::string(MURMUR_SOURCE_DIR) + "/tests/ml/torch_cnn_reference.py";
    const int rc = std::system(("/usr/bin/python3 " + script + " " + dir.string()).c_str());
    REQUIRE_MESSAGE(rc == 0, "the PyTorch reference needs python3-torch (installed by ./dev test)");
    auto load = [&](const char* name) {
      auto a = LoadNpy((dir / name).string());
      REQUIRE_MESSAGE(a.ok(), a.status().ToString());
      return *a;
    };
    auto data = DatasetFromArrays(load("x.npy"), load("y.npy"), "random", "x.npy");
    REQUIRE(data.ok());
    data->num_classes = 10;
    const NpyArray p0 = load("params0.npy"), losses = load("losses.npy"), p100 = load("params100.npy");
    auto model = MakeModel("cnn:c8k5p2,gn4,pool2,c16k3p1,avg2,d32", data->sample_shape(), 10);
    REQUIRE(model.ok());
    ParamVector params((*model)->layout()), grad((*model)->layout());
    REQUIRE(p0.count() == static_cast<std::int64_t>(params.size()));
    for (std::size_t i = 0; i < params.size(); ++i)
      params.span()[i] = static_cast<float>(p0.At(static_cast<std::int64_t>(i)));
    auto ws = (*model)->NewWorkspace();
    std::vector<SampleIndex> batch(16);
    double worst = 0;
    for (std::int64_t k = 0; k < 100; ++k) {
      for (std::size_t i = 0; i < batch.size(); ++i)
        batch[i] = static_cast<SampleIndex>(k * 16 + static_cast<std::int64_t>(i));
      const double loss = (*model)->LossAndGradient(params, *data, batch, grad, *ws);
      worst = std::max(worst, std::abs(loss - losses.At(k)) / losses.At(k));
      params.vec() -= 0.05f * grad.vec();
    }
    CHECK(worst < 1e-4);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double want = p100.At(static_cast<std::int64_t>(i));
      diff += std::pow(params.span()[i] - want, 2);
      norm += want * want;
    }
    CHECK(std::sqrt(diff / norm) < 1e-4);
    MESSAGE("worst relative loss difference ", worst, ", final weights ", std::sqrt(diff / norm));
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace murmur::ml
