// Dataset specs: the strings that name training data on the command line and
// in scenario files.
//
//   "fashion-mnist"          the IDX files in `data_dir` (Debian: dataset-fashion-mnist)
//   "csv:TRAIN.csv"          label column + features; 20% held out for testing
//   "csv:TRAIN.csv:TEST.csv" explicit test file
//   "synthetic:blobs"        Gaussian blobs, 20,000 train / 5,000 test (dim 20, 10 classes)
//   "synthetic:teacher"      labels of a random linear teacher, same sizes
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "ml/dataset.h"

namespace murmur::ml {

// Loads the train and test sets named by `spec`. InvalidArgument names an
// unknown spec; reader errors name the file. `seed` drives synthetic data and
// the CSV hold-out split.
Result<TrainTest> LoadDatasetSpec(const std::string& spec, const std::string& data_dir, std::uint64_t seed);

// Rows `indices` of `data` as a new dataset (same name, dim and classes).
Dataset Subset(const Dataset& data, std::span<const SampleIndex> indices);

}  // namespace murmur::ml
