#include "ml/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace murmur::ml {
namespace {

// A gzip or plain file read through zlib (gzread passes plain files through).
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {}
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  bool is_open() const { return file_ != nullptr; }

  // Reads up to `n` bytes; returns how many were read, or a Status for a
  // corrupt or truncated gzip stream.
  Result<std::size_t> Read(std::uint8_t* out, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      unsigned want = static_cast<unsigned>(std::min<std::size_t>(n - total, 1u << 20));
      int got = gzread(file_, out + total, want);
      int errnum = Z_OK;
      const char* msg = gzerror(file_, &errnum);
      if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END))
        return Status::DataLoss(path_ + ": corrupt or truncated gzip data (" + msg + ")");
      if (got == 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

 private:
  std::string path_;
  gzFile file_;
};

std::uint32_t BigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

Result<IdxArray> ReadIdx(const std::string& path, const IdxLimits& limits) {
  if (!std::filesystem::exists(path)) return Status::NotFound(path + ": no such file");
  GzReader in(path);
  if (!in.is_open()) return Status::NotFound(path + ": cannot open");
  std::uint8_t header[4];
  MURMUR_ASSIGN_OR_RETURN(std::size_t got, in.Read(header, 4));
  if (got < 4) return Status::DataLoss(path + ": file ends inside the 4-byte IDX header");
  if (header[0] != 0 || header[1] != 0) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), ": bad IDX magic %02x %02x (expected 00 00)", header[0], header[1]);
    return Status::InvalidArgument(path + buf);
  }
  if (header[2] != 0x08) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), ": IDX element type 0x%02x not supported (only 0x08, unsigned byte)",
                  header[2]);
    return Status::InvalidArgument(path + buf);
  }
  int ndims = header[3];
  if (ndims < 1 || ndims > limits.max_dims)
    return Status::InvalidArgument(path + ": " + std::to_string(ndims) + " IDX dimensions, expected 1 to " +
                                   std::to_string(limits.max_dims));
  IdxArray out;
  std::int64_t elements = 1;
  for (int i = 0; i < ndims; ++i) {
    std::uint8_t b[4];
    MURMUR_ASSIGN_OR_RETURN(got, in.Read(b, 4));
    if (got < 4) return Status::DataLoss(path + ": file ends inside dimension " + std::to_string(i));
    std::int64_t d = BigEndian32(b);
    out.dims.push_back(d);
    // d < 2^32 and elements <= max_elements < 2^62 / 2^32 keep this exact.
    elements *= d;
    if (elements > limits.max_elements)
      return Status::ResourceExhausted(path + ": IDX dimensions multiply past the limit of " +
                                       std::to_string(limits.max_elements) + " elements");
  }
  // Grow with the data actually read, never from the header's claim alone.
  constexpr std::size_t kStep = 1 << 22;
  std::size_t want = static_cast<std::size_t>(elements);
  while (out.data.size() < want) {
    std::size_t before = out.data.size();
    std::size_t step = std::min(kStep, want - before);
    out.data.resize(before + step);
    MURMUR_ASSIGN_OR_RETURN(got, in.Read(out.data.data() + before, step));
    if (got < step)
      return Status::DataLoss(path + ": short read: " + std::to_string(before + got) + " of " +
                              std::to_string(want) + " data bytes");
  }
  std::uint8_t extra;
  MURMUR_ASSIGN_OR_RETURN(got, in.Read(&extra, 1));
  if (got != 0)
    return Status::DataLoss(path + ": trailing bytes after " + std::to_string(want) + " elements");
  return out;
}

Result<Dataset> LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                               std::string name, int num_classes) {
  MURMUR_ASSIGN_OR_RETURN(IdxArray images, ReadIdx(images_path));
  MURMUR_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path));
  if (images.dims.size() < 2)
    return Status::InvalidArgument(images_path + ": images need at least 2 dimensions, found " +
                                   std::to_string(images.dims.size()));
  if (labels.dims.size() != 1)
    return Status::InvalidArgument(labels_path + ": labels need 1 dimension, found " +
                                   std::to_string(labels.dims.size()));
  std::int64_t n = images.dims[0];
  if (labels.dims[0] != n)
    return Status::InvalidArgument(labels_path + ": " + std::to_string(labels.dims[0]) + " labels but " +
                                   images_path + " has " + std::to_string(n) + " images");
  if (n == 0) return Status::InvalidArgument(images_path + ": no images");
  Dataset ds;
  ds.name = std::move(name);
  ds.num_samples = n;
  ds.dim = static_cast<std::int64_t>(images.data.size()) / n;
  ds.num_classes = num_classes;
  if (ds.dim == 0) return Status::InvalidArgument(images_path + ": images have no pixels");
  ds.labels.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    int y = labels.data[static_cast<std::size_t>(i)];
    if (y >= num_classes)
      return Status::InvalidArgument(labels_path + ": label " + std::to_string(y) + " of sample " +
                                     std::to_string(i) + " outside [0, " + std::to_string(num_classes) + ")");
    ds.labels[static_cast<std::size_t>(i)] = y;
  }
  ds.features.resize(images.data.size());
  constexpr float kScale = 1.0f / 255.0f;
  for (std::size_t i = 0; i < images.data.size(); ++i) ds.features[i] = images.data[i] * kScale;
  return ds;
}

Result<TrainTest> LoadFashionMnist(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    return Status::NotFound("Fashion-MNIST directory " + dir +
                            " not found (install the Debian package dataset-fashion-mnist, or pass "
                            "the directory holding train-images-idx3-ubyte.gz)");
  TrainTest tt;
  MURMUR_ASSIGN_OR_RETURN(
      tt.train, LoadIdxDataset(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz",
                               "fashion-mnist/train", 10));
  MURMUR_ASSIGN_OR_RETURN(
      tt.test, LoadIdxDataset(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz",
                              "fashion-mnist/test", 10));
  return tt;
}

}  // namespace murmur::ml
