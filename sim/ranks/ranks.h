// RankGroup: the processes (ranks) that one simulation is spread over, and the
// few collective operations the partitioned simulator needs from them.
//
// A partitioned run gives each rank a contiguous block of node ids
// (sim/ranks/placement.h); every rank runs the same scenario, builds only its own
// nodes, and meets the others at the end of each conservative time window
// (sim/net/simulator.h, docs/simulator.md). Implementations: LocalRanks (one
// rank, no communication: the plain `murmur sim`), ThreadRanks (ranks as
// threads of one process: tests; sim/ranks/thread_ranks.h) and MpiRanks (MPI
// processes: `mpirun murmur sim`; sim/mpi/). All collectives are called by
// every rank in the same order, as MPI requires.
//
// Thread-safety: one thread per rank calls its RankGroup.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::sim {

using Bytes = std::vector<std::uint8_t>;

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Element-wise minimum, maximum or sum over the ranks, in place.
  virtual void AllReduceMin(std::span<std::int64_t> values) = 0;
  virtual void AllReduceMax(std::span<std::int64_t> values) = 0;
  virtual void AllReduceSum(std::span<std::uint64_t> values) = 0;

  // out[r] goes to rank r (out.size() == size()); returns in[r], what rank r
  // sent to this one.
  virtual std::vector<Bytes> AllToAll(std::vector<Bytes> out) = 0;

  // Rank 0 gets every rank's bytes in rank order (its own included); the
  // others get an empty vector.
  virtual std::vector<Bytes> Gather(Bytes mine) = 0;

  // Every rank gets `root`'s bytes (the argument of the others is ignored).
  virtual Bytes Broadcast(Bytes bytes, int root) = 0;

  // Point to point, for ordered pipelines: Send does not wait for Recv.
  virtual void Send(int to, Bytes bytes) = 0;
  virtual Bytes Recv(int from) = 0;

  // Ends every rank of the job now, after printing `message` (a failure on one
  // rank must never leave the others waiting). Does not return.
  [[noreturn]] virtual void Abort(const std::string& message) = 0;
};

// The one rank of a simulation that runs in one process.
std::unique_ptr<RankGroup> MakeLocalRanks();
// `given`, or when it is null a one-rank group made into `own` (which must
// outlive the use of the result).
RankGroup* RanksOr(RankGroup* given, std::unique_ptr<RankGroup>& own);

// Append and read plain values in a byte buffer, for what ranks exchange.
template <typename T>
void PutValue(Bytes& out, const T& v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
template <typename T>
void PutValues(Bytes& out, std::span<const T> v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size_bytes());
}

// Reads back what PutValue and PutValues wrote. The buffers come from the
// other ranks of the same program, never from outside: a short one is a bug.
class ByteReader {
 public:
  explicit ByteReader(const Bytes& bytes) : bytes_(bytes) {}
  template <typename T>
  T Get() {
    T v;
    Take(&v, sizeof(T));
    return v;
  }
  template <typename T>
  void Append(std::vector<T>& out, std::size_t count) {
    const std::size_t at = out.size();
    out.resize(at + count);
    Take(out.data() + at, count * sizeof(T));
  }

 private:
  void Take(void* to, std::size_t n);
  const Bytes& bytes_;
  std::size_t at_ = 0;
};

// A rank that stops because another one failed says so with this message
// (Status::Aborted); the failing rank reports its own error.
inline constexpr const char* kFailedOnAnotherRank = "failed on another rank";
// Whether a rank's run failed because another rank did (which printed why).
bool FailedOnAnotherRank(const Status& status);
// Called by every rank with how building its part of a run went, before the
// first window: `built` on the lowest rank that failed, FailedOnAnotherRank
// on the others, Ok when every rank is ready. One rank (or none): `built`.
Status AgreeOnBuild(RankGroup* ranks, Status built);

}  // namespace murmur::sim
