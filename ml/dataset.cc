#include "ml/dataset.h"

#include <numeric>

namespace murmur::ml {

Status Dataset::Validate() const {
  if (num_samples < 0 || num_samples > kMaxSamples)
    return Status::InvalidArgument(name + ": " + std::to_string(num_samples) + " samples, limit " +
                                   std::to_string(kMaxSamples));
  if (dim <= 0) return Status::InvalidArgument(name + ": feature dimension " + std::to_string(dim) + " <= 0");
  if (num_classes <= 0)
    return Status::InvalidArgument(name + ": " + std::to_string(num_classes) + " classes");
  if (features.size() != static_cast<std::size_t>(num_samples * dim))
    return Status::InvalidArgument(name + ": " + std::to_string(features.size()) + " feature values for " +
                                   std::to_string(num_samples) + " x " + std::to_string(dim));
  if (labels.size() != static_cast<std::size_t>(num_samples))
    return Status::InvalidArgument(name + ": " + std::to_string(labels.size()) + " labels for " +
                                   std::to_string(num_samples) + " samples");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes)
      return Status::InvalidArgument(name + ": label " + std::to_string(labels[i]) + " of sample " +
                                     std::to_string(i) + " outside [0, " + std::to_string(num_classes) + ")");
  }
  return Status::Ok();
}

std::vector<std::int64_t> LabelCounts(const Dataset& data, std::span<const SampleIndex> indices) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(data.num_classes), 0);
  for (SampleIndex i : indices) ++counts[static_cast<std::size_t>(data.labels[i])];
  return counts;
}

std::vector<SampleIndex> AllIndices(const Dataset& data) {
  std::vector<SampleIndex> all(static_cast<std::size_t>(data.num_samples));
  std::iota(all.begin(), all.end(), SampleIndex{0});
  return all;
}

}  // namespace murmur::ml
