// Data of label-flipping attackers (a data-poisoning attack on federated
// learning): each attacker trains honestly, but on its samples with every
// label y replaced by C - 1 - y (Fang, Cao, Jia and Gong, "Local Model
// Poisoning Attacks to Byzantine-Robust Federated Learning", USENIX Security
// 2020, Sec. 5.1: "l -> L - l - 1"; Tolpegin et al., ESORICS 2020, flip one
// class into another instead).
//
// The shared training set stays as it is; the attackers' samples are copied
// into one compact Dataset with the flipped labels (20% attackers of
// Fashion-MNIST: 12,000 rows, 38 MB), and each attacker gets its indices
// into that copy.
//
// Thread-safety: built once, then read-only.
#pragma once

#include <vector>

#include "ml/dataset.h"
#include "ml/partition.h"

namespace murmur::sim {

struct FlippedData {
  ml::Dataset data;                                 // the attackers' samples, labels flipped
  std::vector<std::vector<ml::SampleIndex>> parts;  // by client: indices into `data` (empty if honest)
};

// y -> C - 1 - y. REQUIRES: 0 <= y < num_classes.
inline std::int32_t FlippedLabel(std::int32_t y, int num_classes) { return num_classes - 1 - y; }

// REQUIRES: attacker.size() <= partition.num_nodes().
FlippedData FlipAttackerLabels(const ml::Dataset& train, const ml::Partition& partition,
                               const std::vector<bool>& attacker);

}  // namespace murmur::sim
