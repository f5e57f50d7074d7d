#include "core/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "core/rng.h"

namespace murmur {
namespace {

// A float sum depends on the order of additions; the pool's reduction must
// give the same bits for every thread count.
float SumWithThreads(const std::vector<float>& x, int threads) {
  ThreadPool pool(threads);
  return pool.ParallelReduce(
      x.size(), 1000, 0.0f,
      [&](std::size_t b, std::size_t e) {
        float s = 0;
        for (std::size_t i = b; i < e; ++i) s += x[i];
        return s;
      },
      [](float a, float b) { return a + b; });
}

TEST_CASE("ParallelReduce is bit-identical for 1, 2, 3 and 8 threads") {
  Rng rng(11);
  std::vector<float> x(100003);
  for (auto& v : x) v = static_cast<float>(rng.Normal() * 1e3);
  float s1 = SumWithThreads(x, 1);
  for (int t : {2, 3, 8}) {
    CAPTURE(t);
    float st = SumWithThreads(x, t);
    CHECK(std::memcmp(&s1, &st, sizeof(float)) == 0);
  }
  // And it equals the sequential chunked sum computed by hand.
  float ref = 0;
  for (std::size_t b = 0; b < x.size(); b += 1000) {
    float s = 0;
    for (std::size_t i = b; i < std::min(b + 1000, x.size()); ++i) s += x[i];
    ref += s;
  }
  CHECK(std::memcmp(&s1, &ref, sizeof(float)) == 0);
}

TEST_CASE("ParallelFor visits every index exactly once, across many loops") {
  ThreadPool pool(4);
  CHECK(pool.num_threads() == 4);
  for (int loop = 0; loop < 200; ++loop) {
    std::size_t n = 1 + static_cast<std::size_t>(loop) * 37;
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, 7, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) hits[i].fetch_add(1);
    });
    for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
  }
  pool.ParallelFor(0, 1, [](std::size_t, std::size_t) { FAIL("no chunk for n = 0"); });
}

}  // namespace
}  // namespace murmur
