#include "sim/ranks/thread_ranks.h"

#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>

#include "core/check.h"

namespace murmur::sim {

namespace {

// What the ranks share. Each collective deposits into the slots, meets at the
// barrier, reads, and meets again before the slots are used anew.
struct Shared {
  explicit Shared(int ranks)
      : n(ranks),
        barrier(ranks),
        i64(ranks),
        u64(ranks),
        matrix(ranks, std::vector<Bytes>(ranks)),
        slots(ranks),
        mail(ranks * ranks) {}
  int n;
  std::barrier<> barrier;
  std::vector<std::vector<std::int64_t>> i64;
  std::vector<std::vector<std::uint64_t>> u64;
  std::vector<std::vector<Bytes>> matrix;  // [from][to]
  std::vector<Bytes> slots;
  // Point to point: mail[from * n + to], guarded by mu.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::deque<Bytes>> mail;
};

class ThreadRanks final : public RankGroup {
 public:
  ThreadRanks(std::shared_ptr<Shared> shared, int rank) : s_(std::move(shared)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_->n; }

  void AllReduceMin(std::span<std::int64_t> v) override {
    Reduce(v, [](std::int64_t a, std::int64_t b) { return std::min(a, b); });
  }
  void AllReduceMax(std::span<std::int64_t> v) override {
    Reduce(v, [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
  }
  void AllReduceSum(std::span<std::uint64_t> v) override {
    s_->u64[rank_].assign(v.begin(), v.end());
    s_->barrier.arrive_and_wait();
    for (std::size_t k = 0; k < v.size(); ++k) {
      std::uint64_t sum = 0;
      for (int r = 0; r < s_->n; ++r) sum += s_->u64[r].at(k);
      v[k] = sum;
    }
    s_->barrier.arrive_and_wait();
  }

  std::vector<Bytes> AllToAll(std::vector<Bytes> out) override {
    MURMUR_CHECK(static_cast<int>(out.size()) == s_->n);
    s_->matrix[rank_] = std::move(out);
    s_->barrier.arrive_and_wait();
    std::vector<Bytes> in(s_->n);
    for (int r = 0; r < s_->n; ++r) in[r] = std::move(s_->matrix[r][rank_]);
    s_->barrier.arrive_and_wait();
    return in;
  }

  std::vector<Bytes> Gather(Bytes mine) override {
    s_->slots[rank_] = std::move(mine);
    s_->barrier.arrive_and_wait();
    std::vector<Bytes> all;
    if (rank_ == 0) {
      for (int r = 0; r < s_->n; ++r) all.push_back(std::move(s_->slots[r]));
    }
    s_->barrier.arrive_and_wait();
    return all;
  }

  Bytes Broadcast(Bytes bytes, int root) override {
    if (rank_ == root) s_->slots[root] = std::move(bytes);
    s_->barrier.arrive_and_wait();
    Bytes copy = s_->slots[root];
    s_->barrier.arrive_and_wait();
    return copy;
  }

  void Send(int to, Bytes bytes) override {
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->mail[rank_ * s_->n + to].push_back(std::move(bytes));
    }
    s_->cv.notify_all();
  }
  Bytes Recv(int from) override {
    std::unique_lock<std::mutex> lock(s_->mu);
    auto& box = s_->mail[from * s_->n + rank_];
    s_->cv.wait(lock, [&] { return !box.empty(); });
    Bytes b = std::move(box.front());
    box.pop_front();
    return b;
  }

  [[noreturn]] void Abort(const std::string& message) override {
    std::fprintf(stderr, "rank %d: %s\n", rank_, message.c_str());
    std::abort();
  }

 private:
  template <typename F>
  void Reduce(std::span<std::int64_t> v, F op) {
    s_->i64[rank_].assign(v.begin(), v.end());
    s_->barrier.arrive_and_wait();
    for (std::size_t k = 0; k < v.size(); ++k) {
      std::int64_t acc = s_->i64[0].at(k);
      for (int r = 1; r < s_->n; ++r) acc = op(acc, s_->i64[r].at(k));
      v[k] = acc;
    }
    s_->barrier.arrive_and_wait();
  }

  std::shared_ptr<Shared> s_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<RankGroup>> MakeThreadRanks(int n) {
  MURMUR_CHECK(n >= 1);
  auto shared = std::make_shared<Shared>(n);
  std::vector<std::unique_ptr<RankGroup>> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(std::make_unique<ThreadRanks>(shared, r));
  return ranks;
}

}  // namespace murmur::sim
