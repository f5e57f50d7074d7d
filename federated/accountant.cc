#include "federated/accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace murmur::federated {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double LogAddExp(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

std::vector<int> DefaultOrders() {
  std::vector<int> o;
  for (int a = 2; a <= 64; ++a) o.push_back(a);
  for (int a : {80, 96, 128, 192, 256}) o.push_back(a);
  return o;
}

}  // namespace

RdpAccountant::RdpAccountant() : RdpAccountant(DefaultOrders()) {}

RdpAccountant::RdpAccountant(std::vector<int> orders)
    : orders_(std::move(orders)), rdp_(orders_.size(), 0.0) {
  for (int a : orders_) MURMUR_CHECK(a >= 2);
}

double RdpAccountant::SubsampledGaussianRdp(double q, double noise_multiplier, int alpha) {
  MURMUR_CHECK(alpha >= 2 && q >= 0 && q <= 1 && noise_multiplier >= 0);
  if (q == 0) return 0;
  if (noise_multiplier == 0) return kInf;
  const double a = alpha, s2 = noise_multiplier * noise_multiplier;
  if (q == 1) return a / (2 * s2);
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  double log_a = -kInf;
  for (int i = 0; i <= alpha; ++i) {
    const double log_binom = std::lgamma(a + 1) - std::lgamma(i + 1.0) - std::lgamma(a - i + 1);
    const double term =
        log_binom + i * log_q + (a - i) * log_1mq + (static_cast<double>(i) * i - i) / (2 * s2);
    log_a = LogAddExp(log_a, term);
  }
  return log_a / (a - 1);
}

double RdpAccountant::EpsilonFromRdp(const std::vector<int>& orders, const std::vector<double>& rdp,
                                     double delta, int* best_order) {
  MURMUR_CHECK(orders.size() == rdp.size() && delta > 0 && delta < 1);
  // Nothing composed yet: nothing was released, so nothing was spent (the
  // conversion below is not tight at zero RDP: it would give log(1/delta)/(a-1) > 0).
  if (std::all_of(rdp.begin(), rdp.end(), [](double x) { return x == 0; })) {
    if (best_order != nullptr) *best_order = 0;
    return 0;
  }
  double best = kInf;
  int arg = 0;
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    if (!std::isfinite(rdp[k])) continue;
    const double eps = rdp[k] + std::log1p(-1 / a) - (std::log(delta) + std::log(a)) / (a - 1);
    if (eps < best) {
      best = eps;
      arg = orders[k];
    }
  }
  if (best_order != nullptr) *best_order = arg;
  return std::max(0.0, best);
}

Status RdpAccountant::Restore(std::vector<double> rdp) {
  if (rdp.size() != orders_.size())
    return Status::InvalidArgument("privacy accountant state of " + std::to_string(rdp.size()) +
                                   " RDP values (one per order: " + std::to_string(orders_.size()) + ")");
  for (double x : rdp)
    if (!std::isfinite(x) || x < 0)
      return Status::InvalidArgument(
          "privacy accountant state holds an RDP value that is not finite and >= 0");
  rdp_ = std::move(rdp);
  return Status::Ok();
}

void RdpAccountant::Compose(double q, double noise_multiplier, std::uint64_t steps) {
  for (std::size_t k = 0; k < orders_.size(); ++k) {
    rdp_[k] += static_cast<double>(steps) * SubsampledGaussianRdp(q, noise_multiplier, orders_[k]);
  }
}

double RdpAccountant::Epsilon(double delta, int* best_order) const {
  return EpsilonFromRdp(orders_, rdp_, delta, best_order);
}

}  // namespace murmur::federated
