// A build with MPI (cmake/MurmurMpi.cmake): the ranks of MPI_COMM_WORLD.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "core/check.h"
#include "sim/mpi/mpi.h"

namespace murmur::sim::mpi {

namespace {

constexpr int kPipeTag = 17;

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

  std::vector<Bytes> AllToAll(std::vector<Bytes> out) override {
    MURMUR_CHECK(static_cast<int>(out.size()) == size_);
    std::vector<int> send_counts(size_), recv_counts(size_), send_at(size_), recv_at(size_);
    Bytes send;
    for (int r = 0; r < size_; ++r) {
      send_at[r] = Count(send.size());
      send_counts[r] = Count(out[r].size());
      send.insert(send.end(), out[r].begin(), out[r].end());
    }
    Count(send.size());
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    std::size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      recv_at[r] = Count(total);
      total += static_cast<std::size_t>(recv_counts[r]);
    }
    Bytes recv(total);
    MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_BYTE, recv.data(), recv_counts.data(),
                  recv_at.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<Bytes> in(size_);
    for (int r = 0; r < size_; ++r)
      in[r].assign(recv.begin() + recv_at[r], recv.begin() + recv_at[r] + recv_counts[r]);
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
