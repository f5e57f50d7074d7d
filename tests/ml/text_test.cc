// Byte-level text (ml/text.h): next-token windows against their definition,
// the held-out tail, and errors that name the file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ml/dataset_spec.h"
#include "ml/partition.h"
#include "ml/text.h"

namespace murmur::ml {
namespace {

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = (std::filesystem::temp_directory_path() / ("murmur-text-" + name)).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("text windows: window k is the T + 1 bytes from kT, labelled by its last byte, read as token ids") {
  // 23 bytes with every value distinct, context 4: floor(22 / 4) = 5 windows.
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 23; ++i) bytes.push_back(static_cast<std::uint8_t>(250 - 11 * i));
  auto d = TextWindows(bytes, 4, "t");
  REQUIRE(d.ok());
  REQUIRE(d->Validate().ok());
  CHECK(d->num_samples == 5);
  CHECK(d->sample_shape() == std::vector<std::int64_t>{5});
  CHECK(d->num_classes == 256);
  CHECK(d->type == SampleType::kTokens);
  for (std::int64_t k = 0; k < 5; ++k) {
    CAPTURE(k);
    std::vector<float> x(5);
    d->CopySample(k, x.data());
    for (int j = 0; j < 5; ++j) CHECK(x[static_cast<std::size_t>(j)] == static_cast<float>(bytes[k * 4 + j]));
    CHECK(d->labels[static_cast<std::size_t>(k)] == bytes[k * 4 + 4]);
  }
  // Every byte after the first is a target (a position 1..T) exactly once.
  std::vector<int> targeted(bytes.size(), 0);
  for (std::int64_t k = 0; k < 5; ++k)
    for (int j = 1; j <= 4; ++j) ++targeted[static_cast<std::size_t>(k * 4 + j)];
  for (std::size_t i = 1; i <= 20; ++i) CHECK(targeted[i] == 1);
  // Exactly one window: T + 1 bytes. One byte short: an error.
  CHECK(TextWindows(std::span(bytes).first(5), 4, "t")->num_samples == 1);
  CHECK(Contains(TextWindows(std::span(bytes).first(4), 4, "t").status(), "fewer than one window of 5"));
  CHECK(Contains(TextWindows(bytes, 0, "t").status(), "context length 0 is not in [1, 4096]"));
  CHECK(Contains(TextWindows(bytes, 4097, "t").status(), "context length 4097"));
}

TEST_CASE("text:T:FILE holds out the last tenth of the windows, the text after the training text") {
  std::string text;
  for (int i = 0; i < 2001; ++i) text += static_cast<char>('a' + i % 26);
  const std::string path = WriteTemp("corpus.txt", text);
  auto tt = LoadDatasetSpec("text:8:" + path, "", 1);
  REQUIRE(tt.ok());
  // 2000 / 8 = 250 windows: 225 to train, 25 to test.
  CHECK(tt->train.num_samples == 225);
  CHECK(tt->test.num_samples == 25);
  std::vector<float> x(9);
  tt->test.CopySample(0, x.data());
  CHECK(x[0] == static_cast<float>(text[225 * 8]));
  tt->train.CopySample(224, x.data());
  CHECK(x[8] == static_cast<float>(text[225 * 8]));  // the boundary byte, shared
  // Partitions work on it as on any dataset (labels: the windows' last bytes).
  auto part = PartitionBySpec("dirichlet:0.5", tt->train, 4, 1);
  REQUIRE(part.ok());
  std::size_t assigned = 0;
  for (std::size_t n = 0; n < 4; ++n) assigned += part->node(n).size();
  CHECK(assigned == 225);

  const std::string test_path = WriteTemp("test.txt", text.substr(0, 81));
  auto explicit_test = LoadDatasetSpec("text:8:" + path + ":" + test_path, "", 1);
  REQUIRE(explicit_test.ok());
  CHECK(explicit_test->train.num_samples == 250);
  CHECK(explicit_test->test.num_samples == 10);
  std::filesystem::remove(test_path);
  std::filesystem::remove(path);
}

TEST_CASE("text datasets: bad specs and files get errors that name them") {
  const std::string tiny = WriteTemp("tiny.txt", "abc");
  CHECK(Contains(LoadDatasetSpec("text:8:" + tiny, "", 1).status(), "text file '" + tiny + "': 3 bytes"));
  CHECK(
      Contains(LoadDatasetSpec("text:2:" + tiny, "", 1).status(), "holding out a test set needs at least 2"));
  CHECK(Contains(LoadDatasetSpec("text:x:" + tiny, "", 1).status(), "expected text:T:FILE[:TEST]"));
  CHECK(Contains(LoadDatasetSpec("text:8", "", 1).status(), "expected text:T:FILE[:TEST]"));
  CHECK(Contains(LoadDatasetSpec("text:8:/nonexistent/corpus.txt", "", 1).status(),
                 "text file '/nonexistent/corpus.txt'"));
  CHECK(Contains(LoadDatasetSpec("text:1:" + tiny + ":/nonexistent/t.txt", "", 1).status(),
                 "text file '/nonexistent/t.txt'"));
  std::filesystem::remove(tiny);
}

}  // namespace murmur::ml
