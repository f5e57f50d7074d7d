// DecentralizedSgdNode's mix of a round (gossip/decentralized_sgd.h): the
// models or CHOCO differences received, admitted and weighed, mixed into the
// node's own, with a robust rule when the spec names one.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/check.h"
#include "gossip/decentralized_sgd.h"
#include "robust/rules.h"

namespace murmur::gossip {

namespace {
// acc = own x + sum_k weights[k] inputs[k], in one fused pass over cache-sized
// blocks that reads each input once and writes the result once. An input
// with codes[k] set is int8 codes instead (inputs[k] unused), added as
// Update::AddTo adds them: (weights[k] s) v, s its scale block's scale. With
// `d2`, each block of each input is also judged (gossip/admission.h) while
// it is in cache: (*d2)[k] and *own2 get the squared distances and own norm.
void MixDense(float own, const ParamVector& x, const std::vector<const float*>& inputs,
              const std::vector<float>& weights, ParamVector& acc, std::vector<double>* d2 = nullptr,
              double* own2 = nullptr, const std::vector<const compression::PackedValues*>* codes = nullptr) {
  constexpr std::size_t kBlock = kAdmissionBlock;
  const std::size_t n = x.size();
  if (d2 != nullptr) {
    d2->assign(inputs.size(), 0.0);
    *own2 = 0;
  }
  std::vector<float> decoded(codes != nullptr ? kBlock : 0);
  for (std::size_t b = 0; b < n; b += kBlock) {
    const std::size_t len = std::min(kBlock, n - b);
    Eigen::Map<Eigen::VectorXf> out(acc.data() + b, static_cast<Eigen::Index>(len));
    out = own * Eigen::Map<const Eigen::VectorXf>(x.data() + b, static_cast<Eigen::Index>(len));
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const float* in = inputs[k] + (inputs[k] != nullptr ? b : 0);
      if (codes != nullptr && (*codes)[k] != nullptr) {
        // int8: its values (s v, for the judging) and its addends, scale block by scale block.
        const compression::PackedValues& v = *(*codes)[k];
        const std::size_t per_scale = v.coding.block;
        for (std::size_t lo = b; lo < b + len;) {
          const std::size_t block = lo / per_scale, hi = std::min(b + len, (block + 1) * per_scale);
          const float s = v.scales[block], ws = weights[k] * s;
          for (std::size_t i = lo; i < hi; ++i) {
            const auto code = static_cast<float>(static_cast<std::int8_t>(v.payload[i]));
            decoded[i - b] = s * code;
            acc[i] += ws * code;
          }
          lo = hi;
        }
        in = decoded.data();
      } else {
        out += weights[k] * Eigen::Map<const Eigen::VectorXf>(in, static_cast<Eigen::Index>(len));
      }
      if (d2 != nullptr) AddBlockDistances(in, x.data() + b, len, (*d2)[k], k == 0 ? own2 : nullptr);
    }
  }
}

// Makes `v` a buffer no message shares, so it may be written: keeps it when
// the node is its only holder, else replaces it by a fresh one (its values
// are then unspecified; callers overwrite them).
void Exclusive(std::shared_ptr<ParamVector>& v) {
  if (v.use_count() == 1) {
    // The last other holder released it with a release decrement; this
    // fence orders its reads before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    return;
  }
  v = std::make_shared<ParamVector>(v->layout());
}
}  // namespace

void DecentralizedSgdNode::Mix(const std::vector<Received>& got, const std::vector<float>& weights) {
  const float gamma = static_cast<float>(options_.gamma);
  options_.local.Save(*x_);  // ATC: the trained values; CTA: the round's start (none kept: no-op)
  if (choco_) {
    for (std::size_t k = 0; k < got.size(); ++k) Absorb(got[k].from, got[k].msg->update(), weights[k]);
    // x += gamma (s - x^)
    x_->vec() += gamma * (s_.vec() - x_hat_.vec());
  } else {
    MixFull(got, weights);
  }
  // x_ is this node's alone here (MixFull swapped in its own buffer). The
  // outer step (DiLoCo, adapt-then-combine only), then the node's own tensors.
  outer_.Apply(*x_);
  options_.local.Restore(*x_);
  if (options_.order == MixOrder::kCombineThenAdapt) x_->vec() += delta_.vec();
}

void DecentralizedSgdNode::MixFull(const std::vector<Received>& got, std::vector<float> weights) {
  const float gamma = static_cast<float>(options_.gamma);
  const MixingOptions& rule = options_.mixing;
  const bool judge = admission_.plausibility() > 0;
  // x may be shared with this round's messages, so the result goes to acc,
  // which then becomes x.
  Exclusive(acc_);
  const ParamVector& x = *x_;
  ParamVector& acc = *acc_;
  std::vector<const float*> dense;
  std::vector<std::size_t> index;  // of each entry of dense (and weights) in got
  for (std::size_t k = 0; k < got.size(); ++k) {
    dense.push_back(got[k].msg->update().dense_f32());
    index.push_back(k);
  }
  bool all_dense = std::find(dense.begin(), dense.end(), nullptr) == dense.end();
  // Judged and mixed: int8 models are mixed from their codes, as Update::AddTo adds them.
  std::vector<const compression::PackedValues*> codes(got.size(), nullptr);
  if ((judge || rule.rule != MixingRule::kMean) && !all_dense) {
    // Judging and the robust rules look at every coordinate of every model:
    // decode the value codings once, into the buffers of an earlier round
    // (no fresh pages to fault in).
    decoded_.resize(got.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (dense[k] != nullptr) continue;
      const compression::Update& u = got[k].msg->update();
      Status st;
      if (rule.rule == MixingRule::kMean && u.values().coding.type == compression::ValueType::kInt8) {
        codes[k] = &u.values();
        continue;
      } else if (rule.rule == MixingRule::kMean) {
        // fp16, bf16: decoded exactly, so W_ij v is what AddTo adds.
        decoded_[k].resize(x.size());
        u.values().DecodeTo(decoded_[k]);
      } else {
        decoded_[k].assign(x.size(), 0.0f);  // the robust rules' values: 0 + v, as they always were
        st = u.AddTo(decoded_[k]);
      }
      MURMUR_CHECK_MSG(st.ok(), st.ToString());
      dense[k] = decoded_[k].data();
    }
    all_dense = true;
  }
  // Leaves out the models judged out: their weight stays on this node's own
  // model, as a neighbour's that missed the round. Returns whether any was.
  auto drop_judged_out = [&](const std::vector<std::optional<Refusal>>& verdicts) {
    std::size_t kept = 0;
    for (std::size_t k = 0; k < dense.size(); ++k) {
      if (verdicts[k]) {
        judged_out_.emplace_back(got[index[k]].from, *verdicts[k]);
        continue;
      }
      dense[kept] = dense[k];
      codes[kept] = codes[k];
      weights[kept] = weights[k];
      index[kept] = index[k];
      ++kept;
    }
    const bool dropped = kept < dense.size();
    dense.resize(kept);
    codes.resize(kept);
    weights.resize(kept);
    index.resize(kept);
    return dropped;
  };
  auto own_weight = [&] {
    // 1 - the sum of received weights: a neighbour that missed the round
    // leaves its weight on the node itself.
    float own = 1.0f;
    for (float wij : weights) own -= wij;
    return own;
  };
  std::vector<std::optional<Refusal>> verdicts(got.size());
  if (rule.rule == MixingRule::kMean && judge) {
    // Mixed and judged in one pass; mixed again without what it refused (rare).
    std::vector<double> d2;
    double own2 = 0;
    MixDense(own_weight(), x, dense, weights, acc, &d2, &own2, &codes);
    for (std::size_t k = 0; k < got.size(); ++k) verdicts[k] = admission_.Verdict(d2[k], own2);
    if (drop_judged_out(verdicts)) MixDense(own_weight(), x, dense, weights, acc, nullptr, nullptr, &codes);
  } else {
    if (judge) {
      for (std::size_t k = 0; k < got.size(); ++k)
        verdicts[k] = admission_.Judge({dense[k], x.size()}, x.span());
      drop_judged_out(verdicts);
    }
    if (rule.rule == MixingRule::kMedian || rule.rule == MixingRule::kTrimmedMean) {
      MixNeighbourhood(rule, x.span(), dense, acc.span());
    } else {
      if (rule.rule == MixingRule::kClipped) {
        // ClippedGossip as reweighting (gossip/robust_mixing.h): W_ij -> W_ij min(1, tau_i / d_j).
        std::vector<double> distances(dense.size());
        for (std::size_t k = 0; k < dense.size(); ++k) {
          distances[k] = std::sqrt(robust::SquaredDistance({dense[k], x.size()}, x.span()));
        }
        ClipWeights(distances, ClipRadius(rule, distances, weights), weights);
      }
      const float own = own_weight();
      if (all_dense) {
        MixDense(own, x, dense, weights, acc);
      } else {
        acc.vec() = own * x.vec();
        for (std::size_t k = 0; k < index.size(); ++k) {
          Status st = got[index[k]].msg->update().AddTo(acc.span(), weights[k]);
          MURMUR_CHECK_MSG(st.ok(), st.ToString());
        }
      }
    }
  }
  if (gamma != 1.0f) acc.vec() = x.vec() + gamma * (acc.vec() - x.vec());
  std::swap(x_, acc_);  // x <- acc without a pass over memory
}

}  // namespace murmur::gossip
