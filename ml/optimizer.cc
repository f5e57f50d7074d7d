#include "ml/optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/reduce.h"

namespace murmur::ml {

Sgd::Sgd(std::size_t size, SgdOptions options)
    : options_(options), velocity_(Eigen::VectorXf::Zero(static_cast<Eigen::Index>(size))) {}

void Sgd::Step(ParamVector& params, const ParamVector& grad, double lr) {
  MURMUR_CHECK(params.size() == grad.size() && static_cast<Eigen::Index>(params.size()) == velocity_.size());
  ++steps_;
  VectorMap x = params.vec();
  ConstVectorMap g = grad.vec();
  const float flr = static_cast<float>(lr), wd = static_cast<float>(options_.weight_decay);
  const float mu = static_cast<float>(options_.momentum);
  if (mu == 0) {
    x -= flr * (g + wd * x);
    return;
  }
  velocity_ = mu * velocity_ + g + wd * x;
  if (options_.nesterov) {
    x -= flr * (g + wd * x + mu * velocity_);
  } else {
    x -= flr * velocity_;
  }
}

void Sgd::Reset() {
  velocity_.setZero();
  steps_ = 0;
}

Adam::Adam(std::size_t size, AdamOptions options)
    : options_(options),
      m_(Eigen::VectorXf::Zero(static_cast<Eigen::Index>(size))),
      v_(Eigen::VectorXf::Zero(static_cast<Eigen::Index>(size))) {}

void AdamUpdate(std::span<float> x_span, std::span<const float> g_span, std::span<float> m_span,
                std::span<float> v_span, std::int64_t steps, double lr, const AdamOptions& options) {
  MURMUR_CHECK(g_span.size() == x_span.size() && m_span.size() == x_span.size() &&
               v_span.size() == x_span.size());
  using Map = Eigen::Map<Eigen::VectorXf>;
  // 1 - beta in double: in float, 1 - 0.999f is off by 1.3e-5 relative.
  const float b1 = static_cast<float>(options.beta1), b2 = static_cast<float>(options.beta2);
  const float a1 = static_cast<float>(1 - options.beta1), a2 = static_cast<float>(1 - options.beta2);
  const float wd = static_cast<float>(options.weight_decay);
  // Bias corrections: m_hat = m / c1 and sqrt(v_hat) = sqrt(v) / c2, exactly as in Algorithm 1
  // (the powers by repeated squaring: the same double on every machine).
  const float c1 = static_cast<float>(1 - IntPow(options.beta1, steps));
  const float c2 = static_cast<float>(std::sqrt(1 - IntPow(options.beta2, steps)));
  const float eps = static_cast<float>(options.epsilon);
  const float step = static_cast<float>(lr) / c1;
  // Element-wise, in blocks that stay in the L1 cache: the four passes over
  // x, m and v then read and write memory once (a model of 1.66M parameters
  // is 26 MB of state), and every element gets the same operations as over
  // the whole vectors at once.
  constexpr std::size_t kBlock = 2048;
  for (std::size_t at = 0; at < x_span.size(); at += kBlock) {
    const auto n = static_cast<Eigen::Index>(std::min(kBlock, x_span.size() - at));
    Map x(x_span.data() + at, n), m(m_span.data() + at, n), v(v_span.data() + at, n);
    Eigen::Map<const Eigen::VectorXf> g(g_span.data() + at, n);
    if (options.decoupled) {
      x *= 1.0f - static_cast<float>(lr) * wd;
      m = b1 * m + a1 * g;
      v = b2 * v + a2 * g.cwiseAbs2();
    } else {
      m = b1 * m + a1 * (g + wd * x);
      v = b2 * v + a2 * (g + wd * x).cwiseAbs2();
    }
    // A plain loop: Eigen evaluates this line element by element without
    // its approximate square root (EIGEN_FAST_MATH=0), and the compiler
    // vectorizes the loop with correctly rounded sqrtps (-fno-math-errno).
    float* xd = x.data();
    const float *md = m.data(), *vd = v.data();
    for (Eigen::Index i = 0; i < n; ++i) xd[i] -= step * md[i] / (std::sqrt(vd[i]) / c2 + eps);
  }
}

void Adam::Step(ParamVector& params, const ParamVector& grad, double lr) {
  MURMUR_CHECK(params.size() == grad.size() && static_cast<Eigen::Index>(params.size()) == m_.size());
  ++steps_;
  AdamUpdate(params.span(), grad.span(), {m_.data(), static_cast<std::size_t>(m_.size())},
             {v_.data(), static_cast<std::size_t>(v_.size())}, steps_, lr, options_);
}

void Adam::Reset() {
  m_.setZero();
  v_.setZero();
  steps_ = 0;
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(std::string_view name, std::size_t size, double momentum,
                                                 double weight_decay) {
  if (!(weight_decay >= 0))
    return Status::InvalidArgument("weight decay " + std::to_string(weight_decay) + " < 0");
  if (!(momentum >= 0 && momentum < 1))
    return Status::InvalidArgument("momentum " + std::to_string(momentum) + " outside [0, 1)");
  if (name == "sgd")
    return std::unique_ptr<Optimizer>(std::make_unique<Sgd>(size, SgdOptions{0, false, weight_decay}));
  if (name == "momentum")
    return std::unique_ptr<Optimizer>(std::make_unique<Sgd>(size, SgdOptions{momentum, false, weight_decay}));
  if (name == "nesterov")
    return std::unique_ptr<Optimizer>(std::make_unique<Sgd>(size, SgdOptions{momentum, true, weight_decay}));
  if (name == "adam" || name == "adamw") {
    AdamOptions o;
    o.weight_decay = weight_decay;
    o.decoupled = name == "adamw";
    return std::unique_ptr<Optimizer>(std::make_unique<Adam>(size, o));
  }
  return Status::InvalidArgument("optimizer '" + std::string(name) +
                                 "' unknown (expected sgd, momentum, nesterov, adam or adamw)");
}

}  // namespace murmur::ml
