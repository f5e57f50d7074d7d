// Floors for `murmur bench`: GEMM rate and memory bandwidth, measured in the same run.
#include <algorithm>
#include <vector>

#include "apps/murmur/bench.h"
#include "core/param_vector.h"
#include "core/thread_pool.h"

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
  // Calibrate the repetitions on one thread, then run them on every thread at once.
  auto start = std::chrono::steady_clock::now();
  std::int64_t reps = 0;
  while (SecondsSince(start) < seconds / 4) {
    ops[0].c.noalias() = ops[0].a * ops[0].b;
    ++reps;
  }
  reps = std::max<std::int64_t>(1, reps * 4);
  ThreadPool pool(threads);
  start = std::chrono::steady_clock::now();
  pool.ParallelFor(static_cast<std::size_t>(threads), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t t = b; t < e; ++t)
      for (std::int64_t r = 0; r < reps; ++r) ops[t].c.noalias() = ops[t].a * ops[t].b;
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
