// LocalTensors: the tensors of a model that each node keeps to itself while
// the rest is averaged, as FedBN (Li et al., ICLR 2021) keeps BatchNorm's
// running statistics local. A spec's `model_buffers: "local"` makes them
// the Layout's tensors named "buffer:..." (a TorchScript module's float
// buffers, docs/torchscript.md); the algorithms that average models (D-PSGD,
// CHOCO, DiLoCo, the ring all-reduce, federated clients) Save the node's own
// values before they mix and Restore them after, so mixing, outer steps and
// the global model never reach them.
//
// Thread-safety: one node owns it.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/param_vector.h"

namespace murmur {

class LocalTensors {
 public:
  LocalTensors() = default;
  // The ranges of `layout`'s tensors whose names start with `prefix`.
  LocalTensors(const Layout& layout, const std::string& prefix);

  bool empty() const { return ranges_.empty(); }
  // Values covered, across every range.
  std::size_t size() const { return saved_.size(); }
  const std::vector<std::pair<std::size_t, std::size_t>>& ranges() const { return ranges_; }
  // Keeps x's values in the ranges (none: a no-op). REQUIRES: x has the layout's size.
  void Save(const ParamVector& x);
  // Writes the kept values back into x's ranges.
  void Restore(ParamVector& x) const;

 private:
  std::vector<std::pair<std::size_t, std::size_t>> ranges_;  // [begin, end)
  std::vector<float> saved_;
};

// The prefix of a TorchScript model's buffer tensors (ml/torch/torchscript_model.h).
inline constexpr const char* kBufferTensorPrefix = "buffer:";

}  // namespace murmur
