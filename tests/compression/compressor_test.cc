#include "compression/compressor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "compression/select.h"

namespace murmur::compression {
namespace {

std::unique_ptr<Compressor> Make(const std::string& spec) {
  Result<std::unique_ptr<Compressor>> c = MakeCompressor(spec);
  REQUIRE_MESSAGE(c.ok(), c.status().ToString());
  return std::move(c).value();
}

std::vector<float> Gaussian(std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(rng.Normal());
  return x;
}

const char* kAllSpecs[] = {"none",
                           "fp16",
                           "bf16",
                           "int8",
                           "int8:64",
                           "topk:0.01",
                           "topk:0.01:fp16",
                           "topk:0.01:int8",
                           "topk:0.05:bf16:per-tensor",
                           "topk-approx:0.01",
                           "randk:0.01",
                           "randk:0.01:unbiased",
                           "threshold:1.5",
                           "qsgd:16",
                           "qsgd:127",
                           "sign",
                           "terngrad",
                           "powersgd:2",
                           "topk:0.01,dgc",
                           "topk:25,no-ef",
                           "sign,no-ef",
                           "fp16,ef"};

Layout TestLayout() {
  Layout l;
  l.Add("conv", {16, 3, 3, 3});  // 16 x 27
  l.Add("bias", {16});
  l.Add("fc", {40, 30});
  return l;
}

TEST_CASE("Every compressor's EncodedSize is its encoding, and the encoding decodes to the same update") {
  Layout layout = TestLayout();
  for (const char* spec : kAllSpecs) {
    std::string spec_name = spec;
    CAPTURE(spec_name);
    auto c = Make(spec);
    CompressorState state;
    state.node = 9;
    Rng rng(5, 9, RngPurpose::kCompression);
    for (int round = 0; round < 3; ++round) {
      std::vector<float> x = Gaussian(layout.total_size(), 10 + round);
      std::shared_ptr<const Update> u = c->Compress(x, layout, state, rng);
      std::vector<std::uint8_t> bytes;
      u->Encode(bytes);
      REQUIRE(bytes.size() == u->EncodedSize());
      Result<Update> d = Update::Decode(bytes);
      REQUIRE_MESSAGE(d.ok(), d.status().ToString());
      REQUIRE(*d == *u);
      std::vector<float> a(x.size(), 1.0f), b(x.size(), 1.0f);
      REQUIRE(AddTo(*u, a, 0.5f).ok());
      REQUIRE(d->AddTo(b, 0.5f).ok());
      REQUIRE(a == b);
    }
    std::vector<float> wrong(3);
    CHECK(c->Compress(Gaussian(layout.total_size(), 1), layout, state, rng)->AddTo(wrong).code() ==
          StatusCode::kInvalidArgument);
  }
}

TEST_CASE("Lossless round trips are exact") {
  std::vector<float> x = Gaussian(1000, 3);
  x[7] = 0.0f, x[8] = -0.0f, x[9] = 1e-42f;  // zeros and a subnormal
  CompressorState state;
  Rng rng(1);
  std::vector<float> out(x.size(), 0.0f);
  REQUIRE(AddTo(*Make("none")->Compress(x, Layout(), state, rng), out).ok());
  for (std::size_t i = 0; i < x.size(); ++i)
    REQUIRE(std::bit_cast<std::uint32_t>(out[i] + 0.0f) == std::bit_cast<std::uint32_t>(x[i] + 0.0f));
  // Values exactly representable in fp16 and bf16: small multiples of powers of two.
  std::vector<float> y(4096);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] =
        static_cast<float>(static_cast<int>(i % 255) - 127) * std::ldexp(1.0f, static_cast<int>(i % 20) - 10);
  for (const char* spec : {"fp16", "bf16"}) {
    std::string spec_name = spec;
    CAPTURE(spec_name);
    std::vector<float> z(y.size(), 0.0f);
    REQUIRE(AddTo(*Make(spec)->Compress(y, Layout(), state, rng), z).ok());
    REQUIRE(z == y);
  }
  // A sparse update with fp32 values restores exactly the values it carries.
  std::shared_ptr<const Update> u = Make("topk:10,no-ef")->Compress(x, Layout(), state, rng);
  for (std::size_t j = 0; j < u->indices().size(); ++j) REQUIRE(u->values().Get(j) == x[u->indices()[j]]);
}

// For an unbiased compressor Q, the mean of Q(x) over S independent seeds has
// standard deviation sqrt(Var_i / S) per coordinate; we allow 6 of them, so a
// correct implementation fails with probability < 1e-8 per coordinate.
void CheckUnbiased(const std::string& spec, const std::vector<float>& x, int seeds,
                   const std::vector<double>& variance_bound) {
  auto c = Make(spec);
  std::vector<double> mean(x.size(), 0.0);
  for (int s = 0; s < seeds; ++s) {
    CompressorState state;
    state.node = 1;
    Rng rng(static_cast<std::uint64_t>(s), 1, RngPurpose::kCompression);
    std::vector<float> out = c->Compress(x, Layout(), state, rng)->ToDense();
    for (std::size_t i = 0; i < x.size(); ++i) mean[i] += out[i] / seeds;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(mean[i] - x[i]) <= 6 * std::sqrt(variance_bound[i] / seeds) + 1e-6);
  }
}

TEST_CASE("QSGD, TernGrad, int8 and rescaled random-k are unbiased") {
  std::vector<float> x = Gaussian(64, 77);
  double norm = 0, amax = 0;
  for (float v : x) norm += double(v) * v, amax = std::max(amax, double(std::fabs(v)));
  norm = std::sqrt(norm);
  const int seeds = 4000;
  for (int s : {1, 4, 16}) {
    // Stochastic rounding between levels norm/s apart: Var <= (norm / s)^2 / 4 (Alistarh et al. 2017,
    // Lemma 3.1).
    CheckUnbiased("qsgd:" + std::to_string(s), x, seeds,
                  std::vector<double>(x.size(), norm * norm / (4.0 * s * s)));
  }
  // TernGrad: value amax * sign * Bernoulli(|x| / amax): Var = |x| (amax - |x|).
  std::vector<double> tern(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) tern[i] = std::fabs(x[i]) * (amax - std::fabs(x[i]));
  CheckUnbiased("terngrad", x, seeds, tern);
  // int8 with one block: steps of amax / 127, Var <= (amax / 127)^2 / 4.
  CheckUnbiased("int8", x, seeds, std::vector<double>(x.size(), amax * amax / (4 * 127.0 * 127.0)));
  // Random-k, k of d kept and scaled by d / k: Var = x^2 (d / k - 1).
  std::vector<double> rk(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) rk[i] = double(x[i]) * x[i] * (64.0 / 8 - 1);
  CheckUnbiased("randk:8:unbiased", x, seeds, rk);
}

// Error feedback conserves mass: sent + e_new == e_old + x. acc = fl(e_old + x)
// is formed once; fp32 selection sends acc or leaves it, so equality is exact
// there. A quantized value q leaves e_new = fl(acc - q), off by at most half an
// ulp of |acc - q|, so |q + e_new - acc| <= 2^-24 |acc - q| in exact arithmetic.
TEST_CASE("Error feedback conserves mass") {
  Layout layout = TestLayout();
  for (const char* spec : {"topk:0.01", "topk:0.01:fp16", "topk:0.01:int8", "topk-approx:0.02", "threshold:1",
                           "randk:0.1", "sign", "fp16,ef", "int8,ef", "qsgd:4,ef", "terngrad,ef",
                           "topk:0.05:bf16:per-tensor", "powersgd:2"}) {
    std::string spec_name = spec;
    CAPTURE(spec_name);
    auto c = Make(spec);
    REQUIRE(c->error_feedback());
    CompressorState state;
    Rng rng(3);
    for (int round = 0; round < 4; ++round) {
      CAPTURE(round);
      std::vector<float> x = Gaussian(layout.total_size(), 40 + round);
      std::vector<float> e_old = state.residual;
      e_old.resize(x.size(), 0.0f);
      std::vector<float> sent = c->Compress(x, layout, state, rng)->ToDense();
      // fp32 sparsifiers send acc itself: exact.
      const bool exact = spec_name == "topk:0.01" || spec_name == "topk-approx:0.02" ||
                         spec_name == "threshold:1" || spec_name == "randk:0.1";
      double total_err = 0, total = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        float acc = e_old[i] + x[i];
        double err = double(sent[i]) + double(state.residual[i]) - double(acc);
        if (exact)
          REQUIRE(err == 0.0);
        else if (spec[0] != 'p')
          REQUIRE(std::fabs(err) <= 0x1p-24 * std::fabs(double(acc) - sent[i]) + 1e-45);
        total_err += err * err, total += double(acc) * acc;
      }
      // PowerSGD: e = M - P Q^T and the receiver's P Q^T are separate float
      // products of rank-2 sums; their difference is a few ulps of the entries.
      if (spec[0] == 'p') CHECK(std::sqrt(total_err / total) < 1e-5);
    }
  }
}

TEST_CASE("Wire size at 0.1% density on 25.6M elements") {
  const std::size_t n = 25'600'000, k = n / 1000;
  std::vector<float> x(n);
  Rng rng(11);
  for (float& v : x) v = static_cast<float>(rng.Exponential(1.0) * (rng.Bernoulli(0.5) ? 1 : -1));
  const double dense = 4.0 * n;
  CompressorState state;
  for (const char* spec : {"topk:0.001", "topk:0.001:fp16"}) {
    std::string spec_name = spec;
    CAPTURE(spec_name);
    std::shared_ptr<const Update> u = Make(spec)->Compress(x, Layout(), state, rng);
    CHECK(u->indices().size() == k);
    double ratio = dense / static_cast<double>(u->EncodedSize());
    MESSAGE(spec << ": " << u->EncodedSize() << " bytes, " << ratio << "x smaller than dense fp32");
    CHECK(ratio >= (std::string(spec).find("fp16") != std::string::npos ? 1000.0 : 650.0));
  }
}

TEST_CASE("PowerSGD recovers a low-rank matrix and sends small tensors dense") {
  Layout layout;
  layout.Add("w", {60, 40});
  layout.Add("b", {40});
  layout.Add("tiny", {2, 2});
  std::vector<float> x(layout.total_size(), 0.0f);
  std::vector<float> a = Gaussian(60, 1), b = Gaussian(40, 2), c = Gaussian(60, 3), d = Gaussian(40, 4);
  for (int i = 0; i < 60; ++i)
    for (int j = 0; j < 40; ++j) x[i * 40 + j] = a[i] * b[j] + 0.5f * c[i] * d[j];  // rank 2
  for (int i = 0; i < 44; ++i) x[2400 + i] = static_cast<float>(i);
  CompressorState state;
  Rng rng(8);
  std::shared_ptr<const Update> u = Make("powersgd:2")->Compress(x, layout, state, rng);
  REQUIRE(u->segments().size() == 3);
  CHECK(u->segments()[0].rank == 2);
  CHECK(u->segments()[1].rank == 0);
  CHECK(u->segments()[2].rank == 0);  // 2 * (2 + 2) >= 4: no saving
  CHECK(u->EncodedSize() < 4 * x.size() / 5);
  std::vector<float> y = u->ToDense();
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) err += std::pow(y[i] - x[i], 2), norm += double(x[i]) * x[i];
  CHECK(std::sqrt(err / norm) < 1e-5);
  for (std::size_t i = 2400; i < x.size(); ++i) CHECK(y[i] == x[i]);
}

TEST_CASE("Bad specs are rejected with a Status naming the spec") {
  for (const char* spec : {"", "topk", "topk:0", "topk:-1", "topk:0.01:fp8", "qsgd", "qsgd:0", "powersgd:x",
                           "sign:3", "randk:0.1:per-tensor", "topk:0.01,xyz", "int8:0", "fp16,dgc",
                           "topk:2.5", "topk:0.01,dgc:1.5", "zip"}) {
    std::string spec_name = spec;
    CAPTURE(spec_name);
    Result<std::unique_ptr<Compressor>> c = MakeCompressor(spec);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == StatusCode::kInvalidArgument);
    std::string quoted = "\"";
    quoted.append(spec).push_back('"');
    CHECK(c.status().message().find(quoted) != std::string::npos);
  }
}

}  // namespace
}  // namespace murmur::compression
