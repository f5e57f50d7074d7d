#include "sim/adversary/label_flip.h"

#include <algorithm>

namespace murmur::sim {

FlippedData FlipAttackerLabels(const ml::Dataset& train, const ml::Partition& partition,
                               const std::vector<bool>& attacker) {
  FlippedData f;
  f.data = train.EmptyLike();
  f.data.name = train.name + " (labels flipped)";
  f.parts.resize(attacker.size());
  for (std::size_t i = 0; i < attacker.size(); ++i) {
    if (!attacker[i]) continue;
    for (ml::SampleIndex s : partition.node(i)) {
      f.parts[i].push_back(static_cast<ml::SampleIndex>(f.data.labels.size()));
      f.data.AppendSample(train, s);
      f.data.labels.back() = FlippedLabel(train.labels[s], train.num_classes);
    }
  }
  return f;
}

}  // namespace murmur::sim
