// NumPy arrays: the .npy format (NumPy Enhancement Proposal 1, versions 1.0,
// 2.0 and 3.0) and .npz archives of them (a zip file, members stored or
// deflated, read with libzip), as torchvision, tensorflow-datasets and Keras
// users export their data (`np.save`, `np.savez`, `np.savez_compressed`).
//
// Supported: little-endian (or one-byte) uint8, int32, int64, float16,
// float32 and float64 in C order. Everything else (big-endian, Fortran order, object
// arrays, other dtypes) is refused with an error naming the file, the array
// and what is unsupported. Every size is checked against the bytes the file
// holds before anything is allocated: a truncated or lying header costs
// nothing (fuzz/npy_fuzz.cc).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

enum class NpyType { kUint8, kInt32, kInt64, kFloat16, kFloat32, kFloat64 };

// "uint8", "int32", ...
const char* NpyTypeName(NpyType type);
// Bytes of one element: 1, 4, 8, 2, 4.
std::size_t NpyItemSize(NpyType type);
// A shape as NumPy writes it, for messages: "(60000, 28, 28)", "(5,)".
std::string NpyShapeText(const std::vector<std::int64_t>& shape);
// Array names for messages: "x, y" ("none" for no names).
std::string NpyNamesText(const std::vector<std::string>& names);

struct NpyArray {
  NpyType type = NpyType::kUint8;
  std::vector<std::int64_t> shape;  // () for a scalar
  std::vector<std::byte> data;      // count() elements, little-endian, C order

  std::int64_t count() const;
  // Element i as a double (float16 converted exactly).
  // REQUIRES: i < count().
  double At(std::int64_t i) const;
};

// Headers longer than this are refused (NumPy writes under 100 bytes for any
// realistic shape; version 2 allows 4 GiB).
inline constexpr std::size_t kMaxNpyHeaderBytes = 64 * 1024;

// Parses a whole .npy image. `what` names it in errors ("FILE" or "FILE:ARRAY").
Result<NpyArray> ParseNpy(std::span<const std::byte> bytes, const std::string& what);

// The header of a .npy image: its type and shape, and the header's length.
// `total_bytes` is the size of the whole image, which must be exactly the
// header plus count * itemsize.
struct NpyHeader {
  NpyType type = NpyType::kUint8;
  std::vector<std::int64_t> shape;
  std::size_t header_bytes = 0;  // offset of the data
  std::size_t data_bytes = 0;
};
Result<NpyHeader> ParseNpyHeader(std::span<const std::byte> prefix, std::size_t total_bytes,
                                 const std::string& what);

// Reads PATH (a .npy file).
Result<NpyArray> LoadNpy(const std::string& path);

// Names of the arrays in the .npz at PATH (members "NAME.npy"), in archive order.
Result<std::vector<std::string>> ListNpz(const std::string& path);

// Reads array NAME of the .npz at PATH. NotFound names the arrays it holds.
Result<NpyArray> LoadNpzArray(const std::string& path, const std::string& name);

// A dataset from features x (N, ...: each sample flattened in C order) and
// labels y (N,) of an integer type. uint8 features stay bytes, read as
// pixel / 255 (as IDX images are); others are kept as floats. The sample shape
// is x's shape without N, channels first: (N, H, W) gives (1, H, W), and
// (N, H, W, C) with C in {1, 3, 4} and H, W > 4 (channels last) is reordered
// to (C, H, W). num_classes is max label + 1. `what` names the source in
// errors.
Result<Dataset> DatasetFromArrays(const NpyArray& x, const NpyArray& y, std::string name,
                                  const std::string& what);

// The dataset spec "npy:X_TRAIN:Y_TRAIN:X_TEST:Y_TEST" (ml/dataset_spec.h):
// four .npy files, each pair as DatasetFromArrays reads it.
Result<TrainTest> LoadNpyDataset(const std::string& x_train, const std::string& y_train,
                                 const std::string& x_test, const std::string& y_test);

// The dataset spec "npz:FILE[:TEST_FILE]" (ml/dataset_spec.h): with one file,
// arrays x_train, y_train, x_test, y_test (Keras' layout); with two, arrays
// x and y in each.
Result<TrainTest> LoadNpzDataset(const std::string& train_path, const std::string& test_path);

}  // namespace murmur::ml
