#include "compression/compressors.h"

#include <algorithm>
#include <cmath>

#include "compression/select.h"

namespace murmur::compression {

namespace {
void CheckShape(std::span<const float> delta, const Layout& layout) {
  MURMUR_CHECK(layout.num_tensors() == 0 || layout.total_size() == delta.size());
  MURMUR_CHECK(delta.size() <= 0xFFFFFFFFu);
}

std::span<float> SizedState(std::vector<float>& v, std::size_t n) {
  if (v.size() != n) v.assign(n, 0.0f);
  return v;
}
}  // namespace

std::shared_ptr<const Update> DenseCompressor::Compress(std::span<const float> delta, const Layout& layout,
                                                        CompressorState& state, Rng& rng) const {
  CheckShape(delta, layout);
  std::span<float> residual =
      error_feedback() ? SizedState(state.residual, delta.size()) : std::span<float>();
  ++state.round;
  return std::make_shared<const Update>(
      Update::Dense(delta.size(), PackValues(delta, residual, coding_, rng.NextU64())));
}

std::size_t SparseCompressor::KFor(std::size_t n) const {
  if (options_.count > 0) return std::min(options_.count, n);
  auto k = static_cast<std::size_t>(std::llround(options_.fraction * static_cast<double>(n)));
  return std::min(n, std::max<std::size_t>(k, n > 0 ? 1 : 0));
}

std::shared_ptr<const Update> SparseCompressor::Compress(std::span<const float> delta, const Layout& layout,
                                                         CompressorState& state, Rng& rng) const {
  CheckShape(delta, layout);
  const std::size_t n = delta.size();
  const SparseOptions& o = options_;
  // DGC (Lin et al. 2018, Alg. 1 lines 7-8): u = m u + x, then accumulate u.
  std::span<const float> x = delta;
  if (o.dgc_momentum > 0) {
    std::span<float> u = SizedState(state.momentum, n);
    for (std::size_t i = 0; i < n; ++i) u[i] = o.dgc_momentum * u[i] + delta[i];
    x = u;
  }
  std::span<float> r = o.error_feedback ? SizedState(state.residual, n) : std::span<float>();
  const bool ef = !r.empty();
  const float* acc = ef ? r.data() : x.data();  // what is selected from, after selection

  std::vector<std::uint32_t> idx;
  RandomKKey key{rng.NextU64(), state.round, state.node};
  switch (o.selection) {
    case Selection::kTopK:
    case Selection::kTopKApprox: {
      auto select = [&](std::span<float> rs, std::span<const float> xs, std::size_t k,
                        std::vector<std::uint32_t>& out) {
        if (o.selection == Selection::kTopK) {
          if (ef)
            TopKExactAccumulate(rs, xs, k, out);
          else
            TopKExact(xs, k, out);
        } else {
          if (ef)
            TopKApproxAccumulate(rs, xs, k, rng, out);
          else
            TopKApprox(xs, k, rng, out);
        }
      };
      if (!o.per_tensor || layout.num_tensors() <= 1) {
        select(r, x, KFor(n), idx);
        break;
      }
      std::vector<std::uint32_t> part;
      for (const TensorSpec& t : layout.tensors()) {
        select(ef ? r.subspan(t.offset, t.size) : r, x.subspan(t.offset, t.size), KFor(t.size), part);
        for (std::uint32_t i : part) idx.push_back(static_cast<std::uint32_t>(t.offset + i));
      }
      break;
    }
    case Selection::kThreshold:
      if (ef)
        ThresholdSelectAccumulate(r, x, o.threshold, idx);
      else
        ThresholdSelect(x, o.threshold, idx);
      break;
    case Selection::kRandomK:
      if (ef)
        for (std::size_t i = 0; i < n; ++i) r[i] += x[i];
      idx = RandomKIndices(n, KFor(n), key);
      break;
  }

  std::vector<float> vals(idx.size());
  const float gain =
      o.selection == Selection::kRandomK && o.unbiased && !idx.empty() ? float(n) / float(idx.size()) : 1.0f;
  for (std::size_t j = 0; j < idx.size(); ++j) vals[j] = gain * acc[idx[j]];
  PackedValues pv = PackValues(vals, {}, o.values, rng.NextU64());
  // e = acc - sent, touching only the selected entries: the rest of the
  // residual already holds acc from the selecting pass.
  if (ef) {
    if (o.values.type == ValueType::kF32 && gain == 1.0f) {
      for (std::uint32_t i : idx) r[i] = 0.0f;
    } else {
      for (std::size_t j = 0; j < idx.size(); ++j) r[idx[j]] -= pv.Get(j);
    }
  }
  if (o.dgc_momentum > 0)  // momentum factor masking (Lin et al. 2018, Sec. 3.2)
    for (std::uint32_t i : idx) state.momentum[i] = 0.0f;
  ++state.round;
  if (o.selection == Selection::kRandomK)
    return std::make_shared<const Update>(Update::RandomK(n, key, std::move(pv)));
  return std::make_shared<const Update>(Update::Sparse(n, std::move(idx), std::move(pv)));
}

}  // namespace murmur::compression
