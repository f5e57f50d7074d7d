#include "sim/ranks/ranks.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace murmur::sim {

namespace {

class LocalRanks final : public RankGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void AllReduceMin(std::span<std::int64_t>) override {}
  void AllReduceMax(std::span<std::int64_t>) override {}
  void AllReduceSum(std::span<std::uint64_t>) override {}
  std::vector<Bytes> AllToAll(std::vector<Bytes> out) override { return out; }
  std::vector<Bytes> Gather(Bytes mine) override {
    std::vector<Bytes> all;
    all.push_back(std::move(mine));
    return all;
  }
  Bytes Broadcast(Bytes bytes, int) override { return bytes; }
  void Send(int to, Bytes bytes) override {
    MURMUR_CHECK(to == 0);
    queue_.push_back(std::move(bytes));
  }
  Bytes Recv(int from) override {
    MURMUR_CHECK(from == 0 && !queue_.empty());
    Bytes b = std::move(queue_.front());
    queue_.erase(queue_.begin());
    return b;
  }
  [[noreturn]] void Abort(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(1);
  }

 private:
  std::vector<Bytes> queue_;
};

}  // namespace

void ByteReader::Take(void* to, std::size_t n) {
  MURMUR_CHECK(bytes_.size() - at_ >= n);
  if (n > 0) std::memcpy(to, bytes_.data() + at_, n);
  at_ += n;
}

std::unique_ptr<RankGroup> MakeLocalRanks() { return std::make_unique<LocalRanks>(); }

RankGroup* RanksOr(RankGroup* given, std::unique_ptr<RankGroup>& own) {
  if (given != nullptr) return given;
  own = MakeLocalRanks();
  return own.get();
}

bool FailedOnAnotherRank(const Status& status) {
  return status.code() == StatusCode::kAborted && status.message() == kFailedOnAnotherRank;
}

Status AgreeOnBuild(RankGroup* ranks, Status built) {
  if (ranks == nullptr || ranks->size() == 1) return built;
  // The lowest rank that failed reports its error, the others say only that,
  // and none waits on a rank that is gone.
  // A rank that already knows another one failed (a collective step of the
  // build told it) is not the one to report.
  const int me = ranks->rank();
  std::int64_t v[2] = {built.ok() || FailedOnAnotherRank(built) ? ranks->size() : me, built.ok() ? 0 : -1};
  ranks->AllReduceMin(v);
  if (v[1] == 0) return Status::Ok();
  if (v[0] == me) return built;
  return Status::Aborted(kFailedOnAnotherRank);
}

}  // namespace murmur::sim
