// IDX files (the MNIST format, LeCun et al. 1998) and the Fashion-MNIST loader.
//
// An IDX file is: two zero bytes, a type byte (0x08 = unsigned byte; the only
// type murmur reads), the number of dimensions, each dimension as a big-endian
// uint32, then the elements. Files may be gzip-compressed (read through zlib)
// or plain. Files are untrusted: every inconsistency (bad magic, a dimension
// product that overflows or exceeds the limit, a short read, a corrupt gzip
// stream, trailing bytes, images and labels that disagree, labels out of range)
// returns a Status naming the file and the problem, and nothing is allocated
// beyond what the file actually holds.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // product(dims) elements, row-major
};

struct IdxLimits {
  int max_dims = 4;
  std::int64_t max_elements = std::int64_t{1} << 30;  // 1 GiB of bytes
};

// Reads one IDX file of unsigned bytes (gzip or plain).
Result<IdxArray> ReadIdx(const std::string& path, const IdxLimits& limits = {});

// Builds a Dataset from an images file (n x rows x cols, or n x d) and a labels
// file (n); pixels are scaled to [0, 1] by 1/255. Labels must be < num_classes.
Result<Dataset> LoadIdxDataset(const std::string& images_path, const std::string& labels_path,
                               std::string name, int num_classes);

// The labels file alone (1 dimension) as a Dataset of num_samples labels and
// no features (dim 0): enough to compute a partition (ml/partition.h).
Result<Dataset> LoadIdxLabels(const std::string& labels_path, std::string name, int num_classes);

// Rows `rows` (any order, repeats allowed) of the dataset LoadIdxDataset would
// load, in that order: bit for bit Subset(LoadIdxDataset(...), rows)
// (ml/dataset_spec.h), but the images file is streamed in chunks of about
// 1 MiB and only the rows asked for are kept, so memory is the labels, the
// chunk and the result. The whole file is still read and checked (a
// truncated, corrupt or over-long file fails as in ReadIdx); a row past the
// last image is InvalidArgument naming it.
Result<Dataset> LoadIdxRows(const std::string& images_path, const std::string& labels_path, std::string name,
                            int num_classes, std::span<const SampleIndex> rows);

// Where the Debian package dataset-fashion-mnist installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST (Xiao, Rasul and Vollgraf 2017): 60,000 training and 10,000
// test images of 28 x 28 = 784 pixels, 10 classes, from
// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz in `dir`, or the same
// names without .gz (plain IDX, as torchvision's raw/ folder holds them). A
// missing directory gives NotFound naming it and the Debian package.
Result<TrainTest> LoadFashionMnist(const std::string& dir = kFashionMnistDir);

// The path of the Fashion-MNIST file `stem` (e.g. "train-labels-idx1-ubyte")
// in `dir`: stem.gz, or stem when only the plain file is there.
std::string FashionMnistFile(const std::string& dir, const std::string& stem);

}  // namespace murmur::ml
