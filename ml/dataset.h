// Dataset: labelled samples, shared read-only.
//
// A Dataset holds n samples of d values each (row-major n x d) and one int32
// label in [0, num_classes) per sample. A sample has a shape (channels,
// height, width for an image; {d} for a feature vector) whose product is d,
// which convolutional models read. Samples are kept in the type of their
// file: 8-bit images stay 8-bit (a quarter of the memory of floats) and are
// converted, pixel / 255, when a batch is gathered (Gather); byte-level text
// (ml/text.h) is kept as bytes too and gathered as token ids 0..255; other
// values are kept as floats. Nodes, batches and partitions refer to samples by index
// (std::uint32_t) and never copy them: a simulation of 100,000 nodes shares
// one Dataset. Readers live in ml/idx.h, ml/npy.h, ml/csv.h and
// ml/synthetic.h.
//
// Thread-safety: immutable after construction; safe to read from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "ml/sample_values.h"

namespace murmur::ml {

// Index of a sample inside a Dataset. 32 bits halve the memory of partitions.
using SampleIndex = std::uint32_t;

// Largest dataset accepted by the readers: the indices must fit SampleIndex.
inline constexpr std::int64_t kMaxSamples = 0xFFFFFFFFll;
// Labels are class numbers 0 .. kMaxClasses - 1. The readers take the
// number of classes from the largest label, so the cap keeps one mistyped
// label (999999) from building a model with a million outputs.
inline constexpr int kMaxClasses = 65536;

// How a Dataset stores its sample values.
enum class SampleType {
  kFloat32,  // in `features`, as they are
  kUint8,    // in `pixels`, read as pixel / 255 (images)
  kTokens,   // in `pixels`, read as the byte's value 0..255 (byte-level text)
};

struct Dataset {
  std::string name;
  std::int64_t num_samples = 0;
  std::int64_t dim = 0;
  // The shape of one sample, outermost first, whose product is dim; empty
  // means a flat vector {dim}. Read it through sample_shape().
  std::vector<std::int64_t> shape;
  int num_classes = 0;
  SampleType type = SampleType::kFloat32;
  SampleValues<float> features;       // kFloat32: num_samples * dim, row-major
  SampleValues<std::uint8_t> pixels;  // kUint8: num_samples * dim, row-major
  std::vector<std::int32_t> labels;

  // Whether the sample values are bytes (`pixels`) rather than floats.
  bool byte_samples() const { return type != SampleType::kFloat32; }

  std::vector<std::int64_t> sample_shape() const {
    return shape.empty() ? std::vector<std::int64_t>{dim} : shape;
  }

  // Writes the dim values of sample i, as floats, to out[0, dim).
  void CopySample(std::int64_t i, float* out) const;
  // Writes the samples `rows` one after another (rows.size() x dim floats).
  void Gather(std::span<const SampleIndex> rows, float* out) const;
  // Appends sample i of `from`, and its label; `from` must have this
  // Dataset's type, dim and shape.
  void AppendSample(const Dataset& from, std::int64_t i);
  // Bytes held by the samples and labels (a view's samples are not this
  // process's: sim/ranks/host_data.h).
  std::int64_t MemoryBytes() const;
  // A Dataset with this one's name, shape, type and classes and no samples.
  Dataset EmptyLike() const;

  // OK when the sizes agree, the shape's product is dim, and every label is in
  // [0, num_classes).
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
