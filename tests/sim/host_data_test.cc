// The dataset of a partitioned run is read once per host: the first rank of
// the host loads it, the others read its samples from memory they share.
// Ranks are threads of this process here, one host (sim/ranks/thread_ranks.h).
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "ml/dataset_spec.h"
#include "sim/ranks/host_data.h"
#include "sim/ranks/thread_ranks.h"
#include "sim/runner.h"

namespace murmur::sim {
namespace {

// f(rank, group) on `ranks` threads at once; every rank's result.
template <typename F>
auto OnThreadRanks(int ranks, F f) {
  auto group = MakeThreadRanks(ranks);
  std::vector<decltype(f(0, *group[0]))> out;
  for (int r = 0; r < ranks; ++r) out.emplace_back(Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { out[r] = f(r, *group[r]); });
  for (auto& t : threads) t.join();
  return out;
}

// Shared objects of ours left in /dev/shm.
int LeftInDevShm() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm"))
    n += e.path().filename().string().starts_with("murmur-data-");
  return n;
}

ml::TrainTest Images() {
  ml::TrainTest tt;
  for (ml::Dataset* d : {&tt.train, &tt.test}) {
    d->name = "images";
    d->dim = 6;
    d->shape = {1, 2, 3};
    d->num_classes = 3;
    d->type = ml::SampleType::kUint8;
  }
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 6; ++j) tt.train.pixels.push_back(static_cast<std::uint8_t>(37 * i + 5 * j));
    tt.train.labels.push_back(i % 3);
  }
  tt.train.num_samples = 5;
  for (int j = 0; j < 6; ++j) tt.test.pixels.push_back(static_cast<std::uint8_t>(200 + j));
  tt.test.labels.push_back(2);
  tt.test.num_samples = 1;
  return tt;
}

void CheckSameData(const ml::Dataset& a, const ml::Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.num_samples == b.num_samples);
  CHECK(a.dim == b.dim);
  CHECK(a.shape == b.shape);
  CHECK(a.num_classes == b.num_classes);
  CHECK(a.type == b.type);
  CHECK(a.labels == b.labels);
  CHECK(a.pixels == b.pixels);
  CHECK(a.features == b.features);
  CHECK(a.Validate().ok());
}

TEST_CASE("Ranks on one host load the dataset once and read one shared copy of its samples") {
  const int before = LeftInDevShm();
  for (const std::string spec : {"images", "synthetic:blobs"}) {
    CAPTURE(spec);
    auto load = [&]() -> Result<ml::TrainTest> {
      if (spec == "images") return Images();
      return ml::LoadDatasetSpec(spec, "", 3);
    };
    const ml::TrainTest want = load().value();
    std::atomic<int> loads{0};
    auto got = OnThreadRanks(3, [&](int, RankGroup& g) {
      return LoadOncePerHost(
          [&] {
            ++loads;
            return load();
          },
          g);
    });
    CHECK(loads == 1);
    for (int r = 0; r < 3; ++r) {
      CAPTURE(r);
      REQUIRE(got[r].ok());
      CheckSameData(got[r]->train, want.train);
      CheckSameData(got[r]->test, want.test);
      // The samples are the host's, not this rank's: only the labels are its own.
      CHECK((got[r]->train.pixels.is_view() || got[r]->train.features.is_view()));
      CHECK(got[r]->train.MemoryBytes() == want.train.num_samples * 4);
    }
    // Writing to a rank's samples copies them first: the others' stay as they were.
    got[1]->train.pixels.empty() ? void(got[1]->train.features[0] = -1) : void(got[1]->train.pixels[0] = 99);
    CHECK_FALSE((got[1]->train.pixels.is_view() || got[1]->train.features.is_view()));
    CheckSameData(got[2]->train, want.train);
  }
  CHECK(LeftInDevShm() == before);  // unlinked once every rank has mapped it
}

TEST_CASE(
    "A dataset that fails to load on the host's first rank fails every rank, the first with its error") {
  auto got = OnThreadRanks(3, [&](int, RankGroup& g) {
    return LoadOncePerHost([]() -> Result<ml::TrainTest> { return Status::NotFound("no such file: x.npz"); },
                           g);
  });
  REQUIRE_FALSE(got[0].ok());
  CHECK(got[0].status().message() == "no such file: x.npz");
  for (int r = 1; r < 3; ++r) CHECK(FailedOnAnotherRank(got[r].status()));
}

}  // namespace
}  // namespace murmur::sim
