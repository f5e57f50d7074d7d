// The GPU compressors against the CPU ones (compression/cuda/gpu.h): the
// same spec, input, state and seed must give the same wire bytes, the same
// residual and the same Rng position, on random and adversarial inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "compression/cuda/gpu.h"
#include "compression/select.h"
#include "compression/update.h"

std::string MurmurTestSkipReason() {
  murmur::Status st = murmur::compression::cuda::DeviceStatus();
  return st.ok() ? std::string() : "no GPU: " + st.message();
}

namespace murmur::compression {
namespace {

using cuda::DeviceBuffer;
using cuda::GpuCompressor;
using cuda::GpuState;

std::vector<float> Gaussian(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

std::vector<std::uint8_t> Bytes(const Update& u) {
  std::vector<std::uint8_t> b;
  u.Encode(b);
  return b;
}

// Bit for bit, except that any NaN equals any NaN: after arithmetic the GPU
// returns the canonical NaN where x86 keeps the operand's payload.
bool SameFloats(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], 4) != 0) return false;
  }
  return true;
}

DeviceBuffer Device(std::span<const float> host) {
  DeviceBuffer d = DeviceBuffer::Make(host.size()).value();
  d.Upload(host);
  return d;
}

std::vector<float> Host(const DeviceBuffer& d) {
  std::vector<float> h(d.size());
  d.Download(h);
  return h;
}

// Runs `spec` on the CPU and the GPU over the given rounds of input and
// checks bytes, residuals and Rng positions after every round. With
// nan_payloads, NaN values are compared as NaNs (decoded), not as bits.
void ExpectSameAsCpu(const std::string& spec, const std::vector<std::vector<float>>& rounds,
                     bool nan_payloads = false) {
  auto cpu = MakeCompressor(spec).value();
  auto gpu = GpuCompressor::Make(*cpu).value();
  CompressorState cs;
  cs.node = 7;
  GpuState gs;
  gs.node = 7;
  Rng rc(2024, 3, RngPurpose::kCompression), rg(2024, 3, RngPurpose::kCompression);
  for (std::size_t t = 0; t < rounds.size(); ++t) {
    const std::vector<float>& x = rounds[t];
    INFO("spec " << spec << ", n " << x.size() << ", round " << t);
    DeviceBuffer d = Device(x);
    auto uc = cpu->Compress(x, Layout{}, cs, rc);
    auto ug = gpu->Compress(d.data(), x.size(), gs, rg);
    if (nan_payloads) {
      CHECK(uc->format() == ug->format());
      CHECK(std::vector<std::uint32_t>(uc->indices().begin(), uc->indices().end()) ==
            std::vector<std::uint32_t>(ug->indices().begin(), ug->indices().end()));
      CHECK(SameFloats(uc->ToDense(), ug->ToDense()));
    } else {
      CHECK(Bytes(*uc) == Bytes(*ug));
    }
    CHECK(cs.round == gs.round);
    if (cpu->error_feedback()) CHECK(SameFloats(cs.residual, Host(gs.residual)));
    Rng ac = rc, ag = rg;
    CHECK(ac.NextU64() == ag.NextU64());
  }
}

const std::vector<std::string> kDenseSpecs = {
    "none",          "none,ef", "fp16",         "fp16,ef",      "bf16",       "bf16,ef", "int8",
    "int8,ef",       "int8:7",  "int8:1000,ef", "int8:4096,ef", "qsgd:1",     "qsgd:15", "qsgd:15,ef",
    "qsgd:32767,ef", "sign",    "sign,no-ef",   "terngrad",     "terngrad,ef"};
const std::vector<std::string> kSparseSpecs = {"topk:0.01",
                                               "topk:0.01,no-ef",
                                               "topk:0.01:fp16",
                                               "topk:0.001:int8",
                                               "topk:5",
                                               "topk:0.3:bf16,no-ef",
                                               "topk-approx:0.01",
                                               "topk-approx:0.001:int8",
                                               "topk-approx:0.01,no-ef",
                                               "randk:0.05",
                                               "randk:0.05:unbiased",
                                               "randk:0.1:int8,no-ef",
                                               "threshold:1.5",
                                               "threshold:0.5:bf16,no-ef"};

std::vector<std::vector<float>> Rounds(std::size_t n, std::uint64_t seed) {
  return {Gaussian(n, seed), Gaussian(n, seed + 1), Gaussian(n, seed + 2)};
}

TEST_SUITE("cuda") {
  TEST_CASE("Dense codings on the GPU send the CPU's bytes and keep its residual") {
    for (std::size_t n : {1u, 2u, 17u, 1000u, 4097u, 65539u, 300001u})
      for (const std::string& spec : kDenseSpecs) ExpectSameAsCpu(spec, Rounds(n, n));
  }

  TEST_CASE("Sparsifiers on the GPU choose the CPU's indices and send its bytes") {
    for (std::size_t n : {1u, 2u, 17u, 1000u, 4097u, 65539u, 300001u, 1000003u})
      for (const std::string& spec : kSparseSpecs) ExpectSameAsCpu(spec, Rounds(n, 3 * n));
  }

  TEST_CASE("Ties go to the lowest index on the GPU as on the CPU") {
    // All equal, and few distinct values, so that the k-th largest is tied many times.
    std::vector<float> equal(1000, 1.0f);
    ExpectSameAsCpu("topk:10", {equal, equal});
    std::mt19937 gen(5);
    std::vector<float> few(100003);
    for (float& v : few) v = static_cast<float>(static_cast<int>(gen() % 5) - 2);
    for (const char* spec :
         {"topk:0.01", "topk:0.01,no-ef", "topk-approx:0.01", "topk:777:int8", "threshold:2"})
      ExpectSameAsCpu(spec, {few, few, few});
    // Equal magnitudes of both signs: the key is |x|.
    std::vector<float> signs(4099);
    for (std::size_t i = 0; i < signs.size(); ++i) signs[i] = i % 3 == 0 ? -0.5f : 0.5f;
    ExpectSameAsCpu("topk:100,no-ef", {signs});
  }

  TEST_CASE("Zero vectors: no division by a zero scale on the GPU either") {
    std::vector<float> zeros(4097, 0.0f);
    for (const std::string& spec : kDenseSpecs) ExpectSameAsCpu(spec, {zeros, zeros});
    for (const std::string& spec : kSparseSpecs) ExpectSameAsCpu(spec, {zeros, zeros});
  }

  TEST_CASE("NaN sorts above infinity in GPU selection as on the CPU") {
    std::vector<float> x = Gaussian(70001, 11);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    x[3] = nan;
    x[500] = -nan;
    x[9000] = inf;
    x[9001] = -inf;
    x[70000] = 1e30f;
    x[12] = 7e-45f;  // subnormal
    // Without arithmetic on the values the NaN bits themselves travel: bytes equal.
    for (const char* spec :
         {"topk:0.001,no-ef", "topk:3,no-ef", "threshold:3,no-ef", "none", "topk-approx:0.01,no-ef"})
      ExpectSameAsCpu(spec, {x});
    // With error feedback (x + r) or a 16-bit coding, compare values, NaN as NaN.
    for (const char* spec : {"topk:0.001", "topk:5:fp16", "fp16,ef", "bf16", "threshold:3"})
      ExpectSameAsCpu(spec, {x, x}, true);
  }

  TEST_CASE("16-bit codings round halfway cases, subnormals and overflow as the CPU does") {
    std::vector<float> x;
    for (float v : {65504.0f, 65519.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 6.1e-5f, 1.0009765625f,
                    1.00048828125f, 3.3895314e38f, -0.0f, 1.0e-40f})
      for (float s : {1.0f, -1.0f}) x.push_back(s * v);
    for (const char* spec : {"fp16", "fp16,ef", "bf16", "bf16,ef", "topk:0.5:fp16,no-ef"})
      ExpectSameAsCpu(spec, {x, x});
  }

  TEST_CASE("Applying an update on the GPU adds what Update::AddTo adds, bit for bit") {
    const std::size_t n = 100003;
    std::vector<float> base = Gaussian(n, 99);
    std::vector<std::string> specs = kDenseSpecs;
    specs.insert(specs.end(), kSparseSpecs.begin(), kSparseSpecs.end());
    for (const std::string& spec : specs) {
      INFO("spec " << spec);
      auto cpu = MakeCompressor(spec).value();
      CompressorState cs;
      Rng rng(5);
      auto u = cpu->Compress(Gaussian(n, 100), Layout{}, cs, rng);
      for (float scale : {1.0f, 0.37f, -2.5f}) {
        std::vector<float> want = base;
        REQUIRE(u->AddTo(want, scale).ok());
        DeviceBuffer d = Device(base);
        REQUIRE(cuda::AddTo(*u, d.data(), n, scale).ok());
        CHECK(SameFloats(want, Host(d)));
      }
    }
    // A shared dense fp32 update (how gossip sends whole models).
    std::vector<float> model = Gaussian(n, 101);
    auto shared = DenseF32Update(model);
    std::vector<float> want = base;
    REQUIRE(shared->AddTo(want, 0.25f).ok());
    DeviceBuffer d = Device(base);
    REQUIRE(cuda::AddTo(*shared, d.data(), n, 0.25f).ok());
    CHECK(SameFloats(want, Host(d)));
  }

  TEST_CASE("The GPU refuses what it cannot apply, and a size mismatch, with a clear error") {
    Update low = Update::LowRank(4, {LowRankSegment{0, 4, 1, 0, 0}}, {1, 2, 3, 4});
    DeviceBuffer d = DeviceBuffer::Make(4).value();
    Status st = cuda::AddTo(low, d.data(), 4);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("low-rank") != std::string::npos);
    auto dense = DenseF32Update(std::vector<float>(5, 1.0f));
    st = cuda::AddTo(*dense, d.data(), 4);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("5 elements added to a vector of 4") != std::string::npos);
    for (const char* spec : {"powersgd:2", "topk:0.01,dgc", "topk:0.01:per-tensor"}) {
      auto cpu = MakeCompressor(spec).value();
      auto gpu = GpuCompressor::Make(*cpu);
      REQUIRE_FALSE(gpu.ok());
      CHECK(gpu.status().message().find(spec) != std::string::npos);
    }
  }

  TEST_CASE("Mixing on the GPU rounds each product and sum as gossip's MixDense does") {
    const std::size_t n = 100003;
    std::vector<float> x = Gaussian(n, 1);
    std::vector<std::vector<float>> in;
    std::vector<DeviceBuffer> din;
    std::vector<const float*> ptrs;
    const std::vector<float> w = {0.2f, 0.15f, 0.1f, 0.05f, 0.3f};
    for (std::size_t k = 0; k < w.size(); ++k) {
      in.push_back(Gaussian(n, 10 + k));
      din.push_back(Device(in.back()));
      ptrs.push_back(din.back().data());
    }
    const float own = 0.2f;
    std::vector<float> want(n);
    for (std::size_t i = 0; i < n; ++i) {
      float o = own * x[i];
      for (std::size_t k = 0; k < w.size(); ++k) o += w[k] * in[k][i];
      want[i] = o;
    }
    DeviceBuffer dx = Device(x);
    DeviceBuffer acc = DeviceBuffer::Make(n).value();
    cuda::MixDense(own, dx.data(), ptrs, w, acc.data(), n);
    CHECK(SameFloats(want, Host(acc)));
  }

  TEST_CASE("Top-k and int8 at 1 and at 2^31 - 1 elements") {
    auto info = cuda::Info().value();
    // 1 element.
    for (const char* spec : {"topk:1", "topk-approx:0.5", "int8,ef", "sign", "qsgd:3,ef"})
      ExpectSameAsCpu(spec, {{-3.0f}});
    const std::size_t n = (std::size_t{1} << 31) - 1;
    if (info.memory_bytes < (std::size_t{40} << 30)) {
      MESSAGE("2^31 - 1 elements skipped: " << info.memory_bytes << " bytes of GPU memory");
      return;
    }
    // Mostly zeros with planted values, some tied, up to the last index.
    std::vector<float> x(n, 0.0f);
    std::mt19937_64 gen(77);
    for (int j = 0; j < 20000; ++j) x[gen() % n] = static_cast<float>(1 + j % 1500) * (j % 2 ? -1.0f : 1.0f);
    x[n - 1] = 1e6f;
    std::vector<std::uint32_t> cpu_idx;
    TopKExact(x, 1000, cpu_idx);
    DeviceBuffer d = Device(x);
    auto out = cuda::DeviceIndices::Make(1000).value();
    cuda::TopKExactDevice(d.data(), n, 1000, out.data());
    CHECK(out.Download(1000) == cpu_idx);
    CHECK(cpu_idx.back() == n - 1);
    // int8 of the whole vector.
    auto cpu = MakeCompressor("int8").value();
    auto gpu = GpuCompressor::Make(*cpu).value();
    CompressorState cs;
    GpuState gs;
    Rng rc(1), rg(1);
    auto uc = cpu->Compress(x, Layout{}, cs, rc);
    auto ug = gpu->Compress(d.data(), n, gs, rg);
    CHECK(uc->values().payload == ug->values().payload);
    CHECK(uc->values().scales == ug->values().scales);
  }

}  // TEST_SUITE

}  // namespace
}  // namespace murmur::compression
