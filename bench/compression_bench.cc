// Compression kernels on 25.6M heavy-tailed floats (Laplace; the size of
// ResNet-50), single core. Each benchmark prints its rate in elements/s beside
// the memory-read rate of a streaming sum over the same buffer measured in the
// same run ("read_floor") and the ratio of the two. Times are thread CPU time,
// so that a shared, busy build machine does not distort the ratios.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "compression/compressor.h"
#include "compression/select.h"
#include "compression/values.h"
#include "compression/zstd_frame.h"
#include "core/simd.h"

namespace murmur::compression {
namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

constexpr std::size_t kN = 25'600'000;
constexpr std::size_t kK = kN / 1000;  // 0.1% density

const std::vector<float>& Data() {
  static const std::vector<float> data = [] {
    std::vector<float> x(kN);
    Rng rng(2024);
    for (float& v : x) v = static_cast<float>(rng.Exponential(1.0) * (rng.Bernoulli(0.5) ? 1 : -1));
    return x;
  }();
  return data;
}

// Elements per second of a streaming sum over Data() (best of 5): the floor.
double ReadFloor() {
  static const double floor = [] {
    const std::vector<float>& x = Data();
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      double t0 = CpuSeconds();
      float part[16] = {};
      for (std::size_t i = 0; i + 16 <= kN; i += 16)
        for (int l = 0; l < 16; ++l) part[l] += x[i + l];
      float s = 0;
      for (float p : part) s += p;
      benchmark::DoNotOptimize(s);
      double sec = CpuSeconds() - t0;
      best = std::max(best, kN / sec);
    }
    return best;
  }();
  return floor;
}

// Runs body once per iteration, timing it, and reports rate, floor and ratio.
template <typename Body>
void Run(benchmark::State& state, Body body) {
  const double floor = ReadFloor();
  double seconds = 0;
  for (auto _ : state) {
    double t0 = CpuSeconds();
    body();
    seconds += CpuSeconds() - t0;
  }
  const double n = static_cast<double>(state.iterations()) * kN;
  state.counters["elem/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
  state.counters["read_floor"] = floor;
  state.counters["of_floor"] = (n / seconds) / floor;
}

void BM_MemoryRead(benchmark::State& state) {
  const std::vector<float>& x = Data();
  Run(state, [&] {
    float part[16] = {};
    for (std::size_t i = 0; i + 16 <= kN; i += 16)
      for (int l = 0; l < 16; ++l) part[l] += x[i + l];
    benchmark::DoNotOptimize(part);
  });
}

void BM_NthElementBaseline(benchmark::State& state) {
  const std::vector<float>& x = Data();
  std::vector<float> mags(kN);
  Run(state, [&] {
    for (std::size_t i = 0; i < kN; ++i) mags[i] = std::fabs(x[i]);
    std::nth_element(mags.begin(), mags.begin() + kK, mags.end(), std::greater<float>());
    benchmark::DoNotOptimize(mags[kK]);
  });
}

void BM_TopKExact(benchmark::State& state) {
  std::vector<std::uint32_t> idx;
  Run(state, [&] { TopKExact(Data(), kK, idx); });
}

void BM_TopKApprox(benchmark::State& state) {
  std::vector<std::uint32_t> idx;
  Rng rng(1);
  Run(state, [&] { TopKApprox(Data(), kK, rng, idx); });
}

// Error feedback + top-k + fp32 values, fused: r += x inside the histogram
// pass, the sent entries of r zeroed in place.
void BM_ErrorFeedbackTopKFused(benchmark::State& state) {
  const std::vector<float>& x = Data();
  std::vector<float> r(kN, 0.0f);
  std::vector<std::uint32_t> idx;
  Run(state, [&] {
    TopKExactAccumulate(r, x, kK, idx);
    std::vector<float> vals(idx.size());
    for (std::size_t j = 0; j < idx.size(); ++j) vals[j] = r[idx[j]], r[idx[j]] = 0.0f;
    benchmark::DoNotOptimize(vals.data());
  });
}

// The same done the textbook way: acc = e + x, top-k of acc, decompress the
// sent update into a dense vector, e = acc - dense.
void BM_ErrorFeedbackTopKDecompressSubtract(benchmark::State& state) {
  const std::vector<float>& x = Data();
  std::vector<float> e(kN, 0.0f), acc(kN), dense(kN);
  std::vector<std::uint32_t> idx;
  Run(state, [&] {
    for (std::size_t i = 0; i < kN; ++i) acc[i] = e[i] + x[i];
    TopKExact(acc, kK, idx);
    std::vector<float> vals(idx.size());
    for (std::size_t j = 0; j < idx.size(); ++j) vals[j] = acc[idx[j]];
    std::fill(dense.begin(), dense.end(), 0.0f);
    for (std::size_t j = 0; j < idx.size(); ++j) dense[idx[j]] = vals[j];
    for (std::size_t i = 0; i < kN; ++i) e[i] = acc[i] - dense[i];
    benchmark::DoNotOptimize(e.data());
  });
}

void BM_SignPack(benchmark::State& state) {
  Run(state, [&] { benchmark::DoNotOptimize(PackValues(Data(), {}, {ValueType::kSign, 0, 0}, 1)); });
}

void BM_Int8StochasticPack(benchmark::State& state) {
  Run(state, [&] { benchmark::DoNotOptimize(PackValues(Data(), {}, {ValueType::kInt8, 256, 0}, 1)); });
}

// The dispatched kernels (compression/simd.h) at each SIMD level the CPU
// has, capped with CapSimd: the rate and its ratio to the scalar level's,
// measured just before in the same run (levels run in order 0, 1, 2).
template <typename Body>
void RunAtLevel(benchmark::State& state, double* scalar_rate, Body body) {
  const auto level = static_cast<SimdLevel>(state.range(0));
  if (level > SupportedSimd()) {
    state.SkipWithError("this CPU lacks the level");
    return;
  }
  Data();  // made before the clock starts
  const SimdLevel previous = CapSimd(level);
  double seconds = 0;
  for (auto _ : state) {
    double t0 = CpuSeconds();
    body();
    seconds += CpuSeconds() - t0;
  }
  CapSimd(previous);
  const double rate = static_cast<double>(state.iterations()) * kN / seconds;
  if (level == SimdLevel::kGeneric) *scalar_rate = rate;
  state.SetLabel(std::string(SimdName(level)));
  state.counters["elem/s"] = rate;
  state.counters["vs_scalar"] = *scalar_rate > 0 ? rate / *scalar_rate : 0.0;
}

// PackValues with `coding`; each coding keeps its own scalar rate.
void BM_LevelPack(benchmark::State& state, ValueCoding coding) {
  static std::map<ValueType, double> scalar;
  RunAtLevel(state, &scalar[coding.type],
             [&] { benchmark::DoNotOptimize(PackValues(Data(), {}, coding, 1)); });
}

void BM_LevelThresholdSelect(benchmark::State& state) {
  static double scalar = 0;
  std::vector<std::uint32_t> idx;
  RunAtLevel(state, &scalar, [&] { ThresholdSelect(Data(), 6.9f, idx); });  // about 0.1% of Laplace(1)
}

void BM_Compressor(benchmark::State& state, const char* spec) {
  auto c = std::move(MakeCompressor(spec)).value();
  CompressorState s;
  Rng rng(3);
  Run(state, [&] { benchmark::DoNotOptimize(c->Compress(Data(), Layout(), s, rng)); });
}

// zstd (level 3) over an update's wire encoding: does it pay? Reports the
// encoded bytes, the zstd frame's bytes and their ratio, and zstd's speed.
void BM_ZstdOnTop(benchmark::State& state, const char* spec) {
  auto c = std::move(MakeCompressor(spec)).value();
  CompressorState s;
  Rng rng(3);
  std::vector<std::uint8_t> wire;
  c->Compress(Data(), Layout(), s, rng)->Encode(wire);
  std::size_t zstd_bytes = 0;
  for (auto _ : state) {
    auto frame = ZstdCompress(wire, 3);
    zstd_bytes = frame.size();
    benchmark::DoNotOptimize(frame);
  }
  state.counters["wire_bytes"] = static_cast<double>(wire.size());
  state.counters["zstd_bytes"] = static_cast<double>(zstd_bytes);
  state.counters["zstd_saves"] = 1.0 - static_cast<double>(zstd_bytes) / static_cast<double>(wire.size());
  state.counters["MB/s"] =
      benchmark::Counter(static_cast<double>(wire.size()) * static_cast<double>(state.iterations()) / 1e6,
                         benchmark::Counter::kIsRate);
}

BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NthElementBaseline)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopKExact)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopKApprox)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ErrorFeedbackTopKFused)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ErrorFeedbackTopKDecompressSubtract)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SignPack)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Int8StochasticPack)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LevelPack, sign, ValueCoding{ValueType::kSign, 0, 0})
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LevelPack, int8, ValueCoding{ValueType::kInt8, 256, 0})
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_LevelPack, fp16, ValueCoding{ValueType::kF16, 0, 0})
    ->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LevelThresholdSelect)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compressor, topk_0_001_fp16_ef, "topk:0.001:fp16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compressor, sign_ef, "sign")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compressor, qsgd_16, "qsgd:16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, none, "none")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, topk_0_001, "topk:0.001")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, topk_0_01_fp16, "topk:0.01:fp16")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, int8, "int8")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, sign, "sign")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ZstdOnTop, qsgd_16, "qsgd:16")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace murmur::compression

BENCHMARK_MAIN();
