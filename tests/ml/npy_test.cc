// NumPy .npy/.npz reading against files NumPy 1.24 wrote
// (tests/data/ml/npy/make_fixtures.py states every value).
#include "ml/npy.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <utility>

#include "ml/dataset_spec.h"

namespace murmur::ml {
namespace {

std::string Fixture(const std::string& name) { return std::string(MURMUR_TESTDATA_DIR) + "/ml/npy/" + name; }

std::vector<std::byte> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

bool Has(const Status& s, const std::string& text) { return s.message().find(text) != std::string::npos; }

TEST_CASE("A version 1.0 float32 .npy: shape and every value as NumPy wrote them") {
  auto a = LoadNpy(Fixture("f4_v1.npy"));
  REQUIRE(a.ok());
  CHECK(a->type == NpyType::kFloat32);
  CHECK(a->shape == std::vector<std::int64_t>{2, 3});
  CHECK(a->At(0) == 1.5);
  CHECK(a->At(1) == -2.25);
  CHECK(a->At(2) == static_cast<double>(3e-39f));  // a subnormal float32
  CHECK(std::isinf(a->At(3)));
  CHECK(a->At(5) == 7);
}

TEST_CASE("A version 2.0 int64 .npy keeps values beyond 2^32") {
  auto a = LoadNpy(Fixture("i8_v2.npy"));
  REQUIRE(a.ok());
  CHECK(a->type == NpyType::kInt64);
  CHECK(a->shape == std::vector<std::int64_t>{3});
  CHECK(a->At(0) == -1);
  CHECK(a->At(1) == 1099511627776.0);
  CHECK(a->At(2) == 3);
}

TEST_CASE("Unsupported arrays are refused, naming the file and what is unsupported") {
  auto be = LoadNpy(Fixture("big_endian.npy"));
  REQUIRE_FALSE(be.ok());
  CHECK(Has(be.status(), "big_endian.npy: not a supported .npy array: dtype '>f4' is big-endian"));
  auto f = LoadNpy(Fixture("fortran.npy"));
  REQUIRE_FALSE(f.ok());
  CHECK(Has(f.status(), "Fortran-order arrays are not supported"));
  auto b = LoadNpy(Fixture("bool.npy"));
  REQUIRE_FALSE(b.ok());
  CHECK(Has(b.status(), "dtype '|b1' is not supported (uint8, int32, int64, float16, float32 or float64)"));
}

TEST_CASE("A truncated or lying header is refused before anything is allocated") {
  const std::vector<std::byte> good = Bytes(Fixture("f4_v1.npy"));
  REQUIRE(ParseNpy(good, "good").ok());
  // Every proper prefix is refused.
  for (std::size_t n = 0; n < good.size(); ++n) CHECK_FALSE(ParseNpy(std::span(good).first(n), "cut").ok());
  // A shape far larger than the data: refused from the header alone.
  std::vector<std::byte> lying = good;
  const std::string text(reinterpret_cast<const char*>(lying.data()), lying.size());
  const std::size_t at = text.find("(2, 3)");
  REQUIRE(at != std::string::npos);
  std::memcpy(lying.data() + at, "(9, 9)", 6);
  auto r = ParseNpy(lying, "lying");
  REQUIRE_FALSE(r.ok());
  CHECK(Has(r.status(), "lying: shape (9, 9) of float32 needs 324 bytes of data, the array holds 24"));
  // A shape whose byte count overflows 64 bits.
  std::vector<std::byte> huge(good.begin(), good.begin() + 10);
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }";
  for (char c : dict) huge.push_back(static_cast<std::byte>(c));
  huge[8] = static_cast<std::byte>(dict.size() & 0xff);
  huge[9] = static_cast<std::byte>(dict.size() >> 8);
  auto h = ParseNpy(huge, "huge");
  REQUIRE_FALSE(h.ok());
  CHECK(Has(h.status(), "overflows"));
  // A header length beyond the limit.
  std::vector<std::byte> long_header = good;
  long_header[8] = std::byte{0xff};
  long_header[9] = std::byte{0xff};
  CHECK_FALSE(ParseNpy(long_header, "long").ok());
}

TEST_CASE(
    "An npz in Keras' layout (np.savez, stored): uint8 images scaled by 1/255 as IDX, int64 and uint8 "
    "labels") {
  auto names = ListNpz(Fixture("keras_layout.npz"));
  REQUIRE(names.ok());
  CHECK(*names == std::vector<std::string>{"x_train", "y_train", "x_test", "y_test"});
  auto tt = LoadDatasetSpec("npz:" + Fixture("keras_layout.npz"), "", 1);
  REQUIRE(tt.ok());
  CHECK(tt->train.num_samples == 6);
  CHECK(tt->train.dim == 6);  // 2 x 3 per sample, flattened in C order
  CHECK(tt->train.num_classes == 3);
  CHECK(tt->train.name == "npz:keras_layout.npz");
  // x_train = arange(36).reshape(6, 2, 3) * 7 (uint8 wraps at 256).
  CHECK(tt->train.type == SampleType::kUint8);
  CHECK(tt->train.sample_shape() == std::vector<std::int64_t>{1, 2, 3});  // (N, H, W): one channel
  std::vector<float> x(6);
  for (int i = 0; i < 36; ++i) {
    CHECK(tt->train.pixels[i] == (i * 7) % 256);
    tt->train.CopySample(i / 6, x.data());
    CHECK(x[i % 6] == static_cast<float>((i * 7) % 256) * (1.0f / 255.0f));
  }
  CHECK(tt->train.labels == std::vector<std::int32_t>{0, 1, 2, 0, 1, 2});
  CHECK(tt->test.num_samples == 3);
  CHECK(tt->test.pixels[0] == 255);
  CHECK(tt->test.labels == std::vector<std::int32_t>{2, 1, 0});
}

TEST_CASE("An npz pair (np.savez_compressed, deflated): float16 features exactly, (N, 1) int32 labels") {
  auto tt = LoadDatasetSpec("npz:" + Fixture("train_f16.npz") + ":" + Fixture("test_f16.npz"), "", 1);
  REQUIRE(tt.ok());
  CHECK(tt->train.num_samples == 4);
  CHECK(tt->train.dim == 3);
  for (int i = 0; i < 12; ++i) CHECK(tt->train.features[i] == static_cast<float>(i) / 8 - 0.5f);
  CHECK(tt->train.labels == std::vector<std::int32_t>{1, 0, 1, 0});
  // The largest half, a negative zero and the smallest subnormal half (2^-24).
  CHECK(tt->test.features[0] == 65504.0f);
  CHECK(std::signbit(tt->test.features[1]));
  CHECK(tt->test.features[2] == std::ldexp(1.0f, -24));
}

TEST_CASE("Channels-last images (N, H, W, C) are reordered to (C, H, W) samples") {
  const std::string f = Fixture("channels_last.npz");
  auto tt = LoadDatasetSpec("npz:" + f + ":" + f, "", 1);
  REQUIRE(tt.ok());
  CHECK(tt->train.sample_shape() == std::vector<std::int64_t>{3, 5, 6});
  std::vector<float> x(90);
  for (std::int64_t n = 0; n < 2; ++n) {
    tt->train.CopySample(n, x.data());
    for (std::int64_t j = 0; j < 90; ++j) {
      const std::int64_t c = j / 30, h = (j % 30) / 6, w = j % 6;  // NumPy wrote 100c + 10h + w + n
      CHECK(x[static_cast<std::size_t>(j)] == static_cast<float>(100 * c + 10 * h + w + n) * (1.0f / 255.0f));
    }
  }
}

TEST_CASE("Four .npy files: npy:X:Y:X_TEST:Y_TEST, and test samples of another shape are refused") {
  auto f = [](const char* name) { return Fixture(name); };
  auto tt = LoadDatasetSpec("npy:" + f("pair_x.npy") + ":" + f("pair_y.npy") + ":" + f("pair_x_test.npy") +
                                ":" + f("pair_y_test.npy"),
                            "", 1);
  REQUIRE_MESSAGE(tt.ok(), tt.status().ToString());
  CHECK(tt->train.sample_shape() == std::vector<std::int64_t>{1, 3, 3});
  CHECK(tt->train.pixels[35] == 35);
  CHECK(tt->test.pixels[0] == 255);
  CHECK(tt->train.num_classes == 4);  // the test set's label 3 counts
  CHECK(tt->test.labels == std::vector<std::int32_t>{3, 0});
  // Nine values per sample both, but 1 x 1 x 9 is not 1 x 3 x 3.
  auto wide = LoadDatasetSpec("npy:" + f("pair_x.npy") + ":" + f("pair_y.npy") + ":" + f("pair_x_wide.npy") +
                                  ":" + f("pair_y_test.npy"),
                              "", 1);
  REQUIRE(!wide.ok());
  CHECK(Has(wide.status(),
            "pair_x_wide.npy: test samples have 9 values in shape (1, 1, 9), training samples 9 in "
            "shape (1, 3, 3)"));
  auto three = LoadDatasetSpec("npy:a.npy:b.npy:c.npy", "", 1);
  REQUIRE(!three.ok());
  CHECK(Has(three.status(), "npy: needs four files"));
}

// An array of 4-byte zeros of the given type and shape.
NpyArray Zeros(NpyType type, std::vector<std::int64_t> shape) {
  NpyArray a;
  a.type = type;
  a.shape = std::move(shape);
  std::int64_t n = 1;
  for (std::int64_t d : a.shape) n *= d;
  a.data.assign(static_cast<std::size_t>(n) * 4, std::byte{0});
  return a;
}

TEST_CASE("A missing array or a wrong layout is named with what the archive holds") {
  auto missing = LoadNpzArray(Fixture("train_f16.npz"), "x_train");
  REQUIRE_FALSE(missing.ok());
  CHECK(Has(missing.status(), "has no array 'x_train' (it holds: x, y)"));
  auto layout = LoadDatasetSpec("npz:" + Fixture("train_f16.npz"), "", 1);
  REQUIRE_FALSE(layout.ok());
  CHECK(Has(layout.status(), "holds arrays x, y: npz:FILE needs x_train, y_train, x_test and y_test"));
  auto not_zip = LoadDatasetSpec("npz:" + Fixture("f4_v1.npy"), "", 1);
  REQUIRE_FALSE(not_zip.ok());
  CHECK(Has(not_zip.status(), "not a readable .npz (zip) archive"));
  NpyArray x = Zeros(NpyType::kFloat32, {2, 1}), y = Zeros(NpyType::kFloat32, {2});
  auto float_labels = DatasetFromArrays(x, y, "t", "t");
  REQUIRE_FALSE(float_labels.ok());
  CHECK(Has(float_labels.status(), "y is float32; labels must be integers"));
  y.shape = {3};
  CHECK(Has(DatasetFromArrays(x, y, "t", "t").status(), "is not one label per sample"));
}

TEST_CASE("Labels are class numbers below kMaxClasses: one mistyped label does not build a million outputs") {
  NpyArray x = Zeros(NpyType::kFloat32, {2, 1}), y = Zeros(NpyType::kInt32, {2});
  auto with_label = [&](std::int32_t last) {
    std::memcpy(y.data.data() + 4, &last, 4);
    return DatasetFromArrays(x, y, "t", "t");
  };
  auto widest = with_label(kMaxClasses - 1);
  REQUIRE(widest.ok());
  CHECK(widest->num_classes == kMaxClasses);
  auto typo = with_label(999999);
  REQUIRE_FALSE(typo.ok());
  CHECK(Has(typo.status(), "label 999999 of sample 1 is not a class number in [0, 65535]"));
  CHECK_FALSE(with_label(kMaxClasses).ok());
}

TEST_CASE("A member that claims more bytes than deflate can produce is refused before allocation") {
  // Patch the uncompressed size in both the local header and the central
  // directory of a deflated member to 2^31: more than 1032 x its compressed size.
  std::vector<std::byte> zip = Bytes(Fixture("train_f16.npz"));
  int patched = 0;
  for (std::size_t i = 0; i + 30 < zip.size(); ++i) {
    const auto sig = [&](std::size_t at) {
      return std::to_integer<std::uint32_t>(zip[at]) | std::to_integer<std::uint32_t>(zip[at + 1]) << 8 |
             std::to_integer<std::uint32_t>(zip[at + 2]) << 16 |
             std::to_integer<std::uint32_t>(zip[at + 3]) << 24;
    };
    std::size_t field = 0;
    if (sig(i) == 0x04034b50) field = i + 22;  // local file header: uncompressed size
    if (sig(i) == 0x02014b50) field = i + 24;  // central directory entry
    if (field == 0) continue;
    const std::byte big[4] = {std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0x80}};
    std::memcpy(zip.data() + field, big, 4);
    ++patched;
  }
  REQUIRE(patched >= 2);
  const std::string tmp = std::filesystem::temp_directory_path() / "murmur-npz-lying.npz";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(zip.data()), static_cast<std::streamsize>(zip.size()));
  }
  auto r = LoadNpzArray(tmp, "x");
  std::filesystem::remove(tmp);
  REQUIRE_FALSE(r.ok());
  CHECK(Has(r.status(), "the member claims 2147483648 bytes from"));
}

}  // namespace
}  // namespace murmur::ml

namespace murmur::ml {

TEST_CASE("x of shape (N,) is one value per sample, as (N, 1) is") {
  // Built in memory: x = {7, 9, 200} as uint8 in both layouts, labels 0, 1, 1.
  NpyArray x1, x2, y;
  x1.type = x2.type = NpyType::kUint8;
  x1.shape = {3};
  x2.shape = {3, 1};
  for (std::uint8_t v : {7, 9, 200}) x1.data.push_back(std::byte{v});
  x2.data = x1.data;
  y.type = NpyType::kUint8;
  y.shape = {3};
  for (std::uint8_t v : {0, 1, 1}) y.data.push_back(std::byte{v});
  auto flat = DatasetFromArrays(x1, y, "flat", "flat.npz");
  auto column = DatasetFromArrays(x2, y, "column", "column.npz");
  REQUIRE(flat.ok());
  REQUIRE(column.ok());
  CHECK(flat->dim == 1);
  CHECK(flat->sample_shape() == column->sample_shape());
  for (std::int64_t i = 0; i < 3; ++i) {
    float a = -1, b = -2;
    flat->CopySample(i, &a);
    column->CopySample(i, &b);
    CHECK(a == b);
  }
  // A NaN or infinite feature is refused, naming the sample (CSV refuses them too).
  NpyArray bad;
  bad.type = NpyType::kFloat64;
  bad.shape = {3};
  for (double v : {1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const auto* b = reinterpret_cast<const std::byte*>(&v);
    bad.data.insert(bad.data.end(), b, b + sizeof v);
  }
  auto refused = DatasetFromArrays(bad, y, "bad", "bad.npz");
  REQUIRE_FALSE(refused.ok());
  CHECK(Has(refused.status(), "bad.npz: x holds NaN (sample 1, value 0)"));
  float last = 0;
  flat->CopySample(2, &last);
  CHECK(last == 200.0f * (1.0f / 255.0f));  // as Fashion-MNIST pixels are read
}

}  // namespace murmur::ml
