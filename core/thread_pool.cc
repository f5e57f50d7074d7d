#include "core/thread_pool.h"

#include "core/check.h"

namespace murmur {

int HardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks(const std::function<void(std::size_t, std::size_t)>& fn, std::size_t n,
                           std::size_t grain) {
  std::size_t chunks = (n + grain - 1) / grain;
  for (;;) {
    std::size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks) return;
    std::size_t begin = c * grain;
    std::size_t end = begin + grain < n ? begin + grain : n;
    fn(begin, end);
  }
}

// Every worker takes part in every loop (possibly finding no chunk left), and
// the caller waits for all of them, so no worker can carry one loop's state
// into the next.
void ThreadPool::WorkerLoop() {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* fn;
    std::size_t n, grain;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
      grain = grain_;
    }
    RunChunks(*fn, n, grain);
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = ++finished_ == workers_.size();
    }
    if (last) done_cv_.notify_one();
  }
}

void ThreadPool::ParallelFor(std::size_t n, std::size_t grain,
                             const std::function<void(std::size_t, std::size_t)>& fn) {
  MURMUR_CHECK(grain > 0);
  if (n == 0) return;
  if (workers_.empty() || n <= grain) {
    for (std::size_t b = 0; b < n; b += grain) fn(b, b + grain < n ? b + grain : n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    grain_ = grain;
    finished_ = 0;
    next_chunk_.store(0, std::memory_order_relaxed);
    ++generation_;
  }
  work_cv_.notify_all();
  RunChunks(fn, n, grain);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return finished_ == workers_.size(); });
  fn_ = nullptr;
}

}  // namespace murmur
