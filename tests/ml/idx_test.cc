// IDX reader: good files (plain and gzip) and every kind of bad file.
#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ml/dataset_spec.h"
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
  CHECK(ds->sample_shape() == std::vector<std::int64_t>{1, 2, 2});  // a grey image: one channel
  float x[4];
  ds->CopySample(0, x);
  CHECK(x[1] == doctest::Approx(1.0));
  CHECK(x[2] == doctest::Approx(0.2));
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

TEST_CASE("LoadFashionMnist and the fashion-mnist spec read plain IDX files where no .gz is") {
  // A directory as torchvision's raw/ folder holds it: the four files
  // without .gz; here 3 training and 2 test images of 2 x 2.
  const std::string dir = TempPath("plain-fashion-mnist");
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/train-labels-idx1-ubyte.gz");
  WritePlain("plain-fashion-mnist/train-images-idx3-ubyte", IdxBytes({3, 2, 2}, kPixels));
  WritePlain("plain-fashion-mnist/train-labels-idx1-ubyte", IdxBytes({3}, {2, 0, 9}));
  WritePlain("plain-fashion-mnist/t10k-images-idx3-ubyte", IdxBytes({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  WritePlain("plain-fashion-mnist/t10k-labels-idx1-ubyte", IdxBytes({2}, {1, 7}));
  auto tt = LoadFashionMnist(dir);
  REQUIRE(tt.ok());
  CHECK(tt->train.labels == std::vector<std::int32_t>{2, 0, 9});
  CHECK(tt->test.labels == std::vector<std::int32_t>{1, 7});
  auto shard = LoadDatasetShard("fashion-mnist", dir, 1, ShardSpec{"iid", 1, 0, true});
  REQUIRE(shard.ok());
  CHECK(shard->train.num_samples == 3);
  // With both, the .gz file is read (here one with other labels).
  WriteGzip("plain-fashion-mnist/train-labels-idx1-ubyte.gz", IdxBytes({3}, {5, 5, 5}));
  CHECK(FashionMnistFile(dir, "train-labels-idx1-ubyte") == dir + "/train-labels-idx1-ubyte.gz");
  auto both = LoadFashionMnist(dir);
  REQUIRE(both.ok());
  CHECK(both->train.labels == std::vector<std::int32_t>{5, 5, 5});
  std::filesystem::remove(dir + "/train-labels-idx1-ubyte.gz");
}

TEST_CASE("LoadFashionMnist names the directory and the Debian package when files are missing") {
  auto tt = LoadFashionMnist(TempPath("no-such-dir"));
  REQUIRE_FALSE(tt.ok());
  CHECK(tt.status().code() == StatusCode::kNotFound);
  CHECK(Contains(tt.status(), "no-such-dir"));
  CHECK(Contains(tt.status(), "dataset-fashion-mnist"));
}

}  // namespace murmur::ml

namespace murmur::ml {

namespace {

// 7 images of 3 x 2 pixels, pixel j of image i = 37 i + 5 j (mod 256), labels i mod 4.
struct RowsFiles {
  std::string images, labels, images_gz, labels_gz;
  std::vector<std::uint8_t> pixels, label_bytes;
};

RowsFiles WriteRowsFiles() {
  RowsFiles f;
  for (int i = 0; i < 7; ++i) {
    f.label_bytes.push_back(static_cast<std::uint8_t>(i % 4));
    for (int j = 0; j < 6; ++j) f.pixels.push_back(static_cast<std::uint8_t>((37 * i + 5 * j) % 256));
  }
  f.images = WritePlain("rows_images", IdxBytes({7, 3, 2}, f.pixels));
  f.labels = WritePlain("rows_labels", IdxBytes({7}, f.label_bytes));
  f.images_gz = WriteGzip("rows_images.gz", IdxBytes({7, 3, 2}, f.pixels));
  f.labels_gz = WriteGzip("rows_labels.gz", IdxBytes({7}, f.label_bytes));
  return f;
}

bool SameBits(const Dataset& a, const Dataset& b) {
  return a.name == b.name && a.num_samples == b.num_samples && a.dim == b.dim &&
         a.num_classes == b.num_classes && a.labels == b.labels && a.type == b.type && a.shape == b.shape &&
         a.pixels == b.pixels && a.features.size() == b.features.size() &&
         (a.features.empty() ||
          std::memcmp(a.features.data(), b.features.data(), a.features.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("LoadIdxRows equals Subset of the full load, bit for bit, plain and gzip") {
  const RowsFiles f = WriteRowsFiles();
  const std::vector<std::vector<SampleIndex>> cases{
      {}, {0}, {6}, {3, 1, 4}, {6, 5, 4, 3, 2, 1, 0}, {2, 2, 0, 2}, {0, 1, 2, 3, 4, 5, 6}};
  for (bool gz : {false, true}) {
    const std::string& images = gz ? f.images_gz : f.images;
    const std::string& labels = gz ? f.labels_gz : f.labels;
    auto full = LoadIdxDataset(images, labels, "tiny", 4);
    REQUIRE(full.ok());
    for (const auto& rows : cases) {
      CAPTURE(gz);
      CAPTURE(rows.size());
      auto got = LoadIdxRows(images, labels, "tiny", 4, rows);
      REQUIRE(got.ok());
      CHECK(SameBits(*got, Subset(*full, rows)));
      // And against the bytes written, outside the readers: pixel / 255 (as float).
      for (std::size_t k = 0; k < rows.size(); ++k) {
        CHECK(got->labels[k] == f.label_bytes[rows[k]]);
        float x[6];
        got->CopySample(static_cast<std::int64_t>(k), x);
        for (int j = 0; j < 6; ++j) CHECK(x[j] == f.pixels[rows[k] * 6 + j] * (1.0f / 255.0f));
      }
    }
  }
}

TEST_CASE("LoadIdxRows keeps only the rows asked for across chunk boundaries") {
  // 300 images of 4000 pixels: a chunk holds 262 rows, so rows 261, 262 and 299 sit in two chunks.
  std::vector<std::uint8_t> pixels(300 * 4000), label_bytes(300);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 24);
  for (std::size_t i = 0; i < label_bytes.size(); ++i) label_bytes[i] = static_cast<std::uint8_t>(i % 10);
  const std::string images = WriteGzip("big_images.gz", IdxBytes({300, 4000}, pixels));
  const std::string labels = WritePlain("big_labels", IdxBytes({300}, label_bytes));
  auto full = LoadIdxDataset(images, labels, "big", 10);
  REQUIRE(full.ok());
  const std::vector<SampleIndex> rows{299, 0, 262, 261, 100, 262};
  auto got = LoadIdxRows(images, labels, "big", 10, rows);
  REQUIRE(got.ok());
  CHECK(SameBits(*got, Subset(*full, rows)));
  CHECK(got->pixels.size() == rows.size() * 4000);
}

TEST_CASE("LoadIdxRows rejects bad rows and truncated, corrupt or over-long files") {
  const RowsFiles f = WriteRowsFiles();
  {
    auto r = LoadIdxRows(f.images, f.labels, "x", 4, std::vector<SampleIndex>{1, 7});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(Contains(r.status(), "row 7 asked for, the file has 7 images"));
  }
  {
    // Cut inside image 5: the row asked for (1) was read, the rest is missing.
    std::vector<std::uint8_t> bytes = IdxBytes({7, 3, 2}, f.pixels);
    bytes.erase(bytes.end() - 10, bytes.end());
    auto r = LoadIdxRows(WritePlain("rows_cut", bytes), f.labels, "x", 4, std::vector<SampleIndex>{1});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(Contains(r.status(), "rows_cut: short read: 32 of 42 data bytes"));
  }
  {
    std::vector<std::uint8_t> bytes = IdxBytes({7, 3, 2}, f.pixels);
    bytes.push_back(0);
    auto r = LoadIdxRows(WritePlain("rows_long", bytes), f.labels, "x", 4, std::vector<SampleIndex>{0});
    REQUIRE_FALSE(r.ok());
    CHECK(Contains(r.status(), "rows_long: trailing bytes after 42 elements"));
  }
  {
    std::vector<std::uint8_t> gz = ReadAll(f.images_gz);
    gz[gz.size() / 2] ^= 0xFF;  // the deflate stream or its CRC no longer checks out
    auto r = LoadIdxRows(WritePlain("rows_corrupt.gz", gz), f.labels, "x", 4, std::vector<SampleIndex>{0});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(Contains(r.status(), "rows_corrupt.gz"));
  }
  {
    auto r = LoadIdxRows(f.images, WritePlain("rows_lab6", IdxBytes({6}, {0, 1, 2, 3, 0, 1})), "x", 4,
                         std::vector<SampleIndex>{0});
    REQUIRE_FALSE(r.ok());
    CHECK(Contains(r.status(), "rows_lab6: 6 labels but"));
  }
  {
    auto r = LoadIdxRows(f.images, f.labels, "x", 3, std::vector<SampleIndex>{0});
    REQUIRE_FALSE(r.ok());
    CHECK(Contains(r.status(), "label 3 of sample 3 outside [0, 3)"));
  }
}

}  // namespace murmur::ml
