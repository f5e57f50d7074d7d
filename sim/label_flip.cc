#include "sim/label_flip.h"

#include <algorithm>

namespace murmur::sim {

FlippedData FlipAttackerLabels(const ml::Dataset& train, const ml::Partition& partition,
                               const std::vector<bool>& attacker) {
  FlippedData f;
  f.data.name = train.name + " (labels flipped)";
  f.data.dim = train.dim;
  f.data.num_classes = train.num_classes;
  f.parts.resize(attacker.size());
  for (std::size_t i = 0; i < attacker.size(); ++i) {
    if (!attacker[i]) continue;
    for (ml::SampleIndex s : partition.node(i)) {
      f.parts[i].push_back(static_cast<ml::SampleIndex>(f.data.labels.size()));
      const float* row = train.row(s);
      f.data.features.insert(f.data.features.end(), row, row + train.dim);
      f.data.labels.push_back(FlippedLabel(train.labels[s], train.num_classes));
    }
  }
  f.data.num_samples = static_cast<std::int64_t>(f.data.labels.size());
  return f;
}

}  // namespace murmur::sim
