#include "node/crypto_workers.h"

#include <algorithm>

#include "core/status.h"

namespace murmur::node {

CryptoWorkers::CryptoWorkers(int threads) {
  MURMUR_CHECK(threads >= 0);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
}

CryptoWorkers::~CryptoWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : threads_) t.join();
}

void CryptoWorkers::Drain(const std::function<void(std::size_t)>* fn, std::size_t n) {
  std::size_t mine = 0;
  for (std::size_t i = next_.fetch_add(1); i < n; i = next_.fetch_add(1)) {
    (*fn)(i);
    ++mine;
  }
  std::lock_guard<std::mutex> lock(mu_);
  finished_ += mine;
  if (finished_ == n) done_.notify_all();
}

void CryptoWorkers::Work() {
  std::uint64_t seen = 0;
  while (true) {
    const std::function<void(std::size_t)>* fn = nullptr;
    std::size_t n = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
      ++active_;
    }
    // A worker that wakes after its job finished finds next_ >= n and calls nothing.
    Drain(fn, n);
    std::lock_guard<std::mutex> lock(mu_);
    if (--active_ == 0) done_.notify_all();
  }
}

void CryptoWorkers::ParallelFor(std::size_t n, const std::function<void(std::size_t)>& fn) {
  if (n == 0) return;
  if (threads_.empty() || n == 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    // No worker may still be inside the previous job when next_ is reset.
    done_.wait(lock, [&] { return active_ == 0; });
    fn_ = &fn;
    n_ = n;
    finished_ = 0;
    next_.store(0);
    ++generation_;
  }
  start_.notify_all();
  Drain(&fn, n);
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == n; });
}

int DefaultCryptoThreads(unsigned cores) {
  return cores >= 4 ? static_cast<int>(std::min(2u, cores - 1)) : 0;
}

}  // namespace murmur::node
