// Dataset: labelled samples as a row-major float matrix, shared read-only.
//
// A Dataset holds n samples of d features (row-major n x d; images scaled to
// [0, 1]) and one int32 label in [0, num_classes) per sample. Nodes, batches
// and partitions refer to samples by index (std::uint32_t) and never copy the
// rows: a simulation of 100,000 nodes shares one Dataset. Readers live in
// ml/idx.h, ml/csv.h and ml/synthetic.h.
//
// Thread-safety: immutable after construction; safe to read from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/param_vector.h"
#include "core/status.h"

namespace murmur::ml {

// Index of a sample inside a Dataset. 32 bits halve the memory of partitions.
using SampleIndex = std::uint32_t;

// Largest dataset accepted by the readers: the indices must fit SampleIndex.
inline constexpr std::int64_t kMaxSamples = 0xFFFFFFFFll;

struct Dataset {
  std::string name;
  std::int64_t num_samples = 0;
  std::int64_t dim = 0;
  int num_classes = 0;
  std::vector<float> features;  // num_samples * dim, row-major
  std::vector<std::int32_t> labels;

  const float* row(std::int64_t i) const { return features.data() + i * dim; }
  // All samples as an n x d matrix view.
  ConstMatrixMap matrix() const { return ConstMatrixMap(features.data(), num_samples, dim); }

  // OK when the sizes agree and every label is in [0, num_classes).
  Status Validate() const;
};

// The training and test sets of a benchmark.
struct TrainTest {
  Dataset train;
  Dataset test;
};

// Number of samples of each class among `indices`; num_classes counts.
// REQUIRES: every index < data.num_samples.
std::vector<std::int64_t> LabelCounts(const Dataset& data, std::span<const SampleIndex> indices);

// 0, 1, ..., data.num_samples - 1.
std::vector<SampleIndex> AllIndices(const Dataset& data);

}  // namespace murmur::ml
