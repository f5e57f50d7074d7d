// A build with MPI (cmake/MurmurMpi.cmake): the ranks of MPI_COMM_WORLD.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/check.h"
#include "sim/mpi/mpi.h"

namespace murmur::sim::mpi {

namespace {

constexpr int kPipeTag = 17;
constexpr int kExchangeTag = 18;  // and 19: AllToAll alternates

// MPI counts are ints: a buffer of 2 GiB or more is beyond what one call moves.
int Count(std::size_t n) {
  MURMUR_CHECK_MSG(n <= static_cast<std::size_t>(INT_MAX), "a buffer between ranks over 2 GiB");
  return static_cast<int>(n);
}

class MpiRanks final : public RankGroup {
 public:
  MpiRanks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiRanks() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void AllReduceMin(std::span<std::int64_t> v) override {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), Count(v.size()), MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  }
  void AllReduceMax(std::span<std::int64_t> v) override {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), Count(v.size()), MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  }
  void AllReduceSum(std::span<std::uint64_t> v) override {
    MPI_Allreduce(MPI_IN_PLACE, v.data(), Count(v.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  }

  // The sparse data exchange of Hoefler, Siebert and Lumsdaine ("Scalable
  // communication protocols for dynamic sparse data exchange", PPoPP 2010:
  // NBX). Synchronous sends go to the ranks there is something for; whatever
  // arrives is received; once this rank's sends are matched it enters a
  // non-blocking barrier, and when the barrier completes every rank's sends
  // have been received. A rank so meets only the ranks it exchanges with,
  // plus the barrier's log2 R steps, where MPI_Alltoall(v) takes R - 1 steps
  // whatever the traffic: a graph-partitioned run's ranks mostly exchange
  // with a few neighbouring ranks. Calls alternate between two tags: a rank
  // that has left the barrier may already send its next exchange's messages
  // to a rank still draining this one's, which must not take them for these.
  std::vector<Bytes> AllToAll(std::vector<Bytes> out) override {
    MURMUR_CHECK(static_cast<int>(out.size()) == size_);
    const int tag = kExchangeTag + static_cast<int>(exchanges_++ & 1);
    std::vector<Bytes> in(size_);
    in[rank_] = std::move(out[rank_]);
    std::vector<MPI_Request> sends;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || out[r].empty()) continue;
      sends.emplace_back();
      MPI_Issend(out[r].data(), Count(out[r].size()), MPI_BYTE, r, tag, MPI_COMM_WORLD, &sends.back());
    }
    MPI_Request barrier = MPI_REQUEST_NULL;
    bool in_barrier = false;
    for (;;) {
      int arrived = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &arrived, &status);
      if (arrived != 0) {
        int count = 0;
        MPI_Get_count(&status, MPI_BYTE, &count);
        Bytes& b = in[status.MPI_SOURCE];
        b.resize(static_cast<std::size_t>(count));
        MPI_Recv(b.data(), count, MPI_BYTE, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        continue;
      }
      int done = 0;
      if (!in_barrier) {
        MPI_Testall(static_cast<int>(sends.size()), sends.data(), &done, MPI_STATUSES_IGNORE);
        if (done != 0) {
          MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
          in_barrier = true;
        }
      } else {
        MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (done != 0) break;
      }
      std::this_thread::yield();  // more ranks than cores: let the one being waited for run
    }
    return in;
  }

  std::vector<Bytes> Gather(Bytes mine) override {
    int count = Count(mine.size());
    std::vector<int> counts(rank_ == 0 ? size_ : 0), at(rank_ == 0 ? size_ : 0);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    Bytes all;
    if (rank_ == 0) {
      std::size_t total = 0;
      for (int r = 0; r < size_; ++r) {
        at[r] = Count(total);
        total += static_cast<std::size_t>(counts[r]);
      }
      all.resize(total);
    }
    MPI_Gatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, 0,
                MPI_COMM_WORLD);
    std::vector<Bytes> out;
    if (rank_ == 0) {
      for (int r = 0; r < size_; ++r) out.emplace_back(all.begin() + at[r], all.begin() + at[r] + counts[r]);
    }
    return out;
  }

  Bytes Broadcast(Bytes bytes, int root) override {
    std::uint64_t n = bytes.size();
    MPI_Bcast(&n, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
    bytes.resize(n);
    MPI_Bcast(bytes.data(), Count(n), MPI_BYTE, root, MPI_COMM_WORLD);
    return bytes;
  }

  // The receiver of a pipeline posts its Recv before anything else, so a
  // blocking send cannot wait on it for long.
  void Send(int to, Bytes bytes) override {
    MPI_Send(bytes.data(), Count(bytes.size()), MPI_BYTE, to, kPipeTag, MPI_COMM_WORLD);
  }
  Bytes Recv(int from) override {
    MPI_Status status;
    MPI_Probe(from, kPipeTag, MPI_COMM_WORLD, &status);
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    Bytes bytes(static_cast<std::size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, from, kPipeTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return bytes;
  }

  [[noreturn]] void Abort(const std::string& message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort();  // MPI_Abort does not return; this says so to the compiler
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t exchanges_ = 0;  // AllToAll calls so far
};

}  // namespace

bool Available() { return true; }

Result<std::unique_ptr<RankGroup>> MakeMpiRanks() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
    return Status::Unavailable("MPI_Init failed: is this process started by mpirun?");
  // Errors of MPI calls end the job (MPI's default handler) rather than return.
  return std::unique_ptr<RankGroup>(std::make_unique<MpiRanks>());
}

}  // namespace murmur::sim::mpi
