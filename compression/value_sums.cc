// The sums of values.h in their fixed, blocked order (PairwiseSum, AbsSum,
// SquareSum): the same bits on every machine and at every SIMD level.
#include <cmath>
#include <vector>

#include "compression/values.h"

namespace murmur::compression {

double PairwiseSum(std::span<double> s) {
  std::size_t count = s.size();
  if (count == 0) return 0;
  while (count > 1) {
    for (std::size_t i = 0; i < count / 2; ++i) s[i] = s[2 * i] + s[2 * i + 1];
    if (count % 2 == 1) s[count / 2] = s[count - 1];
    count = (count + 1) / 2;
  }
  return s[0];
}

namespace {
// The blocked order of values.h: per block, kReduceLanes lanes of type Lane
// each adding term(x) of its elements in order, the lanes added in order in
// double, the blocks added by PairwiseSum.
template <typename Lane, typename Term>
double BlockedSum(std::span<const float> a, Term term) {
  const std::size_t n = a.size();
  std::vector<double> blocks((n + kReduceBlock - 1) / kReduceBlock);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const float* p = a.data() + b * kReduceBlock;
    const std::size_t m = std::min(kReduceBlock, n - b * kReduceBlock);
    Lane lane[kReduceLanes] = {};
    std::size_t j = 0;
    for (; j + kReduceLanes <= m; j += kReduceLanes)
      for (std::size_t l = 0; l < kReduceLanes; ++l) lane[l] += term(p[j + l]);
    for (std::size_t l = 0; j + l < m; ++l) lane[l] += term(p[j + l]);
    double total = 0;
    for (Lane v : lane) total += v;
    blocks[b] = total;
  }
  return PairwiseSum(blocks);
}
}  // namespace

double AbsSum(std::span<const float> a) {
  return BlockedSum<float>(a, [](float v) { return std::fabs(v); });
}

double SquareSum(std::span<const float> a) {
  return BlockedSum<double>(a, [](float v) { return static_cast<double>(v) * v; });
}

}  // namespace murmur::compression
