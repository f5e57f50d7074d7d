#include "federated/secagg_graph.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace murmur::federated {

namespace {

// Uniform indices from the ChaCha20 words of the graph seed.
class GraphCoins {
 public:
  explicit GraphCoins(const crypto::MaskSeed& seed) : seed_(seed) {}
  // Uniform in [0, n) by rejection of the top partial range. REQUIRES: 0 < n < 2^32.
  std::uint32_t Below(std::uint32_t n) {
    const std::uint32_t limit = static_cast<std::uint32_t>((std::uint64_t{1} << 32) / n * n - 1);
    for (;;) {
      std::uint32_t w = 0;
      crypto::ChaCha20Words(seed_, kNonce, word_++, std::span<std::uint32_t>(&w, 1));
      if (w <= limit) return w % n;
    }
  }

 private:
  static constexpr crypto::ChaChaNonce kNonce = {'g', 'r', 'a', 'p', 'h', 0, 0, 0, 0, 0, 0, 0};
  const crypto::MaskSeed& seed_;
  std::uint64_t word_ = 0;
};

}  // namespace

std::size_t NeighbourCount(std::size_t n, std::size_t k) {
  if (n == 0) return 0;
  return (k == 0 || k >= n - 1) ? n - 1 : k;
}

std::size_t SecAggThreshold(std::size_t k, double fraction) {
  MURMUR_CHECK(k >= 1 && fraction >= 0 && fraction <= 1);
  const auto by_fraction = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(k) - 1e-9));
  return std::min(k, std::max(k / 2 + 1, by_fraction));
}

std::vector<NodeId> SecAggNeighbours(const crypto::MaskSeed& graph_seed, std::span<const NodeId> participants,
                                     NodeId self, std::size_t k) {
  const std::size_t n = participants.size();
  MURMUR_CHECK(k % 2 == 0);
  const std::size_t kk = NeighbourCount(n, k);
  std::vector<NodeId> out;
  if (kk == n - 1) {
    for (NodeId p : participants) {
      if (p != self) out.push_back(p);
    }
    return out;
  }
  std::vector<NodeId> ring(participants.begin(), participants.end());
  GraphCoins coins(graph_seed);
  for (std::size_t i = n; i > 1; --i)
    std::swap(ring[i - 1], ring[coins.Below(static_cast<std::uint32_t>(i))]);
  const auto at = std::find(ring.begin(), ring.end(), self);
  MURMUR_CHECK(at != ring.end());
  const auto pos = static_cast<std::size_t>(at - ring.begin());
  for (std::size_t d = 1; d <= kk / 2; ++d) {
    out.push_back(ring[(pos + d) % n]);
    out.push_back(ring[(pos + n - d) % n]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace murmur::federated
