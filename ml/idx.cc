#include "ml/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <numeric>

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

// The header of an IDX file of unsigned bytes: its dimensions and their product.
struct IdxHeader {
  std::vector<std::int64_t> dims;
  std::int64_t elements = 1;
};

Result<IdxHeader> ReadIdxHeader(GzReader& in, const std::string& path, const IdxLimits& limits) {
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
  IdxHeader out;
  for (int i = 0; i < ndims; ++i) {
    std::uint8_t b[4];
    MURMUR_ASSIGN_OR_RETURN(got, in.Read(b, 4));
    if (got < 4) return Status::DataLoss(path + ": file ends inside dimension " + std::to_string(i));
    std::int64_t d = BigEndian32(b);
    out.dims.push_back(d);
    // d < 2^32 and elements <= max_elements < 2^62 / 2^32 keep this exact.
    out.elements *= d;
    if (out.elements > limits.max_elements)
      return Status::ResourceExhausted(path + ": IDX dimensions multiply past the limit of " +
                                       std::to_string(limits.max_elements) + " elements");
  }
  return out;
}

Status CheckNoTrailingBytes(GzReader& in, const std::string& path, std::int64_t elements) {
  std::uint8_t extra;
  MURMUR_ASSIGN_OR_RETURN(std::size_t got, in.Read(&extra, 1));
  if (got != 0)
    return Status::DataLoss(path + ": trailing bytes after " + std::to_string(elements) + " elements");
  return Status::Ok();
}

Result<std::unique_ptr<GzReader>> OpenIdx(const std::string& path) {
  if (!std::filesystem::exists(path)) return Status::NotFound(path + ": no such file");
  auto in = std::make_unique<GzReader>(path);
  if (!in->is_open()) return Status::NotFound(path + ": cannot open");
  return in;
}

}  // namespace

Result<IdxArray> ReadIdx(const std::string& path, const IdxLimits& limits) {
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<GzReader> file, OpenIdx(path));
  GzReader& in = *file;
  MURMUR_ASSIGN_OR_RETURN(IdxHeader header, ReadIdxHeader(in, path, limits));
  IdxArray out;
  out.dims = std::move(header.dims);
  const std::int64_t elements = header.elements;
  std::size_t got = 0;
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
  MURMUR_RETURN_IF_ERROR(CheckNoTrailingBytes(in, path, elements));
  return out;
}

Result<Dataset> LoadIdxLabels(const std::string& labels_path, std::string name, int num_classes) {
  MURMUR_ASSIGN_OR_RETURN(IdxArray labels, ReadIdx(labels_path));
  if (labels.dims.size() != 1)
    return Status::InvalidArgument(labels_path + ": labels need 1 dimension, found " +
                                   std::to_string(labels.dims.size()));
  Dataset ds;
  ds.name = std::move(name);
  ds.num_samples = labels.dims[0];
  ds.num_classes = num_classes;
  ds.labels.resize(labels.data.size());
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    int y = labels.data[i];
    if (y >= num_classes)
      return Status::InvalidArgument(labels_path + ": label " + std::to_string(y) + " of sample " +
                                     std::to_string(i) + " outside [0, " + std::to_string(num_classes) + ")");
    ds.labels[i] = y;
  }
  return ds;
}

namespace {

// Rows `*rows` (all when null) of the images file, with their labels from
// `labels` (LoadIdxLabels of `labels_path`).
Result<Dataset> LoadRows(const std::string& images_path, const std::string& labels_path, Dataset labels,
                         const std::span<const SampleIndex>* rows) {
  MURMUR_ASSIGN_OR_RETURN(std::unique_ptr<GzReader> file, OpenIdx(images_path));
  MURMUR_ASSIGN_OR_RETURN(IdxHeader header, ReadIdxHeader(*file, images_path, IdxLimits{}));
  if (header.dims.size() < 2)
    return Status::InvalidArgument(images_path + ": images need at least 2 dimensions, found " +
                                   std::to_string(header.dims.size()));
  const std::int64_t n = header.dims[0];
  if (labels.num_samples != n)
    return Status::InvalidArgument(labels_path + ": " + std::to_string(labels.num_samples) + " labels but " +
                                   images_path + " has " + std::to_string(n) + " images");
  if (n == 0) return Status::InvalidArgument(images_path + ": no images");
  const std::int64_t dim = header.elements / n;
  if (dim == 0) return Status::InvalidArgument(images_path + ": images have no pixels");
  const auto d = static_cast<std::size_t>(dim);

  // Which rows to keep (all when `rows` is null), visited in file order.
  std::vector<SampleIndex> all;
  if (rows == nullptr) {
    all = AllIndices(labels);
  } else {
    for (SampleIndex r : *rows) {
      if (r >= n)
        return Status::InvalidArgument(images_path + ": row " + std::to_string(r) +
                                       " asked for, the file has " + std::to_string(n) + " images");
    }
  }
  const std::span<const SampleIndex> want = rows == nullptr ? std::span<const SampleIndex>(all) : *rows;
  std::vector<std::size_t> order(want.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return want[a] < want[b]; });

  Dataset out;
  out.name = std::move(labels.name);
  out.num_samples = static_cast<std::int64_t>(want.size());
  out.dim = dim;
  out.shape.assign(header.dims.begin() + 1, header.dims.end());
  if (out.shape.size() == 2) out.shape.insert(out.shape.begin(), 1);  // a grey image: one channel
  out.num_classes = labels.num_classes;
  out.type = SampleType::kUint8;
  out.labels.resize(want.size());
  out.pixels.resize(want.size() * d);
  // Stream the images in chunks of whole rows (about 1 MiB): memory is the
  // chunk and the rows kept, never the whole file.
  const std::int64_t chunk_rows = std::max<std::int64_t>(1, (std::int64_t{1} << 20) / dim);
  std::vector<std::uint8_t> chunk(static_cast<std::size_t>(std::min(chunk_rows, n)) * d);
  std::size_t next = 0;  // into order
  for (std::int64_t first = 0; first < n; first += chunk_rows) {
    const std::int64_t count = std::min(chunk_rows, n - first);
    const std::size_t bytes = static_cast<std::size_t>(count) * d;
    MURMUR_ASSIGN_OR_RETURN(std::size_t got, file->Read(chunk.data(), bytes));
    if (got < bytes)
      return Status::DataLoss(images_path +
                              ": short read: " + std::to_string(static_cast<std::size_t>(first) * d + got) +
                              " of " + std::to_string(header.elements) + " data bytes");
    for (; next < order.size() && want[order[next]] < first + count; ++next) {
      const std::size_t k = order[next];
      const std::uint8_t* src = chunk.data() + static_cast<std::size_t>(want[k] - first) * d;
      std::memcpy(out.pixels.data() + k * d, src, d);
      out.labels[k] = labels.labels[want[k]];
    }
  }
  MURMUR_RETURN_IF_ERROR(CheckNoTrailingBytes(*file, images_path, header.elements));
  return out;
}

}  // namespace

Result<Dataset> LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                               std::string name, int num_classes) {
  MURMUR_ASSIGN_OR_RETURN(Dataset ds, LoadIdxLabels(labels_path, std::move(name), num_classes));
  return LoadRows(images_path, labels_path, std::move(ds), nullptr);
}

Result<Dataset> LoadIdxRows(const std::string& images_path, const std::string& labels_path, std::string name,
                            int num_classes, std::span<const SampleIndex> rows) {
  MURMUR_ASSIGN_OR_RETURN(Dataset labels, LoadIdxLabels(labels_path, std::move(name), num_classes));
  return LoadRows(images_path, labels_path, std::move(labels), &rows);
}

std::string FashionMnistFile(const std::string& dir, const std::string& stem) {
  const std::string gz = dir + "/" + stem + ".gz", plain = dir + "/" + stem;
  std::error_code ec;
  return !std::filesystem::exists(gz, ec) && std::filesystem::exists(plain, ec) ? plain : gz;
}

Result<TrainTest> LoadFashionMnist(const std::string& dir) {
  if (!std::filesystem::is_directory(dir))
    return Status::NotFound("Fashion-MNIST directory " + dir +
                            " not found (install the Debian package dataset-fashion-mnist, or pass "
                            "the directory holding train-images-idx3-ubyte.gz)");
  TrainTest tt;
  MURMUR_ASSIGN_OR_RETURN(
      tt.train, LoadIdxDataset(FashionMnistFile(dir, "train-images-idx3-ubyte"),
                               FashionMnistFile(dir, "train-labels-idx1-ubyte"), "fashion-mnist/train", 10));
  MURMUR_ASSIGN_OR_RETURN(
      tt.test, LoadIdxDataset(FashionMnistFile(dir, "t10k-images-idx3-ubyte"),
                              FashionMnistFile(dir, "t10k-labels-idx1-ubyte"), "fashion-mnist/test", 10));
  return tt;
}

}  // namespace murmur::ml
