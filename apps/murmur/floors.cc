// Floors for `murmur bench`: the FMA peak, GEMM rate and memory bandwidth, measured in the same run.
#include <algorithm>
#include <cmath>
#include <vector>

#include "apps/murmur/bench.h"
#include "core/param_vector.h"
#include "core/rng.h"
#include "core/simd.h"
#include "core/thread_pool.h"
#include "ml/ml_learner.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace murmur::cli {

double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double GemmRate(std::int64_t m, std::int64_t k, std::int64_t n, int threads, double seconds) {
  struct Operands {
    RowMatrixXf a, b, c;
  };
  std::vector<Operands> ops(static_cast<std::size_t>(threads));
  for (auto& o : ops) {
    o.a = RowMatrixXf::Random(m, k);
    o.b = RowMatrixXf::Random(k, n);
    o.c = RowMatrixXf::Zero(m, n);
  }
  auto multiply = [&](Operands& o) {
    Gemm(MatrixView::RowMajor(o.a.data(), m, k), MatrixView::RowMajor(o.b.data(), k, n), o.c.data(), n,
         GemmMode::kSet);
  };
  // Calibrate the repetitions on one thread, then run them on every thread at once.
  auto start = std::chrono::steady_clock::now();
  std::int64_t reps = 0;
  while (SecondsSince(start) < seconds / 4) {
    multiply(ops[0]);
    ++reps;
  }
  reps = std::max<std::int64_t>(1, reps * 4);
  ThreadPool pool(threads);
  start = std::chrono::steady_clock::now();
  pool.ParallelFor(static_cast<std::size_t>(threads), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t)
      for (std::int64_t r = 0; r < reps; ++r) multiply(ops[t]);
  });
  double elapsed = SecondsSince(start);
  return 2.0 * static_cast<double>(m * k * n) * static_cast<double>(reps) * threads / elapsed / 1e9;
}

double ProductRate(double flops, double seconds, const std::function<void()>& run) {
  run();
  auto start = std::chrono::steady_clock::now();
  std::int64_t reps = 0;
  do {
    run();
    ++reps;
  } while (SecondsSince(start) < seconds);
  return flops * static_cast<double>(reps) / SecondsSince(start) / 1e9;
}

namespace {

// Each loop runs `iters` steps of its chains acc = acc * a + b (a just below
// 1, so the values settle near b / (1 - a) and never turn subnormal) and
// returns a sum of them, so that nothing is left out.
constexpr float kA = 0.999f, kB = 0.001f;

#if defined(__x86_64__)
MURMUR_TARGET_AVX512 float FmaChainsAvx512(std::int64_t iters) {
  constexpr int kChains = 24;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(kA), b = _mm512_set1_ps(kB);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  return _mm512_reduce_add_ps(total);
}

MURMUR_TARGET_AVX2 float FmaChainsAvx2(std::int64_t iters) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c));
  const __m256 a = _mm256_set1_ps(kA), b = _mm256_set1_ps(kB);
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 total = acc[0];
  for (int c = 1; c < kChains; ++c) total = _mm256_add_ps(total, acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}
#endif

float FmaChainsScalar(std::int64_t iters) {
  constexpr int kChains = 8;
  float acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = static_cast<float>(c);
  for (std::int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = std::fma(acc[c], kA, kB);
  float sum = 0;
  for (float v : acc) sum += v;
  return sum;
}

// Runs `iters` steps at `level`; returns the FLOPs done.
double FmaChains(SimdLevel level, std::int64_t iters, volatile float* sink) {
  switch (level) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512:
      *sink = FmaChainsAvx512(iters);
      return 2.0 * 16 * 24 * static_cast<double>(iters);
    case SimdLevel::kAvx2: *sink = FmaChainsAvx2(iters); return 2.0 * 8 * 12 * static_cast<double>(iters);
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  *sink = FmaChainsScalar(iters);
  return 2.0 * 8 * static_cast<double>(iters);
}

}  // namespace

double FmaPeak(double seconds) {
  const SimdLevel level = SupportedSimd();
  volatile float sink = 0;
  // Steps of about a millisecond each, the fastest of as many as fit.
  std::int64_t iters = 1024;
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    FmaChains(level, iters, &sink);
    if (SecondsSince(start) > 1e-3) break;
    iters *= 2;
  }
  double best = 0;
  const auto start = std::chrono::steady_clock::now();
  do {
    const auto begin = std::chrono::steady_clock::now();
    const double flops = FmaChains(level, iters, &sink);
    best = std::max(best, flops / SecondsSince(begin) / 1e9);
  } while (SecondsSince(start) < seconds);
  return best;
}

double NodeStepRate(const ml::Model& model, const ml::Dataset& data, int nodes, int batch, double seconds) {
  std::vector<ParamVector> params;
  Rng init(1, 0, RngPurpose::kInit);
  for (int i = 0; i < nodes; ++i) {
    params.emplace_back(model.layout());
    model.InitParams(params.back(), init);
  }
  const std::vector<ml::SampleIndex> all = ml::AllIndices(data);
  ml::MlLearnerOptions options;
  options.batch = batch;
  options.lr = 0.01;
  ml::MlLearner learner(model, data, all, options, Rng(2, 0, RngPurpose::kBatch));
  for (ParamVector& p : params) learner.Train(p, 1);  // warm-up: the thread's workspace
  std::int64_t steps = 0;
  const auto start = std::chrono::steady_clock::now();
  do {
    for (ParamVector& p : params) learner.Train(p, 1);
    steps += nodes;
  } while (SecondsSince(start) < seconds);
  return static_cast<double>(steps) * batch * model.FlopsPerSample() / SecondsSince(start) / 1e9;
}

namespace {
// 64 MiB per thread: well past any cache here.
constexpr std::size_t kStreamFloats = std::size_t{16} << 20;

// Runs `pass(buffers of thread t)` repeatedly on every thread for about
// `seconds`; returns passes per second summed over threads.
template <typename Pass>
double StreamRate(int threads, double seconds, int vectors, Pass pass) {
  std::vector<std::vector<Eigen::VectorXf>> bufs(static_cast<std::size_t>(threads));
  for (auto& b : bufs)
    for (int v = 0; v < vectors; ++v) b.push_back(Eigen::VectorXf::Constant(kStreamFloats, 1.0f));
  std::vector<double> sink(static_cast<std::size_t>(threads), 0);
  auto start = std::chrono::steady_clock::now();
  std::int64_t reps = 0;
  while (SecondsSince(start) < seconds / 4) {
    sink[0] += pass(bufs[0]);
    ++reps;
  }
  reps = std::max<std::int64_t>(1, reps * 2);
  ThreadPool pool(threads);
  start = std::chrono::steady_clock::now();
  pool.ParallelFor(static_cast<std::size_t>(threads), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t)
      for (std::int64_t r = 0; r < reps; ++r) sink[t] += pass(bufs[t]);
  });
  double elapsed = SecondsSince(start);
  volatile double keep = sink[0];
  (void)keep;
  return static_cast<double>(reps) * threads / elapsed;
}
}  // namespace

double MemoryReadRate(int threads, double seconds) {
  double passes = StreamRate(threads, seconds, 1,
                             [](std::vector<Eigen::VectorXf>& b) { return static_cast<double>(b[0].sum()); });
  return passes * kStreamFloats * sizeof(float) / 1e9;
}

double AxpyRate(int threads, double seconds) {
  double passes = StreamRate(threads, seconds, 2, [](std::vector<Eigen::VectorXf>& b) {
    b[1].noalias() += 0.5f * b[0];
    return static_cast<double>(b[1][0]);
  });
  return passes * kStreamFloats * sizeof(float) * 3 / 1e9;  // read x, read y, write y
}

}  // namespace murmur::cli
