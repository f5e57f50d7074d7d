// Datasets from NumPy arrays (ml/npy.h): features and labels checked
// against each other and turned into a Dataset, from .npy files or .npz
// archives.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>

#include "ml/npy.h"

namespace murmur::ml {

namespace {

// A label for an error message: whole numbers as such, any value (a uint64
// past int64's range too) without undefined behaviour.
std::string LabelText(double v) {
  if (std::abs(v) < 9e18) return std::to_string(static_cast<std::int64_t>(v));
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

Result<Dataset> DatasetFromArrays(const NpyArray& x, const NpyArray& y, std::string name,
                                  const std::string& what) {
  if (x.shape.empty()) return Status::InvalidArgument(what + ": x is a scalar, not samples");
  const std::int64_t n = x.shape[0];
  std::int64_t dim = 1;
  for (std::size_t i = 1; i < x.shape.size(); ++i) dim *= x.shape[i];
  if (n == 0 || dim == 0)
    return Status::InvalidArgument(what + ": x of shape " + NpyShapeText(x.shape) + " is empty");
  const bool y_column = y.shape.size() == 2 && y.shape[1] == 1;
  if ((y.shape.size() != 1 && !y_column) || y.shape[0] != n)
    return Status::InvalidArgument(what + ": y of shape " + NpyShapeText(y.shape) +
                                   " is not one label per sample of x " + NpyShapeText(x.shape));
  if (y.type == NpyType::kFloat16 || y.type == NpyType::kFloat32 || y.type == NpyType::kFloat64)
    return Status::InvalidArgument(what + ": y is " + NpyTypeName(y.type) + "; labels must be integers");
  Dataset d;
  d.name = std::move(name);
  d.num_samples = n;
  d.dim = dim;
  d.labels.resize(static_cast<std::size_t>(n));
  std::int64_t max_label = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = y.At(i);
    if (v < 0 || v >= kMaxClasses)
      return Status::InvalidArgument(what + ": label " + LabelText(v) + " of sample " + std::to_string(i) +
                                     " is not a class number in [0, " + std::to_string(kMaxClasses - 1) +
                                     "]");
    d.labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
    max_label = std::max<std::int64_t>(max_label, static_cast<std::int64_t>(v));
  }
  d.num_classes = static_cast<int>(max_label + 1);
  // The sample shape, channels first: (N, H, W) images get one channel, and
  // (N, H, W, C) with C of 1, 3 or 4 and larger H and W (channels last, as
  // tensorflow-datasets exports) are reordered to (C, H, W).
  d.shape.assign(x.shape.begin() + 1, x.shape.end());
  bool channels_last = false;
  if (d.shape.empty()) {
    d.shape = {1};  // x of shape (N,): one value per sample
  } else if (d.shape.size() == 2) {
    d.shape.insert(d.shape.begin(), 1);
  } else if (d.shape.size() == 3 && d.shape[2] <= 4 && d.shape[2] != 2 && d.shape[0] > 4 && d.shape[1] > 4) {
    channels_last = true;
    d.shape = {d.shape[2], d.shape[0], d.shape[1]};
  }
  // Source index of the j-th value of a sample in (C, H, W) order.
  const std::int64_t c = d.shape[0], hw = channels_last ? d.shape[1] * d.shape[2] : 0;
  auto source = [&](std::int64_t j) { return channels_last ? (j % hw) * c + j / hw : j; };
  const auto total = static_cast<std::size_t>(n * dim);
  if (x.type == NpyType::kUint8) {
    d.type = SampleType::kUint8;  // kept as bytes; read as pixel / 255, as IDX images (ml/dataset.h)
    d.pixels.resize(total);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < dim; ++j)
        d.pixels[static_cast<std::size_t>(i * dim + j)] =
            std::to_integer<std::uint8_t>(x.data[static_cast<std::size_t>(i * dim + source(j))]);
  } else {
    d.features.resize(total);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < dim; ++j) {
        const double v = x.At(i * dim + source(j));
        // As the CSV reader: a NaN or infinite feature would make every loss NaN.
        if (!std::isfinite(v))
          return Status::InvalidArgument(what + ": x holds " + (std::isnan(v) ? "NaN" : "an infinity") +
                                         " (sample " + std::to_string(i) + ", value " + std::to_string(j) +
                                         "); features must be finite numbers");
        d.features[static_cast<std::size_t>(i * dim + j)] = static_cast<float>(v);
      }
  }
  MURMUR_RETURN_IF_ERROR(d.Validate());
  return d;
}

namespace {

// Checks that the two sets describe the same kind of sample and gives both
// the larger class count.
Status MatchTrainTest(TrainTest& tt, const std::string& what) {
  if (tt.test.sample_shape() != tt.train.sample_shape())
    return Status::InvalidArgument(what + ": test samples have " + std::to_string(tt.test.dim) +
                                   " values in shape " + NpyShapeText(tt.test.sample_shape()) +
                                   ", training samples " + std::to_string(tt.train.dim) + " in shape " +
                                   NpyShapeText(tt.train.sample_shape()));
  tt.train.num_classes = tt.test.num_classes = std::max(tt.train.num_classes, tt.test.num_classes);
  return Status::Ok();
}

}  // namespace

Result<TrainTest> LoadNpyDataset(const std::string& x_train, const std::string& y_train,
                                 const std::string& x_test, const std::string& y_test) {
  const std::string name = "npy:" + std::filesystem::path(x_train).filename().string();
  TrainTest tt;
  MURMUR_ASSIGN_OR_RETURN(NpyArray x, LoadNpy(x_train));
  MURMUR_ASSIGN_OR_RETURN(NpyArray y, LoadNpy(y_train));
  MURMUR_ASSIGN_OR_RETURN(tt.train, DatasetFromArrays(x, y, name, x_train + " and " + y_train));
  MURMUR_ASSIGN_OR_RETURN(x, LoadNpy(x_test));
  MURMUR_ASSIGN_OR_RETURN(y, LoadNpy(y_test));
  MURMUR_ASSIGN_OR_RETURN(tt.test, DatasetFromArrays(x, y, name, x_test + " and " + y_test));
  MURMUR_RETURN_IF_ERROR(MatchTrainTest(tt, x_test));
  return tt;
}

Result<TrainTest> LoadNpzDataset(const std::string& train_path, const std::string& test_path) {
  const std::string name = "npz:" + std::filesystem::path(train_path).filename().string();
  TrainTest tt;
  if (test_path.empty()) {
    MURMUR_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNpz(train_path));
    for (const char* want : {"x_train", "y_train", "x_test", "y_test"}) {
      if (std::find(names.begin(), names.end(), want) == names.end()) {
        return Status::InvalidArgument(train_path + " holds arrays " + NpyNamesText(names) +
                                       ": npz:FILE needs x_train, y_train, x_test and y_test (or give "
                                       "npz:TRAIN.npz:TEST.npz with x and y in each)");
      }
    }
    MURMUR_ASSIGN_OR_RETURN(NpyArray x, LoadNpzArray(train_path, "x_train"));
    MURMUR_ASSIGN_OR_RETURN(NpyArray y, LoadNpzArray(train_path, "y_train"));
    MURMUR_ASSIGN_OR_RETURN(tt.train, DatasetFromArrays(x, y, name, train_path + ":x_train/y_train"));
    MURMUR_ASSIGN_OR_RETURN(x, LoadNpzArray(train_path, "x_test"));
    MURMUR_ASSIGN_OR_RETURN(y, LoadNpzArray(train_path, "y_test"));
    MURMUR_ASSIGN_OR_RETURN(tt.test, DatasetFromArrays(x, y, name, train_path + ":x_test/y_test"));
  } else {
    MURMUR_ASSIGN_OR_RETURN(NpyArray x, LoadNpzArray(train_path, "x"));
    MURMUR_ASSIGN_OR_RETURN(NpyArray y, LoadNpzArray(train_path, "y"));
    MURMUR_ASSIGN_OR_RETURN(tt.train, DatasetFromArrays(x, y, name, train_path));
    MURMUR_ASSIGN_OR_RETURN(x, LoadNpzArray(test_path, "x"));
    MURMUR_ASSIGN_OR_RETURN(y, LoadNpzArray(test_path, "y"));
    MURMUR_ASSIGN_OR_RETURN(tt.test, DatasetFromArrays(x, y, name, test_path));
  }
  MURMUR_RETURN_IF_ERROR(MatchTrainTest(tt, test_path.empty() ? train_path : test_path));
  return tt;
}

}  // namespace murmur::ml
