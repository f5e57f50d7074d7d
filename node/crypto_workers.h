// CryptoWorkers: threads that seal the frames of a write batch beside the io
// thread (fork-join within one batch).
//
// The io thread takes every frame's key and nonce from the channel in order
// (crypto::SecureChannel::TakeSealSlot) and places every frame in the batch
// before any is sealed; the frames are then sealed in any order on any
// thread, each into its own place. So the wire order, the nonces (one per
// frame, never repeated) and the bytes are exactly those of sealing on the
// io thread alone; only the time differs. ParallelFor returns when all are
// sealed, and the batch is written as one.
//
// With `threads` workers, ParallelFor runs on threads + 1 threads (the caller
// takes part). Zero workers: everything runs on the caller.
//
// Thread-safety: ParallelFor is called by one thread at a time (the io thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace murmur::node {

class CryptoWorkers {
 public:
  explicit CryptoWorkers(int threads);
  ~CryptoWorkers();
  CryptoWorkers(const CryptoWorkers&) = delete;
  CryptoWorkers& operator=(const CryptoWorkers&) = delete;

  // Runs fn(i) for every i in [0, n) and returns when all have finished.
  void ParallelFor(std::size_t n, const std::function<void(std::size_t)>& fn);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Work();
  // Runs items of the job (fn, n) until none is left.
  void Drain(const std::function<void(std::size_t)>* fn, std::size_t n);

  std::mutex mu_;
  std::condition_variable start_;                         // a job was posted, or stopping
  std::condition_variable done_;                          // the last item of a job finished
  const std::function<void(std::size_t)>* fn_ = nullptr;  // guarded by mu_
  std::size_t n_ = 0;                                     // items of the current job
  std::uint64_t generation_ = 0;                          // jobs posted; guarded by mu_
  std::atomic<std::size_t> next_{0};                      // next item to take
  std::size_t finished_ = 0;                              // items done; guarded by mu_
  int active_ = 0;                                        // workers inside a job; guarded by mu_
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// The default number of crypto workers on a machine with `cores` hardware
// threads (see TransportOptions::crypto_threads).
int DefaultCryptoThreads(unsigned cores);

}  // namespace murmur::node
