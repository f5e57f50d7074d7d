#include "sim/ranks/host_data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace murmur::sim {

namespace {

// What tells one machine from another: its host name and the boot id of its kernel.
std::string HostKey() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(name) + "/" + boot;
}

// The first rank of each rank's host, the same table on every rank.
std::vector<int> FirstOnHost(RankGroup& ranks) {
  Bytes mine;
  const std::string key = HostKey();
  PutValue<std::uint64_t>(mine, key.size());
  mine.insert(mine.end(), key.begin(), key.end());
  std::vector<Bytes> all = ranks.Gather(std::move(mine));
  Bytes table;
  if (ranks.rank() == 0) {
    std::vector<std::string> keys;
    for (const Bytes& b : all) keys.emplace_back(b.begin() + sizeof(std::uint64_t), b.end());
    for (std::size_t r = 0; r < keys.size(); ++r) {
      int first = static_cast<int>(r);
      for (std::size_t q = 0; q < r; ++q) {
        if (keys[q] == keys[r]) {
          first = static_cast<int>(q);
          break;
        }
      }
      PutValue<int>(table, first);
    }
  }
  table = ranks.Broadcast(std::move(table), 0);
  std::vector<int> first;
  ByteReader(table).Append<int>(first, static_cast<std::size_t>(ranks.size()));
  return first;
}

// A read-only (or, for the writer, writable) mapping, unmapped with its last owner.
struct Mapping {
  void* at = nullptr;
  std::size_t bytes = 0;
  ~Mapping() {
    if (at != nullptr) munmap(at, bytes);
  }
};

// Sample values are placed at multiples of 64 bytes.
std::size_t Align(std::size_t n) { return (n + 63) / 64 * 64; }

std::size_t ValueBytes(const ml::Dataset& d) {
  return d.byte_samples() ? d.pixels.size() : d.features.size() * sizeof(float);
}

const void* ValueData(const ml::Dataset& d) {
  return d.byte_samples() ? static_cast<const void*>(d.pixels.data()) : d.features.data();
}

void PutString(Bytes& out, const std::string& text) {
  PutValue<std::uint64_t>(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
}

std::string GetString(ByteReader& in) {
  std::vector<char> chars;
  in.Append<char>(chars, in.Get<std::uint64_t>());
  return {chars.begin(), chars.end()};
}

// Everything of `d` but its sample values, and where they lie in the shared object.
void PutHeader(Bytes& out, const ml::Dataset& d, std::uint64_t at) {
  PutString(out, d.name);
  PutValue<std::int64_t>(out, d.num_samples);
  PutValue<std::int64_t>(out, d.dim);
  PutValue<std::uint64_t>(out, d.shape.size());
  PutValues<std::int64_t>(out, d.shape);
  PutValue<int>(out, d.num_classes);
  PutValue<int>(out, static_cast<int>(d.type));
  PutValues<std::int32_t>(out, d.labels);
  PutValue<std::uint64_t>(out, at);
  PutValue<std::uint64_t>(out, ValueBytes(d));
}

// Makes `d` read its `bytes` of sample values from `map` at `at`, dropping
// its own.
void ViewSamples(ml::Dataset& d, const std::shared_ptr<const Mapping>& map, std::uint64_t at,
                 std::uint64_t bytes) {
  const auto* base = static_cast<const std::uint8_t*>(map->at) + at;
  if (d.byte_samples()) {
    d.pixels = ml::SampleValues<std::uint8_t>::View(base, bytes, map);
  } else {
    d.features =
        ml::SampleValues<float>::View(reinterpret_cast<const float*>(base), bytes / sizeof(float), map);
  }
}

// Reads back PutHeader; the samples as a view into `map`.
ml::Dataset GetHeader(ByteReader& in, const std::shared_ptr<const Mapping>& map) {
  ml::Dataset d;
  d.name = GetString(in);
  d.num_samples = in.Get<std::int64_t>();
  d.dim = in.Get<std::int64_t>();
  in.Append<std::int64_t>(d.shape, in.Get<std::uint64_t>());
  d.num_classes = in.Get<int>();
  d.type = static_cast<ml::SampleType>(in.Get<int>());
  in.Append<std::int32_t>(d.labels, static_cast<std::size_t>(d.num_samples));
  const auto at = in.Get<std::uint64_t>();
  ViewSamples(d, map, at, in.Get<std::uint64_t>());
  return d;
}

// Maps the shared object `name` of `bytes`; null (errno set) when it cannot.
std::shared_ptr<const Mapping> MapShared(const std::string& name, std::size_t bytes, bool write) {
  const int fd = shm_open(name.c_str(), write ? O_RDWR : O_RDONLY, 0);
  if (fd < 0) return nullptr;
  void* at = mmap(nullptr, bytes, write ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  const int saved = errno;
  close(fd);
  errno = saved;
  if (at == MAP_FAILED) return nullptr;
  auto m = std::make_shared<Mapping>();
  m->at = at;
  m->bytes = bytes;
  return m;
}

// Creates the shared object `name` with room for `bytes` (reserved, so that
// writing it cannot fail later) and maps it for writing; null (errno set) when
// it cannot.
std::shared_ptr<const Mapping> CreateShared(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return nullptr;
  const int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  close(fd);
  if (rc != 0) {
    shm_unlink(name.c_str());
    errno = rc;
    return nullptr;
  }
  auto m = MapShared(name, bytes, true);
  if (m == nullptr) {
    const int saved = errno;
    shm_unlink(name.c_str());
    errno = saved;
  }
  return m;
}

// A barrier of every rank, which also tells whether all of them are `ok`.
bool AllOk(RankGroup& ranks, bool ok) {
  std::int64_t v = ok ? 1 : 0;
  ranks.AllReduceMin(std::span(&v, 1));
  return v == 1;
}

}  // namespace

Result<ml::TrainTest> LoadOncePerHost(const std::function<Result<ml::TrainTest>()>& load, RankGroup& ranks) {
  if (ranks.size() == 1) return load();
  const int me = ranks.rank();
  const std::vector<int> first = FirstOnHost(ranks);
  const bool leader = first[me] == me;
  Result<ml::TrainTest> data = leader ? load() : Result<ml::TrainTest>(ml::TrainTest{});
  if (!AllOk(ranks, data.ok())) return data.ok() ? Status::Aborted(kFailedOnAnotherRank) : data.status();

  // The host's first rank puts the samples in a shared object and tells the
  // others its name and the rest.
  std::string name;
  std::shared_ptr<const Mapping> map;
  if (leader) {
    ml::TrainTest& tt = data.value();
    const std::size_t train_at = 0, test_at = Align(ValueBytes(tt.train));
    const std::size_t bytes = std::max<std::size_t>(1, test_at + ValueBytes(tt.test));
    name = "/murmur-data-" + std::to_string(getpid()) + "-" + std::to_string(me);
    map = CreateShared(name, bytes);
    if (map == nullptr) {
      std::fprintf(stderr,
                   "murmur: could not share the dataset between this host's ranks through /dev/shm (%s, %zu "
                   "bytes): each rank holds its own copy\n",
                   std::strerror(errno), bytes);
      name.clear();
    } else {
      auto* base = static_cast<std::uint8_t*>(map->at);
      if (ValueBytes(tt.train) > 0) std::memcpy(base + train_at, ValueData(tt.train), ValueBytes(tt.train));
      if (ValueBytes(tt.test) > 0) std::memcpy(base + test_at, ValueData(tt.test), ValueBytes(tt.test));
    }
    Bytes header;
    PutString(header, name);
    PutValue<std::uint64_t>(header, map == nullptr ? 0 : map->bytes);
    PutHeader(header, tt.train, train_at);
    PutHeader(header, tt.test, test_at);
    for (int r = 0; r < ranks.size(); ++r)
      if (r != me && first[r] == me) ranks.Send(r, header);
    if (map != nullptr) {  // the leader reads the shared copy too, and drops its own
      ViewSamples(tt.train, map, train_at, ValueBytes(tt.train));
      ViewSamples(tt.test, map, test_at, ValueBytes(tt.test));
    }
  } else {
    const Bytes header = ranks.Recv(first[me]);
    ByteReader in(header);
    name = GetString(in);
    const auto bytes = in.Get<std::uint64_t>();
    if (!name.empty()) map = MapShared(name, bytes, false);
    if (map != nullptr) {
      data = ml::TrainTest{GetHeader(in, map), GetHeader(in, map)};
    } else {
      data = load();  // no shared copy: this rank's own
    }
  }
  // Every rank has mapped the object (or given up on it): it can go.
  AllOk(ranks, true);
  if (leader && !name.empty()) shm_unlink(name.c_str());
  return data;
}

}  // namespace murmur::sim
