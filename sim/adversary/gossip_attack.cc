#include "sim/adversary/gossip_attack.h"

#include <cmath>

#include "core/check.h"
#include "core/rng.h"

namespace murmur::sim {

std::vector<bool> ChooseByzantine(NodeId n, double fraction, std::uint64_t seed) {
  std::vector<bool> byzantine(n, false);
  const auto count = static_cast<std::size_t>(std::llround(fraction * n));
  std::vector<NodeId> ids(n);
  for (NodeId i = 0; i < n; ++i) ids[i] = i;
  // The same draw as the federated attackers of sim/run/federated_run.cc.
  Rng rng(seed, n, RngPurpose::kAttack);
  rng.Shuffle(std::span<NodeId>(ids));
  for (std::size_t k = 0; k < count && k < n; ++k) byzantine[ids[k]] = true;
  return byzantine;
}

void CraftAttack(const AttackParams& params, const AttackView& view, std::span<float> out) {
  MURMUR_CHECK(params.kind != GossipAttack::kNone);
  const std::size_t d = out.size();
  if (params.kind == GossipAttack::kSignFlip) {
    MURMUR_CHECK(!view.good.empty());
    for (std::size_t j = 0; j < d; ++j) {
      double m = 0;
      for (const auto& x : view.good) m += x[j];
      out[j] = static_cast<float>(-params.scale * m / static_cast<double>(view.good.size()));
    }
    return;
  }
  if (params.kind == GossipAttack::kDissensus) {
    MURMUR_CHECK(view.byzantine_weight > 0 && view.good.size() == view.good_weights.size());
    const double c = params.scale / view.byzantine_weight;
    for (std::size_t j = 0; j < d; ++j) {
      double pull = 0;
      for (std::size_t k = 0; k < view.good.size(); ++k)
        pull += view.good_weights[k] * (view.good[k][j] - view.target[j]);
      out[j] = static_cast<float>(view.target[j] - c * pull);
    }
    return;
  }
  // ALIE and IPM: statistics of the target's honest neighbourhood, target included.
  const double k = static_cast<double>(view.good.size() + 1);
  for (std::size_t j = 0; j < d; ++j) {
    double mean = view.target[j];
    for (const auto& x : view.good) mean += x[j];
    mean /= k;
    if (params.kind == GossipAttack::kIpm) {
      out[j] = static_cast<float>(-params.scale * mean);
      continue;
    }
    double var = (view.target[j] - mean) * (view.target[j] - mean);
    for (const auto& x : view.good) var += (x[j] - mean) * (x[j] - mean);
    out[j] = static_cast<float>(mean - params.alie_z * std::sqrt(var / k));
  }
}

}  // namespace murmur::sim
