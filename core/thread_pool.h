// ThreadPool: a fixed set of worker threads for data-parallel loops whose
// results do not depend on the number of threads.
//
// Determinism comes from the partition, not the scheduling: ParallelFor splits
// [0, n) into chunks of a fixed `grain` chosen by the caller, independent of
// the thread count, and ParallelReduce combines the per-chunk results in chunk
// order. Any thread may run any chunk; the answer is the same bit for bit.
//
// Thread-safety: one caller at a time issues loops (the caller's thread joins
// in the work). Loops must not be nested on the same pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace murmur {

class ThreadPool {
 public:
  // `num_threads` <= 1 runs every loop on the calling thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Number of threads that run loops, the caller included.
  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) for the chunks [0, grain), [grain, 2 grain), ... of
  // [0, n), in parallel; returns when all are done. REQUIRES: grain > 0.
  void ParallelFor(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn);

  // Maps each chunk to a T with `map(begin, end)` and folds the chunk results
  // left to right in chunk order with `combine`, starting from `init`.
  template <typename T, typename Map, typename Combine>
  T ParallelReduce(std::size_t n, std::size_t grain, T init, Map map, Combine combine) {
    std::size_t chunks = grain == 0 ? 0 : (n + grain - 1) / grain;
    std::vector<T> partial(chunks, init);
    ParallelFor(n, grain, [&](std::size_t b, std::size_t e) { partial[b / grain] = map(b, e); });
    T acc = init;
    for (auto& p : partial) acc = combine(acc, p);
    return acc;
  }

 private:
  void WorkerLoop();
  void RunChunks(const std::function<void(std::size_t, std::size_t)>& fn, std::size_t n, std::size_t grain);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // Guarded by mu_: the current loop, its generation, and shutdown.
  const std::function<void(std::size_t, std::size_t)>* fn_ = nullptr;
  std::size_t n_ = 0;
  std::size_t grain_ = 1;
  std::uint64_t generation_ = 0;
  std::size_t finished_ = 0;  // workers done with the current generation
  bool stop_ = false;
  std::atomic<std::size_t> next_chunk_{0};
};

// Threads available to this process (at least 1).
int HardwareThreads();

}  // namespace murmur
