// The direct convolution kernels (ml/direct_conv.h) against the definition
// of a convolution, written here as plain loops in double precision, for
// channel counts on both sides of the kernels' 16- and 64-channel blocks,
// several kernels, paddings and image sizes; and a whole network trained
// with them against the same network on im2col and a GEMM.
#include "ml/direct_conv.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/simd.h"
#include "ml/cnn.h"
#include "ml/cnn_spec.h"
#include "ml/dataset.h"

namespace murmur::ml {
namespace {

std::vector<float> Random(std::int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.Normal());
  return v;
}

// x(c, y, x) of a C x H x W tensor, zero outside.
double At(const std::vector<float>& t, const Shape3& s, std::int64_t c, std::int64_t y, std::int64_t x) {
  if (y < 0 || y >= s.h || x < 0 || x >= s.w) return 0;
  return t[static_cast<std::size_t>((c * s.h + y) * s.w + x)];
}

// Largest |a - b| over the scale of b's largest |value|.
double RelativeError(const std::vector<float>& a, const std::vector<double>& b) {
  double err = 0, scale = 1e-30;
  for (std::size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return err / scale;
}

// Runs fn() with the kernels capped at each level this CPU supports, the
// highest first, naming the level in failures.
template <typename Fn>
void AtEveryLevel(Fn fn) {
  for (int l = static_cast<int>(SupportedSimd()); l >= 0; --l) {
    const auto level = static_cast<SimdLevel>(l);
    const std::string name(SimdName(level));
    CAPTURE(name);
    const SimdLevel previous = CapSimd(level);
    fn(level);
    CapSimd(previous);
  }
}

TEST_CASE("Direct convolution: forward, weight and input gradients match the definition") {
  struct Case {
    std::int64_t in_c, h, w, out_c, kernel, pad;
  };
  const Case cases[] = {
      {32, 14, 14, 64, 5, 2},  // cnn-fedavg's second convolution
      {6, 14, 14, 16, 5, 0},   // LeNet-5's second
      {16, 9, 11, 20, 3, 1},   // 2 vectors of channels, the second partial
      {8, 8, 8, 40, 3, 0},     // 3 vectors
      {20, 7, 6, 70, 3, 2},    // two blocks of channels: 64 and 6
      {9, 5, 5, 130, 3, 1},    // three blocks; 81-entry patches
  };
  AtEveryLevel([&](SimdLevel) {
    Rng rng(5, 0, RngPurpose::kInit);
    for (const Case& k : cases) {
      const ConvGeometry g{{k.in_c, k.h, k.w}, k.out_c, k.kernel, 1, k.pad};
      CAPTURE(k.in_c);
      CAPTURE(k.out_c);
      CAPTURE(k.kernel);
      CAPTURE(k.pad);
      REQUIRE(DirectConv::Supports(g));  // at every level: the path depends on the geometry alone
      const Shape3 in = g.in, out = g.out();
      const std::int64_t patch = g.patch(), samples = 3;
      const std::vector<float> w = Random(out.c * patch, rng), bias = Random(out.c, rng);
      std::vector<std::vector<float>> x, dy;
      for (std::int64_t i = 0; i < samples; ++i) {
        x.push_back(Random(in.size(), rng));
        dy.push_back(Random(out.size(), rng));
      }
      DirectConv d(g);
      d.PackForward(w.data());
      d.PackInputGradient(w.data());
      auto weight = [&](std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) {
        return static_cast<double>(
            w[static_cast<std::size_t>(o * patch + (c * g.kernel + i) * g.kernel + j)]);
      };
      std::vector<double> dw_ref(static_cast<std::size_t>(out.c * patch), 0.0);
      for (std::int64_t s = 0; s < samples; ++s) {
        std::vector<float> y(static_cast<std::size_t>(out.size())),
            dx(static_cast<std::size_t>(in.size()), 42.0f);
        const bool relu = s == 1;
        d.Forward(x[s].data(), bias.data(), relu, y.data());
        d.AccumulateWeightGradient(x[s].data(), dy[s].data(), s == 0);
        d.InputGradient(dy[s].data(), dx.data());
        std::vector<double> y_ref(y.size(), 0.0), dx_ref(dx.size(), 0.0);
        for (std::int64_t o = 0; o < out.c; ++o)
          for (std::int64_t oy = 0; oy < out.h; ++oy)
            for (std::int64_t ox = 0; ox < out.w; ++ox) {
              const auto at = static_cast<std::size_t>((o * out.h + oy) * out.w + ox);
              for (std::int64_t c = 0; c < in.c; ++c)
                for (std::int64_t i = 0; i < g.kernel; ++i)
                  for (std::int64_t j = 0; j < g.kernel; ++j) {
                    const std::int64_t iy = oy + i - g.pad, ix = ox + j - g.pad;
                    const double v = At(x[s], in, c, iy, ix);
                    y_ref[at] += weight(o, c, i, j) * v;
                    dw_ref[static_cast<std::size_t>(o * patch + (c * g.kernel + i) * g.kernel + j)] +=
                        dy[s][at] * v;
                    if (iy >= 0 && iy < in.h && ix >= 0 && ix < in.w)
                      dx_ref[static_cast<std::size_t>((c * in.h + iy) * in.w + ix)] +=
                          weight(o, c, i, j) * dy[s][at];
                  }
            }
        for (std::int64_t o = 0; o < out.c; ++o)
          for (std::int64_t p = 0; p < out.h * out.w; ++p) {
            double& v = y_ref[static_cast<std::size_t>(o * out.h * out.w + p)];
            v += bias[static_cast<std::size_t>(o)];
            if (relu) v = std::max(v, 0.0);
          }
        CHECK(RelativeError(y, y_ref) < 1e-5);
        CHECK(RelativeError(dx, dx_ref) < 1e-5);  // every element written: none keeps its 42
      }
      std::vector<float> dw(dw_ref.size(), 42.0f);
      d.WriteWeightGradient(dw.data());
      CHECK(RelativeError(dw, dw_ref) < 1e-5);
    }
  });
}

TEST_CASE("Every kernel level (AVX-512, AVX2, portable) computes the same bits") {
  if (SupportedSimd() == SimdLevel::kGeneric)
    MESSAGE("this CPU has no AVX2: the portable kernel is checked against the definition alone");
  // Partial tiles and channel blocks on every kernel: 4, 6 and 7 (or 14, 28)
  // positions a tile, 1 to 4 vectors of channels, two blocks.
  const ConvGeometry geometries[] = {{{32, 14, 14}, 64, 5, 1, 2},
                                     {{8, 9, 11}, 20, 3, 1, 1},
                                     {{20, 7, 6}, 70, 3, 1, 2},
                                     {{8, 8, 8}, 40, 3, 1, 0}};
  Rng rng(11, 0, RngPurpose::kInit);
  for (const ConvGeometry& g : geometries) {
    CAPTURE(g.in.c);
    CAPTURE(g.out_channels);
    const Shape3 out = g.out();
    const std::vector<float> w = Random(out.c * g.patch(), rng), bias = Random(out.c, rng);
    const std::vector<float> x = Random(g.in.size(), rng), x2 = Random(g.in.size(), rng);
    const std::vector<float> dy = Random(out.size(), rng), dy2 = Random(out.size(), rng);
    std::vector<std::vector<float>> results;
    for (int l = static_cast<int>(SupportedSimd()); l >= 0; --l) {
      const SimdLevel previous = CapSimd(static_cast<SimdLevel>(l));
      DirectConv d(g);
      CapSimd(previous);
      d.PackForward(w.data());
      d.PackInputGradient(w.data());
      std::vector<float> y(static_cast<std::size_t>(out.size())), dx(static_cast<std::size_t>(g.in.size())),
          dw(w.size());
      std::vector<float> all;
      d.Forward(x.data(), bias.data(), true, y.data());
      all.insert(all.end(), y.begin(), y.end());
      d.InputGradient(dy.data(), dx.data());
      all.insert(all.end(), dx.begin(), dx.end());
      d.AccumulateWeightGradient(x.data(), dy.data(), true);
      d.AccumulateWeightGradient(x2.data(), dy2.data(), false);
      d.WriteWeightGradient(dw.data());
      all.insert(all.end(), dw.begin(), dw.end());
      results.push_back(all);
    }
    for (std::size_t r = 1; r < results.size(); ++r) {
      CAPTURE(r);
      REQUIRE(results[0].size() == results[r].size());
      CHECK(std::memcmp(results[0].data(), results[r].data(), results[0].size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("A network on the direct kernels trains as on im2col and a GEMM") {
  // Two convolutions of 32 and 64 channels: the second runs directly where
  // the build has the kernels. Ten SGD steps on both paths from the same
  // start: every loss agrees to float rounding.
  Dataset data;
  data.name = "t";
  data.num_samples = 16;
  data.dim = 3 * 12 * 12;
  data.shape = {3, 12, 12};
  data.num_classes = 4;
  Rng rng(9, 0, RngPurpose::kInit);
  for (float v : Random(data.num_samples * data.dim, rng)) data.features.push_back(v);
  for (std::int64_t i = 0; i < data.num_samples; ++i) data.labels.push_back(static_cast<std::int32_t>(i % 4));
  REQUIRE(data.Validate().ok());
  auto options = ParseCnnSpec("cnn:c32k3p1,pool2,c64k5p2,pool2,d32", {3, 12, 12}, 4, 1 << 24);
  REQUIRE_MESSAGE(options.ok(), options.status().ToString());
  const CnnOptions direct = *options;
  CnnOptions gemm = direct;
  gemm.direct_conv = false;
  Cnn a(direct), b(gemm);
  ParamVector pa(a.layout()), pb(b.layout()), ga(a.layout()), gb(b.layout());
  Rng init(3, 0, RngPurpose::kInit);
  a.InitParams(pa, init);
  pb.vec() = pa.vec();
  auto wa = a.NewWorkspace(), wb = b.NewWorkspace();
  std::vector<SampleIndex> batch(16);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i] = static_cast<SampleIndex>(i);
  for (int step = 0; step < 10; ++step) {
    const double la = a.LossAndGradient(pa, data, batch, ga, *wa, nullptr, 0);
    const double lb = b.LossAndGradient(pb, data, batch, gb, *wb, nullptr, 0);
    CAPTURE(step);
    CHECK(la == doctest::Approx(lb).epsilon(1e-5));
    CHECK((ga.vec() - gb.vec()).norm() <= 1e-4 * gb.vec().norm());
    pa.vec() -= 0.05f * ga.vec();
    pb.vec() -= 0.05f * gb.vec();
  }
}

}  // namespace
}  // namespace murmur::ml
