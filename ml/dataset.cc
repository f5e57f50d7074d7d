#include "ml/dataset.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/check.h"

namespace murmur::ml {

void Dataset::CopySample(std::int64_t i, float* out) const {
  const auto d = static_cast<std::size_t>(dim);
  const auto at = static_cast<std::size_t>(i) * d;
  if (type == SampleType::kUint8) {
    constexpr float kScale = 1.0f / 255.0f;
    const std::uint8_t* src = pixels.data() + at;
    for (std::size_t j = 0; j < d; ++j) out[j] = static_cast<float>(src[j]) * kScale;
  } else if (type == SampleType::kTokens) {
    const std::uint8_t* src = pixels.data() + at;
    for (std::size_t j = 0; j < d; ++j) out[j] = static_cast<float>(src[j]);
  } else {
    std::memcpy(out, features.data() + at, d * sizeof(float));
  }
}

void Dataset::Gather(std::span<const SampleIndex> rows, float* out) const {
  for (std::size_t k = 0; k < rows.size(); ++k) CopySample(rows[k], out + k * static_cast<std::size_t>(dim));
}

void Dataset::AppendSample(const Dataset& from, std::int64_t i) {
  MURMUR_CHECK(from.type == type && from.dim == dim);
  const auto d = static_cast<std::size_t>(dim);
  const auto at = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(i) * d);
  if (byte_samples())
    pixels.insert(pixels.end(), from.pixels.begin() + at,
                  from.pixels.begin() + at + static_cast<std::ptrdiff_t>(d));
  else
    features.insert(features.end(), from.features.begin() + at,
                    from.features.begin() + at + static_cast<std::ptrdiff_t>(d));
  labels.push_back(from.labels[static_cast<std::size_t>(i)]);
  ++num_samples;
}

std::int64_t Dataset::MemoryBytes() const {
  return static_cast<std::int64_t>(features.owned_bytes() + pixels.owned_bytes() +
                                   labels.size() * sizeof(std::int32_t));
}

Dataset Dataset::EmptyLike() const {
  Dataset out;
  out.name = name;
  out.dim = dim;
  out.shape = shape;
  out.num_classes = num_classes;
  out.type = type;
  return out;
}

Status Dataset::Validate() const {
  if (num_samples < 0 || num_samples > kMaxSamples)
    return Status::InvalidArgument(name + ": " + std::to_string(num_samples) + " samples, limit " +
                                   std::to_string(kMaxSamples));
  if (dim <= 0) return Status::InvalidArgument(name + ": feature dimension " + std::to_string(dim) + " <= 0");
  if (num_classes <= 0 || num_classes > kMaxClasses)
    return Status::InvalidArgument(name + ": " + std::to_string(num_classes) + " classes, limit " +
                                   std::to_string(kMaxClasses));
  if (!shape.empty()) {
    std::int64_t product = 1;
    for (std::int64_t s : shape) {
      if (s <= 0 || s > dim)
        return Status::InvalidArgument(name + ": sample shape has a dimension " + std::to_string(s));
      product *= s;
    }
    if (product != dim)
      return Status::InvalidArgument(name + ": sample shape holds " + std::to_string(product) +
                                     " values, not " + std::to_string(dim));
  }
  const std::size_t values = byte_samples() ? pixels.size() : features.size();
  const std::size_t other = byte_samples() ? features.size() : pixels.size();
  if (values != static_cast<std::size_t>(num_samples * dim) || other != 0)
    return Status::InvalidArgument(name + ": " + std::to_string(values) + " sample values for " +
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
