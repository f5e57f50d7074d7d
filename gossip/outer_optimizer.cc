#include "gossip/outer_optimizer.h"

#include <cmath>

#include "core/reduce.h"

namespace murmur::gossip {

OuterOptimizer::OuterOptimizer(OuterOptions options, const Layout& layout) : options_(options) {
  if (!active()) return;
  start_ = ParamVector(layout);
  if (options_.kind != OuterKind::kSgd) m_ = ParamVector(layout);
  if (options_.kind == OuterKind::kAdam) v_ = ParamVector(layout);
}

void OuterOptimizer::Begin(const ParamVector& x) {
  if (active()) start_.CopyFrom(x);
}

void OuterOptimizer::Apply(ParamVector& mix) {
  const OuterOptions& o = options_;
  if (!active() || (o.kind == OuterKind::kSgd && o.lr == 1.0))
    return;  // x_start - (x_start - x_mix) is x_mix
  // Eigen evaluates each assignment coordinate by coordinate, so every
  // right-hand side reads the mix before it is overwritten.
  auto x = mix.vec();
  const auto start = start_.vec();
  const auto lr = static_cast<float>(o.lr);
  if (o.kind == OuterKind::kSgd) {
    x = start - lr * (start - x);
    return;
  }
  auto m = m_.vec();
  const auto b1 = static_cast<float>(o.momentum);
  if (o.kind == OuterKind::kNesterov) {
    m = b1 * m + (start - x);                 // m = mu m + g
    x = start - lr * ((start - x) + b1 * m);  // x = x_start - lr (g + mu m)
    return;
  }
  t_ += 1;
  const auto c1 = static_cast<float>(1.0 / (1.0 - IntPow(o.momentum, static_cast<long long>(t_))));
  const auto c2 = static_cast<float>(1.0 / (1.0 - IntPow(o.beta2, static_cast<long long>(t_))));
  const auto b2 = static_cast<float>(o.beta2);
  auto v = v_.vec();
  m = b1 * m + (1.0f - b1) * (start - x);
  v = b2 * v + (1.0f - b2) * (start - x).cwiseAbs2();
  // A plain loop, which the compiler vectorizes (correctly rounded sqrtps).
  float* xd = mix.data();
  const float *sd = start_.data(), *md = m_.data(), *vd = v_.data();
  const std::size_t n = mix.size();
  for (std::size_t i = 0; i < n; ++i) xd[i] = sd[i] - lr * ((c1 * md[i]) / (std::sqrt(c2 * vd[i]) + 1e-8f));
}

void OuterOptimizer::ExportState(NodeState& out) const {
  if (!m_.empty()) out.Put("outer/m", m_);
  if (!v_.empty()) out.Put("outer/v", v_);
  if (options_.kind == OuterKind::kAdam) out.scalars["outer/t"] = t_;
}

Status OuterOptimizer::ImportState(const NodeState& in) {
  if (!m_.empty()) MURMUR_RETURN_IF_ERROR(in.Get("outer/m", m_));
  if (!v_.empty()) MURMUR_RETURN_IF_ERROR(in.Get("outer/v", v_));
  if (options_.kind == OuterKind::kAdam) {
    MURMUR_ASSIGN_OR_RETURN(t_, in.Scalar("outer/t"));
    if (!(t_ >= 0)) return Status::InvalidArgument("DiLoCo state: outer/t must be at least 0");
  }
  return Status::Ok();
}

std::size_t OuterOptimizer::state_vectors() const {
  return (active() ? 1 : 0) + (m_.empty() ? 0 : 1) + (v_.empty() ? 0 : 1);
}

}  // namespace murmur::gossip
