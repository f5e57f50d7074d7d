// IDX reader: good files (plain and gzip) and every kind of bad file.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ml/idx.h"

namespace murmur::ml {
namespace {

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "murmur_idx_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<std::uint8_t> IdxBytes(std::vector<std::uint32_t> dims, const std::vector<std::uint8_t>& data,
                                   std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> b{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  }
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string WritePlain(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string WriteGzip(const std::string& name, const std::vector<std::uint8_t>& bytes) {
  std::string path = TempPath(name);
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  gzclose(f);
  return path;
}

std::vector<std::uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool Contains(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

const std::vector<std::uint8_t> kPixels{0, 255, 51, 102, 10, 20, 30, 40, 1, 2, 3, 4};  // 3 images of 2 x 2

}  // namespace

TEST_CASE("ReadIdx reads plain and gzip files alike") {
  auto bytes = IdxBytes({3, 2, 2}, kPixels);
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    std::string path = gz ? WriteGzip("good.idx.gz", bytes) : WritePlain("good.idx", bytes);
    auto a = ReadIdx(path);
    REQUIRE(a.ok());
    CHECK(a->dims == std::vector<std::int64_t>{3, 2, 2});
    CHECK(a->data == kPixels);
  }
}

TEST_CASE("LoadIdxDataset scales pixels by 1/255 and keeps labels") {
  std::string images = WriteGzip("img.gz", IdxBytes({3, 2, 2}, kPixels));
  std::string labels = WriteGzip("lab.gz", IdxBytes({3}, {2, 0, 9}));
  auto ds = LoadIdxDataset(images, labels, "tiny", 10);
  REQUIRE(ds.ok());
  CHECK(ds->num_samples == 3);
  CHECK(ds->dim == 4);
  CHECK(ds->labels == std::vector<std::int32_t>{2, 0, 9});
  CHECK(ds->row(0)[1] == doctest::Approx(1.0));
  CHECK(ds->row(0)[2] == doctest::Approx(0.2));
  CHECK(ds->Validate().ok());
}

TEST_CASE("ReadIdx rejects malformed files with the file and the problem named") {
  struct Case {
    std::string name;
    std::vector<std::uint8_t> bytes;
    StatusCode code;
    std::string message;
  };
  auto good = IdxBytes({3, 2, 2}, kPixels);
  std::vector<Case> cases = {
      {"empty", {}, StatusCode::kDataLoss, "header"},
      {"magic", {1, 0, 8, 1, 0, 0, 0, 1, 7}, StatusCode::kInvalidArgument, "bad IDX magic 01 00"},
      {"type", IdxBytes({1}, {7}, 0x0D), StatusCode::kInvalidArgument, "type 0x0d not supported"},
      {"nodims", {0, 0, 8, 0}, StatusCode::kInvalidArgument, "0 IDX dimensions"},
      {"overflow", IdxBytes({0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {}),
       StatusCode::kResourceExhausted, "past the limit"},
      {"dims_cut", {0, 0, 8, 2, 0, 0, 0, 3, 0}, StatusCode::kDataLoss, "inside dimension 1"},
      {"short", IdxBytes({100}, {1, 2, 3}), StatusCode::kDataLoss, "short read: 3 of 100"},
      {"trailing", IdxBytes({2}, {1, 2, 3}), StatusCode::kDataLoss, "trailing bytes"},
  };
  for (const Case& c : cases) {
    for (bool gz : {false, true}) {
      CAPTURE(c.name);
      CAPTURE(gz);
      std::string path = gz ? WriteGzip(c.name + ".gz", c.bytes) : WritePlain(c.name, c.bytes);
      auto a = ReadIdx(path);
      REQUIRE_FALSE(a.ok());
      CHECK(a.status().code() == c.code);
      CHECK(Contains(a.status(), path));
      CHECK_MESSAGE(Contains(a.status(), c.message), a.status().ToString());
    }
  }
  SUBCASE("a small limit") {
    IdxLimits limits;
    limits.max_elements = 11;
    auto a = ReadIdx(WritePlain("limit", good), limits);
    REQUIRE_FALSE(a.ok());
    CHECK(Contains(a.status(), "limit of 11 elements"));
  }
  SUBCASE("missing file") {
    auto a = ReadIdx(TempPath("does-not-exist"));
    CHECK(a.status().code() == StatusCode::kNotFound);
  }
}

TEST_CASE("ReadIdx reports truncated and corrupt gzip streams") {
  // Incompressible-looking content so the compressed stream has some length.
  std::vector<std::uint8_t> pixels(4000);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>((i * 7919u) >> 3);
  std::string path = WriteGzip("whole.gz", IdxBytes({1000, 4}, pixels));
  std::vector<std::uint8_t> gz = ReadAll(path);
  REQUIRE(gz.size() > 100);

  std::vector<std::uint8_t> cut(gz.begin(), gz.begin() + static_cast<std::ptrdiff_t>(gz.size() / 2));
  auto a = ReadIdx(WritePlain("cut.gz", cut));
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(a.status(), "cut.gz"));

  std::vector<std::uint8_t> bad = gz;
  for (std::size_t i = 20; i < 60; ++i) bad[i] ^= 0x5A;
  auto b = ReadIdx(WritePlain("corrupt.gz", bad));
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == StatusCode::kDataLoss);
  CHECK(Contains(b.status(), "corrupt.gz"));
}

TEST_CASE("LoadIdxDataset rejects images and labels that disagree") {
  std::string images = WritePlain("img3", IdxBytes({3, 2, 2}, kPixels));
  SUBCASE("count mismatch") {
    auto ds = LoadIdxDataset(images, WritePlain("lab2", IdxBytes({2}, {0, 1})), "x", 10);
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), "2 labels but"));
    CHECK(Contains(ds.status(), "has 3 images"));
  }
  SUBCASE("label out of range") {
    auto ds = LoadIdxDataset(images, WritePlain("lab10", IdxBytes({3}, {0, 10, 1})), "x", 10);
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), "label 10 of sample 1 outside [0, 10)"));
  }
  SUBCASE("labels with two dimensions") {
    auto ds = LoadIdxDataset(images, WritePlain("lab2d", IdxBytes({3, 1}, {0, 1, 2})), "x", 10);
    REQUIRE_FALSE(ds.ok());
    CHECK(Contains(ds.status(), "labels need 1 dimension"));
  }
}

TEST_CASE("LoadFashionMnist names the directory and the Debian package when files are missing") {
  auto tt = LoadFashionMnist(TempPath("no-such-dir"));
  REQUIRE_FALSE(tt.ok());
  CHECK(tt.status().code() == StatusCode::kNotFound);
  CHECK(Contains(tt.status(), "no-such-dir"));
  CHECK(Contains(tt.status(), "dataset-fashion-mnist"));
}

}  // namespace murmur::ml
